"""Read-only admin pages: rollups are written by the consumer only."""

from django.contrib import admin

from .models import (
    BrokerMetricPoint,
    LagMetricPoint,
    LogDirMetricPoint,
    TopicMetricPoint,
    TopicReplicaSize,
    TopicTotals,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    ordering = ("-start",)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(BrokerMetricPoint)
class BrokerMetricPointAdmin(ReadOnlyAdmin):
    list_display = ("start", "resolution", "broker_id", "bytes_in", "bytes_out", "messages_in", "under_replicated")
    list_filter = ("resolution", "broker_id")


@admin.register(TopicMetricPoint)
class TopicMetricPointAdmin(ReadOnlyAdmin):
    list_display = ("start", "resolution", "topic", "bytes_in", "bytes_out", "messages_in", "size_bytes")
    list_filter = ("resolution",)
    search_fields = ("topic",)


@admin.register(LogDirMetricPoint)
class LogDirMetricPointAdmin(ReadOnlyAdmin):
    list_display = ("start", "resolution", "broker_id", "path", "size_bytes", "free_bytes")
    list_filter = ("resolution", "broker_id")


@admin.register(LagMetricPoint)
class LagMetricPointAdmin(ReadOnlyAdmin):
    list_display = ("start", "resolution", "group", "lag", "lag_seconds", "status")
    list_filter = ("resolution", "status")
    search_fields = ("group",)


@admin.register(TopicTotals)
class TopicTotalsAdmin(ReadOnlyAdmin):
    ordering = ("topic",)
    list_display = ("topic", "size_bytes", "messages", "updated_at")
    search_fields = ("topic",)


@admin.register(TopicReplicaSize)
class TopicReplicaSizeAdmin(ReadOnlyAdmin):
    ordering = ("topic", "broker_id")
    list_display = ("topic", "broker_id", "size_bytes", "partitions", "sampled_at")
    search_fields = ("topic",)
