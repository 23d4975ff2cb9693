from rest_framework import serializers

from ..election import PREFERRED, UNCLEAN


class TopicPartitionSerializer(serializers.Serializer):
    topic = serializers.CharField()
    partition = serializers.IntegerField(min_value=0)


class ElectLeadersSerializer(serializers.Serializer):
    election_type = serializers.ChoiceField(choices=(PREFERRED, UNCLEAN), default=PREFERRED)
    partitions = TopicPartitionSerializer(many=True, required=False, allow_null=True, default=None,
                                          help_text="null or absent: every partition")


class ElectionResultSerializer(serializers.Serializer):
    topic = serializers.CharField()
    partition = serializers.IntegerField()
    error = serializers.CharField(allow_null=True, help_text="null on success, else the Kafka error name")


class ElectLeadersResultSerializer(serializers.Serializer):
    results = ElectionResultSerializer(many=True)


class PlanPartitionSerializer(TopicPartitionSerializer):
    replicas = serializers.ListField(child=serializers.IntegerField(min_value=0), allow_empty=False,
                                     help_text="target replicas; the first is the preferred leader")


class ExecutePlanSerializer(serializers.Serializer):
    """Kafka's `--execute`: a plan's partitions, an optional throttle, `additional` to add to running ones."""

    partitions = PlanPartitionSerializer(many=True, allow_empty=False)
    throttle = serializers.IntegerField(default=-1, min_value=-1, help_text="replication throttle, B/s; -1: none")
    additional = serializers.BooleanField(default=False)


class VerifyPlanSerializer(serializers.Serializer):
    partitions = PlanPartitionSerializer(many=True, allow_empty=False)
    preserve_throttles = serializers.BooleanField(default=False)


class CancelSerializer(serializers.Serializer):
    partitions = TopicPartitionSerializer(many=True, required=False, allow_null=True, default=None,
                                          help_text="null or absent: every reassignment in progress")
    preserve_throttles = serializers.BooleanField(default=False)


class ReassignmentSerializer(serializers.Serializer):
    topic = serializers.CharField()
    partition = serializers.IntegerField()
    replicas = serializers.ListField(child=serializers.IntegerField())
    adding_replicas = serializers.ListField(child=serializers.IntegerField())
    removing_replicas = serializers.ListField(child=serializers.IntegerField())


class PartitionResultSerializer(serializers.Serializer):
    topic = serializers.CharField()
    partition = serializers.IntegerField()
    error = serializers.CharField(allow_null=True, help_text="null on success, else the Kafka error name")
    message = serializers.CharField(allow_null=True)


class VerificationSerializer(serializers.Serializer):
    topic = serializers.CharField()
    partition = serializers.IntegerField()
    state = serializers.ChoiceField(choices=("in progress", "completed", "other"))
    actual = serializers.ListField(child=serializers.IntegerField(), help_text="the replicas, when 'other'")


class GeneratedPlanSerializer(serializers.Serializer):
    current = PlanPartitionSerializer(many=True)
    proposed = PlanPartitionSerializer(many=True)


class BrokerLoadSerializer(serializers.Serializer):
    broker = serializers.IntegerField()
    replicas_before = serializers.IntegerField()
    replicas_after = serializers.IntegerField()
    leaders_before = serializers.IntegerField()
    leaders_after = serializers.IntegerField()
    bytes_before = serializers.IntegerField()
    bytes_after = serializers.IntegerField()
    rack = serializers.CharField(allow_null=True)


class ProposalMoveSerializer(serializers.Serializer):
    topic = serializers.CharField()
    partition = serializers.IntegerField()
    replicas_before = serializers.ListField(child=serializers.IntegerField())
    replicas_after = serializers.ListField(child=serializers.IntegerField())
    bytes = serializers.IntegerField(help_text="bytes copied to the new replicas")


class ProposalSerializer(serializers.Serializer):
    goal = serializers.CharField()
    moves = ProposalMoveSerializer(many=True)
    replica_moves = serializers.IntegerField()
    bytes_to_move = serializers.IntegerField()
    brokers = BrokerLoadSerializer(many=True)
    plan = PlanPartitionSerializer(many=True, help_text="the partitions to POST to /api/reassignments/")
