from django.contrib import admin

from controlplane.core.admin import ReadOnlyModelAdmin

from .models import ReportRun


@admin.register(ReportRun)
class ReportRunAdmin(ReadOnlyModelAdmin):
    list_display = ("run_id", "report", "status", "trigger", "created_at", "started_at", "finished_at")
    list_filter = ("report", "status", "trigger")
    date_hierarchy = "created_at"
