from rest_framework import serializers

from ..models import ClusterHealthSnapshot


class ClusterHealthSnapshotSerializer(serializers.ModelSerializer):
    class Meta:
        model = ClusterHealthSnapshot
        fields = ("taken_at", "brokers_total", "brokers_running", "topics", "partitions",
                  "offline_partitions", "under_replicated_partitions", "controller_epoch")
