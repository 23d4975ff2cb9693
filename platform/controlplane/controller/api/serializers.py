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


class ProposalRequestSerializer(serializers.Serializer):
    goal = serializers.CharField()
    brokers = serializers.ListField(child=serializers.IntegerField(), default=list,
                                    help_text="brokers to decommission")
    topic = serializers.CharField(required=False, allow_null=True, default=None)
    replication_factor = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=1)


class CreateExecutionSerializer(serializers.Serializer):
    """A plan (`partitions`, Kafka's format) or a proposal to compute now (`proposal`), run in batches."""

    partitions = PlanPartitionSerializer(many=True, required=False, allow_empty=False)
    proposal = ProposalRequestSerializer(required=False)
    description = serializers.CharField(required=False, max_length=200, default="")
    throttle = serializers.IntegerField(default=-1, min_value=-1, help_text="replication throttle, B/s; -1: none")
    max_moves_per_broker = serializers.IntegerField(default=10, min_value=1)
    max_moves = serializers.IntegerField(default=1250, min_value=1)

    def validate(self, attrs):
        if ("partitions" in attrs) == ("proposal" in attrs):
            raise serializers.ValidationError("give either partitions (a plan) or proposal (a goal)")
        return attrs


class _ProgressFields(serializers.Serializer):
    """bytes_to_copy / bytes_copied as stored; fraction, rate (B/s, averaged since the copy started) and ETA (s)."""

    bytes_to_copy = serializers.IntegerField()
    bytes_copied = serializers.IntegerField()
    fraction = serializers.SerializerMethodField()
    rate = serializers.SerializerMethodField()
    eta_s = serializers.SerializerMethodField()

    def get_fraction(self, obj) -> float:
        return obj.progress().fraction

    def get_rate(self, obj) -> float | None:
        return obj.progress().rate

    def get_eta_s(self, obj) -> float | None:
        return obj.progress().eta_s


class ReassignmentTaskSerializer(_ProgressFields):
    topic = serializers.CharField()
    partition = serializers.IntegerField()
    source_replicas = serializers.ListField(child=serializers.IntegerField())
    target_replicas = serializers.ListField(child=serializers.IntegerField())
    state = serializers.CharField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    error = serializers.CharField()


class ExecutionSerializer(_ProgressFields):
    id = serializers.IntegerField()
    description = serializers.CharField()
    state = serializers.CharField()
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()
    copy_started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    throttle = serializers.IntegerField()
    max_moves_per_broker = serializers.IntegerField()
    max_moves = serializers.IntegerField()
    tasks_by_state = serializers.SerializerMethodField()

    def get_tasks_by_state(self, obj) -> dict[str, int]:
        return obj.tasks_by_state()


class ExecutionDetailSerializer(ExecutionSerializer):
    tasks = ReassignmentTaskSerializer(many=True)


class ShareSerializer(serializers.Serializer):
    value = serializers.IntegerField(help_text="the broker's count (bytes for `bytes`)")
    pct = serializers.FloatField(allow_null=True, help_text="share of the total, %; null if the total is 0")
    skew_pp = serializers.FloatField(allow_null=True, help_text="pct minus the even share, percentage points")
    skewed = serializers.BooleanField(help_text="|skew_pp| >= skewed_pp")


class BrokerSkewSerializer(serializers.Serializer):
    broker = serializers.IntegerField()
    state = serializers.CharField()
    rack = serializers.CharField(allow_null=True)
    replicas = ShareSerializer()
    leaders = ShareSerializer()
    bytes = ShareSerializer(help_text="bytes on disk from the latest replica size samples")


class MaxSkewSerializer(serializers.Serializer):
    replicas = serializers.FloatField(allow_null=True)
    leaders = serializers.FloatField(allow_null=True)
    bytes = serializers.FloatField(allow_null=True)


class SkewReportSerializer(serializers.Serializer):
    even_share_pct = serializers.FloatField(allow_null=True, help_text="100 / number of brokers")
    skewed_pp = serializers.FloatField(help_text="the skew, in percentage points, from which a share is marked")
    max_skew_pp = MaxSkewSerializer(help_text="the largest |skew_pp| per measure")
    brokers = BrokerSkewSerializer(many=True)
