from rest_framework import viewsets

from ..filtersets import AuditEntryFilterSet
from ..models import AuditEntry
from .serializers import AuditEntrySerializer


class AuditEntryViewSet(viewsets.ReadOnlyModelViewSet):
    """The audit log, newest first (read-only)."""

    queryset = AuditEntry.objects.all()
    serializer_class = AuditEntrySerializer
    filterset_class = AuditEntryFilterSet
    ordering_fields = ("at",)
