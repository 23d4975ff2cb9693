"""The console's Alerts page: webhook endpoints (add, edit, send-test, delete), lag thresholds, silences, open
incidents and the delivery log (with retry). Every change is a POST-only `ActionView` needing
`manage_alerts`, audited once."""

import base64
import json
from datetime import timedelta

from django import forms
from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views import View

from controlplane.access import actions
from controlplane.access.console import ActionView, ViewerRequiredMixin
from controlplane.alerts import outbox
from controlplane.alerts.changes import audit_state
from controlplane.alerts.cluster_alerts import BROKER_DOWN
from controlplane.alerts.incidents import LAG, OpenIncident, open_incidents
from controlplane.alerts.models import Delivery, LagThreshold, Silence, WebhookEndpoint
from monitoring.notifier.payloads import TemplateError
from monitoring.notifier.signing import new_secret

DELIVERY_LOG_ROWS = 50


class JsonObjectField(forms.CharField):
    """A JSON object typed as text (shown back as JSON, not as a Python dict)."""

    def prepare_value(self, value):
        return json.dumps(value) if isinstance(value, dict) else value

    def to_python(self, value):
        text = super().to_python(value).strip()
        try:
            return json.loads(text) if text else {}
        except ValueError as exc:
            raise forms.ValidationError(f"not JSON: {exc}") from None


class EndpointForm(forms.ModelForm):
    url = forms.URLField(max_length=2000, assume_scheme="https", label="URL")
    link = forms.URLField(max_length=2000, assume_scheme="https", required=False,
                          help_text="link put in chat messages")
    headers = JsonObjectField(required=False, help_text='{"Authorization": "Bearer …"}')
    extras = JsonObjectField(required=False, help_text="Burrow's extras for templates")

    class Meta:
        model = WebhookEndpoint
        fields = ("name", "url", "preset", "routing_key", "link", "method", "headers", "template_open",
                  "template_close", "extras", "group_allowlist", "group_denylist", "notify_threshold",
                  "reminder_interval_s", "timeout_s")
        widgets = {"template_open": forms.Textarea(attrs={"rows": 3}),
                   "template_close": forms.Textarea(attrs={"rows": 3})}
        labels = {"reminder_interval_s": "Reminder interval (s)", "timeout_s": "Timeout (s)"}


class EndpointEditForm(EndpointForm):
    """An existing endpoint's settings, the same validation as adding one; the signing secret stays unless
    `new_secret` replaces it or `generate_secret` makes a fresh one (shown once)."""

    new_secret = forms.CharField(max_length=100, required=False, strip=True,
                                 help_text="a whsec_… secret to sign with from now on; empty keeps the current one")
    generate_secret = forms.BooleanField(required=False, label="Generate a new secret",
                                         help_text="replace the secret with a fresh one, shown once")

    class Meta(EndpointForm.Meta):
        fields = (*EndpointForm.Meta.fields, "enabled")

    def clean_new_secret(self) -> str:
        secret = self.cleaned_data["new_secret"]
        if secret and (not secret.startswith("whsec_") or not _decodes(secret)):
            raise forms.ValidationError("a Standard Webhooks secret: whsec_ and base64")
        return secret

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("new_secret") and cleaned.get("generate_secret"):
            raise forms.ValidationError("paste a new secret or generate one, not both")
        return cleaned

    @property
    def replaces_secret(self) -> bool:
        return bool(self.cleaned_data.get("new_secret") or self.cleaned_data.get("generate_secret"))

    def save(self, commit: bool = True) -> WebhookEndpoint:
        endpoint = super().save(commit=False)
        if self.cleaned_data.get("new_secret"):
            endpoint.secret = self.cleaned_data["new_secret"]
        elif self.cleaned_data.get("generate_secret"):
            endpoint.secret = new_secret()
        if endpoint.enabled:
            endpoint.disabled_reason = ""
        if commit:
            endpoint.save()
        return endpoint


def _decodes(secret: str) -> bool:
    try:
        return bool(base64.b64decode(secret.removeprefix("whsec_"), validate=True))
    except ValueError:
        return False


class ThresholdForm(forms.ModelForm):
    class Meta:
        model = LagThreshold
        fields = ("group", "topic", "max_lag", "max_lag_seconds", "comment")


class SilenceForm(forms.Form):
    group = forms.CharField(max_length=300, help_text="shell glob, e.g. batch-*")
    minutes = forms.IntegerField(min_value=1, max_value=60 * 24 * 30, initial=60)
    comment = forms.CharField(max_length=300, required=False)


def render_alerts(request, status: int = 200, created: WebhookEndpoint | None = None, rotated: bool = False,
                  **forms_):
    """The page; `created`: an endpoint just added (or, `rotated`, given a new secret), whose secret is shown
    this once."""
    context = {
        "created": created,
        "rotated": rotated,
        "endpoints": WebhookEndpoint.objects.all(),
        "thresholds": LagThreshold.objects.all(),
        "silences": Silence.objects.filter(ends_at__gt=timezone.now()),
        "incidents": [(i, incident_link(i)) for i in open_incidents()],
        "deliveries": Delivery.objects.select_related("endpoint")[:DELIVERY_LOG_ROWS],
        "endpoint_form": forms_.get("endpoint_form") or EndpointForm(),
        "threshold_form": forms_.get("threshold_form") or ThresholdForm(),
        "silence_form": forms_.get("silence_form") or SilenceForm(),
    }
    return render(request, "console/alerts.html", context, status=status)


