from django.contrib import admin

from controlplane.core.admin import ReadOnlyAdminMixin, ReadOnlyModelAdmin

from .models import Partition, Topic


class PartitionInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = Partition
    extra = 0
    fields = ("partition", "replicas", "isr", "leader", "leader_epoch", "partition_epoch")


@admin.register(Topic)
class TopicAdmin(ReadOnlyModelAdmin):
    list_display = ("name", "topic_id", "created_at")
    search_fields = ("name",)
    readonly_fields = ("topic_id",)
    inlines = [PartitionInline]


@admin.register(Partition)
class PartitionAdmin(ReadOnlyModelAdmin):
    list_display = ("topic", "partition", "leader", "leader_epoch", "partition_epoch", "replicas", "isr")
    list_filter = ("topic",)
