from rest_framework import serializers

from ..models import Partition, Topic


class TopicSerializer(serializers.ModelSerializer):
    partition_count = serializers.IntegerField(read_only=True)
    replication_factor = serializers.SerializerMethodField()
    is_internal = serializers.BooleanField(read_only=True)

    class Meta:
        model = Topic
        fields = ("name", "topic_id", "partition_count", "replication_factor", "is_internal", "configs",
                  "created_at")

    def get_replication_factor(self, topic: Topic) -> int:
        # Outside a reassignment every partition has the same number of replicas; during one the
        # largest replica set is shown, as Kafka's tools do.
        return max((len(p.replicas) for p in topic.partitions.all()), default=0)


class PartitionSerializer(serializers.ModelSerializer):
    topic = serializers.SlugRelatedField(slug_field="name", read_only=True)
    is_under_replicated = serializers.BooleanField(read_only=True)

    class Meta:
        model = Partition
        fields = ("topic", "partition", "replicas", "isr", "leader", "leader_epoch", "partition_epoch",
                  "is_under_replicated")
