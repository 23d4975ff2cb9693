from django.contrib import admin

from controlplane.core.admin import ReadOnlyModelAdmin

from .models import AuditEntry


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyModelAdmin):
    """The audit log is written by `services.record` and pruned by its retention task only."""

    list_display = ("at", "actor", "source", "action", "target", "result")
    list_filter = ("source", "result", "action")
    search_fields = ("actor", "target", "address", "client_id")
    date_hierarchy = "at"
