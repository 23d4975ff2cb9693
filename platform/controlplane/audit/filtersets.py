import django_filters
from django.db.models import Q

from controlplane.core.filters import FilterSet, UtcIsoDateTimeFilter

from .models import AuditEntry, Result, Source


class AuditEntryFilterSet(FilterSet):
    """Shared by the console's audit page and /api/audit/: substring filters for actor (also matching the
    address and client id) and target, exact action, source and result, and a time window."""

    actor = django_filters.CharFilter(method="filter_actor", label="Actor")
    action = django_filters.CharFilter(field_name="action", lookup_expr="exact")
    target = django_filters.CharFilter(field_name="target", lookup_expr="icontains")
    source = django_filters.ChoiceFilter(choices=Source.choices)
    result = django_filters.ChoiceFilter(choices=Result.choices)
    since = UtcIsoDateTimeFilter(field_name="at", lookup_expr="gte", label="Since (ISO 8601)")
    until = UtcIsoDateTimeFilter(field_name="at", lookup_expr="lt", label="Until (ISO 8601)")

    class Meta:
        model = AuditEntry
        fields = ("actor", "action", "target", "source", "result", "since", "until")

    def filter_actor(self, queryset, name, value):
        return queryset.filter(Q(actor__icontains=value) | Q(address__icontains=value) | Q(client_id__icontains=value))
