from drf_spectacular.utils import OpenApiExample, extend_schema_serializer
from rest_framework import serializers

from ..models import Partition, Topic
from ..services import DEFAULT


class TopicSerializer(serializers.ModelSerializer):
    """A topic as the list shows it (the annotations of `listing.topic_summaries`)."""

    partition_count = serializers.IntegerField(read_only=True)
    replication_factor = serializers.IntegerField(read_only=True, help_text="largest replica set of its partitions")
    under_replicated = serializers.IntegerField(read_only=True, help_text="partitions whose ISR lacks a replica")
    offline = serializers.IntegerField(read_only=True, help_text="partitions without a leader")
    size_bytes = serializers.IntegerField(read_only=True, allow_null=True,
                                          help_text="bytes on disk over all replicas, as the brokers last reported "
                                                    "(null before their first metrics round)")
    messages = serializers.IntegerField(read_only=True, allow_null=True,
                                        help_text="Σ over partitions of log end − log start offset")
    produce_rate = serializers.FloatField(read_only=True, help_text="messages/s over the last complete minute")
    is_internal = serializers.BooleanField(read_only=True)

    class Meta:
        model = Topic
        fields = ("name", "topic_id", "partition_count", "replication_factor", "under_replicated", "offline",
                  "size_bytes", "messages", "produce_rate", "is_internal", "configs", "created_at")


class TopicPartitionRowSerializer(serializers.Serializer):
    partition = serializers.IntegerField()
    leader = serializers.IntegerField(help_text="-1: offline")
    replicas = serializers.ListField(child=serializers.IntegerField(), help_text="in order; the first is preferred")
    isr = serializers.ListField(child=serializers.IntegerField())
    leader_epoch = serializers.IntegerField()
    offline = serializers.BooleanField()
    under_replicated = serializers.BooleanField()
    log_start_offset = serializers.IntegerField(allow_null=True)
    log_end_offset = serializers.IntegerField(allow_null=True)
    replica_sizes = serializers.ListField(child=serializers.IntegerField(allow_null=True),
                                          help_text="bytes of each replica in `replicas` order (null: not reported)")


class ConfigEntrySerializer(serializers.Serializer):
    name = serializers.CharField()
    value = serializers.CharField()
    source = serializers.ChoiceField(choices=["topic", "default"],
                                     help_text="topic: the topic's override; default: Kafka's default")
    type = serializers.CharField(help_text="boolean, string, int, long, double or list")
    default = serializers.CharField()
    doc = serializers.CharField()
    broker_key = serializers.CharField(allow_null=True, help_text="the broker setting that sets the cluster default")


class TopicDetailSerializer(TopicSerializer):
    partitions = TopicPartitionRowSerializer(many=True, read_only=True, source="partition_rows")
    config_entries = ConfigEntrySerializer(many=True, read_only=True)

    class Meta(TopicSerializer.Meta):
        fields = (*TopicSerializer.Meta.fields, "partitions", "config_entries")


@extend_schema_serializer(examples=[
    OpenApiExample("Three partitions, two replicas, one day's retention",
                   value={"name": "orders", "partitions": 3, "replication_factor": 2,
                          "configs": {"retention.ms": "86400000", "cleanup.policy": "delete"}}, request_only=True),
])
class TopicCreateSerializer(serializers.Serializer):
    """kafka-topics --create: partitions and replication factor default to the cluster's (-1)."""

    name = serializers.CharField(help_text="Kafka's rules: [a-zA-Z0-9._-], at most 249 characters, not . or ..")
    partitions = serializers.IntegerField(default=DEFAULT, help_text="-1: num.partitions")
    replication_factor = serializers.IntegerField(default=DEFAULT, help_text="-1: min(3, running brokers)")
    configs = serializers.DictField(child=serializers.CharField(), default=dict,
                                    help_text="topic config overrides by Kafka name")
    validate_only = serializers.BooleanField(default=False, help_text="check everything, create nothing")


@extend_schema_serializer(examples=[
    OpenApiExample("Set retention, drop the cleanup.policy override",
                   value={"configs": {"retention.ms": "3600000", "cleanup.policy": None}}, request_only=True),
])
class TopicConfigsPatchSerializer(serializers.Serializer):
    """IncrementalAlterConfigs: set the given overrides, delete those given as null, keep the rest."""

    configs = serializers.DictField(child=serializers.CharField(allow_null=True))
    validate_only = serializers.BooleanField(default=False)


@extend_schema_serializer(examples=[OpenApiExample("Grow to 6 partitions", value={"count": 6}, request_only=True)])
class CreatePartitionsSerializer(serializers.Serializer):
    count = serializers.IntegerField(help_text="the new total number of partitions (only grows)")
    validate_only = serializers.BooleanField(default=False)


class PartitionSerializer(serializers.ModelSerializer):
    topic = serializers.SlugRelatedField(slug_field="name", read_only=True)
    is_under_replicated = serializers.BooleanField(read_only=True)

    class Meta:
        model = Partition
        fields = ("topic", "partition", "replicas", "isr", "leader", "leader_epoch", "partition_epoch",
                  "is_under_replicated")


class MessageSerializer(serializers.Serializer):
    partition = serializers.IntegerField()
    offset = serializers.IntegerField()
    timestamp = serializers.IntegerField(help_text="ms since the epoch")
    timestamp_type = serializers.ChoiceField(choices=["CreateTime", "LogAppendTime"])
    key = serializers.CharField(allow_null=True, help_text="decoded as `decode` asks")
    value = serializers.CharField(allow_null=True)
    value_error = serializers.CharField(allow_null=True, help_text="why the value is not shown as `decode` asks "
                                        "(e.g. not Avro in Confluent's wire format, another schema id): it is then "
                                        "shown in hex")
    headers = serializers.ListField(child=serializers.ListField(child=serializers.CharField(allow_null=True)),
                                    help_text="[name, value] pairs in record order")
    size = serializers.IntegerField(help_text="bytes of key, value and headers")


class MessagePageSerializer(serializers.Serializer):
    messages = MessageSerializer(many=True)
    cursor = serializers.CharField(allow_null=True, help_text="pass it back (same parameters) to continue; null at "
                                                              "the end")
    scanned = serializers.IntegerField(help_text="records examined for this page (bounded)")
    watermarks = serializers.DictField(child=serializers.ListField(child=serializers.IntegerField()),
                                       help_text="partition → [log start offset, high watermark]")


@extend_schema_serializer(examples=[
    OpenApiExample("A JSON order keyed by customer", request_only=True,
                   value={"key": "customer-42", "value": "{\"order\": 1}", "headers": {"source": "console"}}),
])
class ProduceSerializer(serializers.Serializer):
    key = serializers.CharField(allow_null=True, required=False, default=None, trim_whitespace=False)
    value = serializers.CharField(allow_null=True, allow_blank=True, trim_whitespace=False)
    headers = serializers.DictField(child=serializers.CharField(allow_blank=True, trim_whitespace=False),
                                    required=False, default=dict)
    partition = serializers.IntegerField(allow_null=True, required=False, default=None,
                                         help_text="null: by key (murmur2, as Kafka's clients)")
    encoding = serializers.ChoiceField(choices=["text", "base64"], default="text",
                                       help_text="how key, value and header values are given")


class ProducedSerializer(serializers.Serializer):
    partition = serializers.IntegerField()
    offset = serializers.IntegerField()
    timestamp = serializers.IntegerField()
