"""Console forms; they parse with the same pure functions as the REST API and the management commands."""

from django import forms
from django.core.exceptions import ValidationError

from controlplane.access.tokens import MAX_EXPIRY_DAYS
from controlplane.controller.election import PREFERRED, UNCLEAN
from controlplane.core.errors import KafkaApiError
from controlplane.groups.reset import ResetKind, Scope, parse_spec, parse_topic_arguments


class ResetOffsetsForm(forms.Form):
    spec = forms.ChoiceField(label="Reset to", choices=[(k.value, k.value) for k in ResetKind])
    value = forms.CharField(required=False, help_text="to-datetime: 2024-01-31T12:00:00; by-duration: PT1H; "
                                                      "shift-by: -10; to-offset: 42")
    topics = forms.CharField(required=False, label="Topics",
                             help_text="blank: every partition the group has offsets for; else topics or "
                                       "topic:0,1, separated by spaces")

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        named = data["topics"].split()
        try:
            data["scope"] = parse_topic_arguments(named) if named else Scope(all_topics=True)
            data["reset_spec"] = parse_spec(data["spec"], data["value"] or None)
        except KafkaApiError as e:
            raise ValidationError(e.message) from None
        return data


class ElectLeadersForm(forms.Form):
    election_type = forms.ChoiceField(choices=[(PREFERRED, "preferred"), (UNCLEAN, "unclean (admin)")])
    topic = forms.CharField(required=False, help_text="blank: every partition")


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100)
    expires_in_days = forms.IntegerField(required=False, min_value=1, max_value=MAX_EXPIRY_DAYS,
                                         label="Expires in (days)", help_text="blank: never")
