from django.contrib import admin

from .models import ClusterHealthSnapshot


@admin.register(ClusterHealthSnapshot)
class ClusterHealthSnapshotAdmin(admin.ModelAdmin):
    list_display = ("taken_at", "brokers_running", "brokers_total", "topics", "partitions",
                    "offline_partitions", "under_replicated_partitions")
    date_hierarchy = "taken_at"
