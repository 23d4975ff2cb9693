from rest_framework import serializers

from controlplane.controller.api.serializers import TopicPartitionSerializer
from controlplane.core.errors import KafkaApiError

from ..reset import ResetKind, Scope, parse_spec, parse_topic_arguments

STATE_HELP = "Kafka's group state: Stable, PreparingRebalance, CompletingRebalance, Empty or Dead"


class GroupSummarySerializer(serializers.Serializer):
    group_id = serializers.CharField()
    state = serializers.CharField(help_text=STATE_HELP)
    protocol_type = serializers.CharField(help_text='"consumer", or "" for a group that only commits offsets')
    members = serializers.IntegerField(help_text="number of active members")


class MemberSerializer(serializers.Serializer):
    member_id = serializers.CharField()
    client_id = serializers.CharField()
    host = serializers.CharField()
    group_instance_id = serializers.CharField(allow_null=True, help_text="static membership id, if any")
    assignment = TopicPartitionSerializer(many=True)


class PartitionLagSerializer(serializers.Serializer):
    topic = serializers.CharField()
    partition = serializers.IntegerField()
    current_offset = serializers.IntegerField(allow_null=True, help_text="committed offset; null if none")
    log_end_offset = serializers.IntegerField(allow_null=True)
    lag = serializers.IntegerField(allow_null=True, help_text="log end - committed offset (>= 0); null if none")
    consumer_id = serializers.CharField(allow_null=True, help_text="the member it is assigned to; null if none")
    host = serializers.CharField(allow_null=True)
    client_id = serializers.CharField(allow_null=True)


class GroupDetailSerializer(serializers.Serializer):
    group_id = serializers.CharField()
    state = serializers.CharField(help_text=STATE_HELP)
    protocol_type = serializers.CharField()
    assignor = serializers.CharField(help_text="selected assignment strategy, e.g. range; empty if none")
    coordinator_id = serializers.IntegerField(allow_null=True)
    is_active = serializers.BooleanField(help_text="has members (offsets can only be reset when false)")
    total_lag = serializers.IntegerField()
    members = MemberSerializer(many=True)
    partitions = PartitionLagSerializer(many=True)


class ResetOffsetsRequestSerializer(serializers.Serializer):
    """Scope: `all_topics`, or `topics` and/or `partitions`. Spec and value as kafka-consumer-groups' options."""

    all_topics = serializers.BooleanField(default=False,
                                          help_text="every partition the group has committed offsets for")
    topics = serializers.ListField(child=serializers.CharField(), required=False, default=list,
                                   help_text='topics, all partitions of each; Kafka\'s "topic:0,1" also works')
    partitions = TopicPartitionSerializer(many=True, required=False, default=list)
    spec = serializers.ChoiceField(choices=[k.value for k in ResetKind])
    value = serializers.CharField(required=False, allow_null=True, allow_blank=True, default=None,
                                  help_text="to-datetime: YYYY-MM-DDTHH:mm:SS[.sss][zone] (UTC without zone); "
                                            "by-duration: ISO-8601 PnDTnHnMnS; shift-by: N (may be negative); "
                                            "to-offset: N; none for to-earliest / to-latest")
    dry_run = serializers.BooleanField(default=True, help_text="false commits the new offsets")

    def validate(self, data):
        named = data["topics"] + [f"{p['topic']}:{p['partition']}" for p in data["partitions"]]
        try:
            if data["all_topics"] and named:
                raise KafkaApiError("INVALID_REQUEST", "Give all_topics, or topics/partitions, not both")
            data["scope"] = Scope(all_topics=True) if data["all_topics"] else parse_topic_arguments(named)
            data["reset_spec"] = parse_spec(data["spec"], data["value"])
        except KafkaApiError as e:
            raise serializers.ValidationError(e.message) from None
        return data


class ResetRowSerializer(serializers.Serializer):
    topic = serializers.CharField()
    partition = serializers.IntegerField()
    current_offset = serializers.IntegerField(allow_null=True, help_text="committed offset now; null if none")
    new_offset = serializers.IntegerField()
    log_start_offset = serializers.IntegerField()
    log_end_offset = serializers.IntegerField()
    lag_after = serializers.IntegerField(help_text="log end - new offset")


class ResetPlanSerializer(serializers.Serializer):
    group_id = serializers.CharField()
    state = serializers.CharField(help_text=STATE_HELP)
    spec = serializers.CharField(source="spec.kind")
    executed = serializers.BooleanField(help_text="true if the new offsets were committed")
    warnings = serializers.ListField(child=serializers.CharField(),
                                     help_text="Kafka's warnings: clamped offsets, timestamps past the last record")
    partitions = ResetRowSerializer(many=True, source="rows")
