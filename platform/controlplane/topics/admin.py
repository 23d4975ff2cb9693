from django.contrib import admin

from .models import Partition, Topic


class PartitionInline(admin.TabularInline):
    model = Partition
    extra = 0
    fields = ("partition", "replicas", "isr", "leader", "leader_epoch", "partition_epoch")


@admin.register(Topic)
class TopicAdmin(admin.ModelAdmin):
    list_display = ("name", "topic_id", "created_at")
    search_fields = ("name",)
    readonly_fields = ("topic_id",)
    inlines = [PartitionInline]


@admin.register(Partition)
class PartitionAdmin(admin.ModelAdmin):
    list_display = ("topic", "partition", "leader", "leader_epoch", "partition_epoch", "replicas", "isr")
    list_filter = ("topic",)