def incident_link(incident: OpenIncident) -> str:
    """The console page of what an incident is about: the group, the brokers, or the partition's topic."""
    if incident.source == LAG:
        return reverse("console:group", args=[incident.subject])
    if incident.source == BROKER_DOWN:
        return reverse("console:brokers")
    return reverse("console:topic", args=[incident.subject.rsplit("-", 1)[0]])


class AlertsView(ViewerRequiredMixin, View):
    def get(self, request):
        return render_alerts(request)


class AlertsAction(ActionView):
    action = actions.MANAGE_ALERTS
    kind = ""

    def audit_target(self) -> str:
        return f"{self.kind}:{self.kwargs.get('pk', 'new')}"


class EndpointCreateView(AlertsAction):
    kind = "webhook-endpoint"

    def perform(self, request):
        form = EndpointForm(request.POST)
        if not form.is_valid():
            return render_alerts(request, status=400, endpoint_form=form)
        with self.audited_change() as change:
            endpoint = form.save()
            change.after = audit_state(endpoint)
        return render_alerts(request, created=endpoint)


def render_endpoint(request, endpoint: WebhookEndpoint, form: EndpointEditForm | None = None, status: int = 200):
    return render(request, "console/alert_endpoint.html",
                  {"endpoint": endpoint, "form": form or EndpointEditForm(instance=endpoint)}, status=status)


class EndpointPage(ViewerRequiredMixin, View):
    """An endpoint's settings in its edit form (the submit button is disabled for who may not change them)."""

    def get(self, request, pk: int):
        return render_endpoint(request, get_object_or_404(WebhookEndpoint, pk=pk))


class EndpointUpdateView(AlertsAction):
    kind = "webhook-endpoint"

    def perform(self, request, pk: int):
        endpoint = get_object_or_404(WebhookEndpoint, pk=pk)
        before = audit_state(endpoint)
        form = EndpointEditForm(request.POST, instance=endpoint)
        if not form.is_valid():
            return render_endpoint(request, WebhookEndpoint.objects.get(pk=pk), form, status=400)
        with self.audited_change() as change:
            change.before = before
            endpoint = form.save()
            change.after = {**audit_state(endpoint), **({"secret": "replaced"} if form.replaces_secret else {})}
        if form.cleaned_data["generate_secret"]:
            return render_alerts(request, created=endpoint, rotated=True)
        messages.success(request, f"Saved endpoint '{endpoint.name}'; the monitor applies it from its next round.")
        return redirect("console:alerts")


class EndpointTestView(AlertsAction):
    kind = "webhook-endpoint"

    def perform(self, request, pk: int):
        endpoint = get_object_or_404(WebhookEndpoint, pk=pk)
        try:
            with self.audited_change() as change:
                delivery = outbox.send_test(endpoint)
                change.after = {"delivery": delivery.id, "webhook_id": delivery.webhook_id}
        except (TemplateError, ValueError) as exc:
            messages.error(request, f"Test not sent: {exc}")
        else:
            messages.success(request, f"Test event {delivery.webhook_id} queued for '{endpoint.name}'.")
        return redirect("console:alerts")


class DeleteView(AlertsAction):
    model: type

    def perform(self, request, pk: int):
        instance = get_object_or_404(self.model, pk=pk)
        with self.audited_change() as change:
            change.before = audit_state(instance)
            instance.delete()
        messages.success(request, f"Deleted {self.kind} {instance}.")
        return redirect("console:alerts")


class EndpointDeleteView(DeleteView):
    kind, model = "webhook-endpoint", WebhookEndpoint


class ThresholdDeleteView(DeleteView):
    kind, model = "lag-threshold", LagThreshold


class SilenceDeleteView(DeleteView):
    kind, model = "silence", Silence


class ThresholdCreateView(AlertsAction):
    kind = "lag-threshold"

    def perform(self, request):
        form = ThresholdForm(request.POST)
        if not form.is_valid():
            return render_alerts(request, status=400, threshold_form=form)
        with self.audited_change() as change:
            change.after = audit_state(form.save())
        messages.success(request, "Added the threshold; the monitor applies it from its next round.")
        return redirect("console:alerts")


class SilenceCreateView(AlertsAction):
    kind = "silence"

    def perform(self, request):
        form = SilenceForm(request.POST)
        if not form.is_valid():
            return render_alerts(request, status=400, silence_form=form)
        now = timezone.now()
        with self.audited_change() as change:
            silence = Silence.objects.create(group=form.cleaned_data["group"], starts_at=now,
                                             ends_at=now + timedelta(minutes=form.cleaned_data["minutes"]),
                                             comment=form.cleaned_data["comment"],
                                             created_by=request.user.get_username())
            change.after = audit_state(silence)
        messages.success(request, f"Silenced {silence}.")
        return redirect("console:alerts")


class DeliveryRetryView(AlertsAction):
    kind = "webhook-delivery"

    def perform(self, request, pk: int):
        delivery = get_object_or_404(Delivery, pk=pk)
        with self.audited_change() as change:
            change.before = {"state": delivery.state, "attempts": delivery.attempts}
            outbox.retry_now(delivery)
        messages.success(request, f"Delivery {delivery.webhook_id} queued again.")
        return redirect("console:alerts")
