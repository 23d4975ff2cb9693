from dataclasses import asdict

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action as route
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from controlplane.access import actions
from controlplane.access.actions import Action
from controlplane.access.rest import ActionViewMixin
from controlplane.core.errors import KafkaApiError

from .. import election, plans, proposals, reassignment, throttles
from .serializers import (
    CancelSerializer,
    ElectLeadersResultSerializer,
    ElectLeadersSerializer,
    ExecutePlanSerializer,
    GeneratedPlanSerializer,
    PartitionResultSerializer,
    ProposalSerializer,
    ReassignmentSerializer,
    VerificationSerializer,
    VerifyPlanSerializer,
)


class ElectLeadersView(ActionViewMixin, APIView):
    """Kafka's ElectLeaders: preferred (operator role) or unclean (admin role) leader election for some or all
    partitions."""

    def required_action(self, request) -> Action:
        return election.election_action(self.request_body().get("election_type", election.PREFERRED))

    def audit_target(self) -> str:
        partitions = self.request_body().get("partitions")
        if not isinstance(partitions, list):
            return election.audit_target(None)
        return election.audit_target([(p.get("topic"), p.get("partition")) for p in partitions if isinstance(p, dict)])

    @extend_schema(request=ElectLeadersSerializer, responses=ElectLeadersResultSerializer)
    def post(self, request):
        serializer = ElectLeadersSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        partitions = serializer.validated_data["partitions"]
        targets = None if partitions is None else [(p["topic"], p["partition"]) for p in partitions]
        with self.audited_change() as change:
            results = election.elect_leaders(serializer.validated_data["election_type"], targets)
            change.before, change.after = election.audit_states(results)
        return Response(ElectLeadersResultSerializer({"results": [asdict(r) for r in results]}).data)


def _entries(partitions: list[dict]) -> list[plans.PlanEntry]:
    return [plans.PlanEntry(p["topic"], p["partition"], tuple(p["replicas"])) for p in partitions]


def _valid(serializer_class, data) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class ReassignmentViewSet(ActionViewMixin, viewsets.ViewSet):
    """Partition reassignments as Kafka's kafka-reassign-partitions does them: list those in progress,
    generate a plan onto a broker list, execute a plan (with a throttle), verify (clearing the throttles
    once nothing reassigns), cancel. Errors of single partitions come back in `results`; bad input is 400
    with Kafka's error name."""

    mutations = {"create": actions.START_REASSIGNMENT, "cancel": actions.CANCEL_REASSIGNMENT,
                 "verify": actions.CLEAR_REASSIGNMENT_THROTTLES}

    def handle_exception(self, exc):
        if isinstance(exc, KafkaApiError):
            return Response(exc.as_json(), status=exc.status)
        return super().handle_exception(exc)

    def audit_target(self) -> str:
        partitions = self.request_body().get("partitions")
        if not isinstance(partitions, list):
            return "partitions:all"
        return "partitions:" + ",".join(f"{p.get('topic')}-{p.get('partition')}" for p in partitions
                                        if isinstance(p, dict))

    @extend_schema(responses=ReassignmentSerializer(many=True))
    def list(self, request):
        return Response(ReassignmentSerializer(reassignment.list_reassignments(), many=True).data)

    @extend_schema(request=ExecutePlanSerializer, responses=PartitionResultSerializer(many=True))
    def create(self, request):
        data = _valid(ExecutePlanSerializer, request.data)
        entries = _entries(data["partitions"])
        with self.audited_change() as change:
            current = plans.current_assignment([(e.topic, e.partition) for e in entries])
            results = plans.execute(entries, data["throttle"], data["additional"])
            change.before, change.after = plans.execute_audit_states(current, entries, data["throttle"], results)
        return Response(PartitionResultSerializer([asdict(r) for r in results], many=True).data)

    @extend_schema(request=VerifyPlanSerializer, responses=VerificationSerializer(many=True))
    @route(detail=False, methods=["post"])
    def verify(self, request):
        """Kafka's `--verify`: each partition's state; when no reassignment runs at all (and not
        `preserve_throttles`), the throttles are removed (recorded as clear_reassignment_throttles)."""
        data = _valid(VerifyPlanSerializer, request.data)
        entries = _entries(data["partitions"])
        states, idle = plans.verify(entries)
        if idle and not data["preserve_throttles"]:
            with self.audited_change() as change:
                cleared_topics, brokers = throttles.clear_throttles({e.topic for e in entries})
                change.after = {"topics": cleared_topics, "brokers": brokers}
        return Response(VerificationSerializer([asdict(s) for s in states], many=True).data)

    @extend_schema(request=CancelSerializer, responses=PartitionResultSerializer(many=True))
    @route(detail=False, methods=["post"])
    def cancel(self, request):
        """Kafka's `--cancel`: revert the given (or every) reassignment in progress, then remove throttles."""
        data = _valid(CancelSerializer, request.data)
        wanted = data["partitions"]
        running = reassignment.list_reassignments(
            None if wanted is None else [(p["topic"], p["partition"]) for p in wanted])
        with self.audited_change() as change:
            change.before = {"reassigning": running}
            results = reassignment.alter_reassignments([(r["topic"], r["partition"], None) for r in running])
            if not data["preserve_throttles"]:
                change.after = dict(zip(("throttles_cleared_on_topics", "on_brokers"),
                                        throttles.clear_throttles({r["topic"] for r in running}), strict=True))
        return Response(PartitionResultSerializer([asdict(r) for r in results], many=True).data)

    @extend_schema(parameters=[OpenApiParameter("topics", str, description="topic names, comma-separated"),
                               OpenApiParameter("brokers", str, description="broker ids, comma-separated"),
                               OpenApiParameter("rack_aware", bool, default=True)],
                   responses=GeneratedPlanSerializer)
    @route(detail=False, methods=["get"])
    def generate(self, request):
        """Kafka's `--generate`: the current assignment of `topics` and a plan placing them from scratch onto
        `brokers` (executes nothing)."""
        topics = [t for t in request.query_params.get("topics", "").split(",") if t]
        try:
            brokers = [int(b) for b in request.query_params.get("brokers", "").split(",") if b]
        except ValueError:
            raise ValidationError({"brokers": "broker ids separated by commas"}) from None
        if not topics or not brokers:
            raise ValidationError("topics and brokers are required")
        current, proposed = plans.generate(topics, brokers, request.query_params.get("rack_aware") != "false")
        return Response(GeneratedPlanSerializer({"current": [asdict(e) for e in current],
                                                 "proposed": [asdict(e) for e in proposed]}).data)


class ProposalView(APIView):
    """A balance proposal (`controller.proposals`; changes nothing): `goal` one of replicas, disk, leaders,
    racks, decommission (`brokers`), replication-factor (`topic`, `replication_factor`). The `plan` part is
    what POST /api/reassignments/ executes."""

    @extend_schema(parameters=[
        OpenApiParameter("goal", str, enum=proposals.GOALS, required=True),
        OpenApiParameter("brokers", str, description="brokers to decommission, comma-separated"),
        OpenApiParameter("topic", str), OpenApiParameter("replication_factor", int)],
        responses=ProposalSerializer)
    def get(self, request):
        query = request.query_params
        try:
            brokers = [int(b) for b in query.get("brokers", "").split(",") if b]
            replication_factor = int(query["replication_factor"]) if query.get("replication_factor") else None
        except ValueError:
            raise ValidationError("brokers and replication_factor must be integers") from None
        try:
            proposal = proposals.propose(query.get("goal", ""), brokers, query.get("topic"), replication_factor)
        except KafkaApiError as e:
            return Response(e.as_json(), status=e.status)
        loads = [{"broker": b, "replicas_before": proposal.before[b].replicas if b in proposal.before else 0,
                  "replicas_after": proposal.after[b].replicas if b in proposal.after else 0,
                  "leaders_before": proposal.before[b].leaders if b in proposal.before else 0,
                  "leaders_after": proposal.after[b].leaders if b in proposal.after else 0,
                  "bytes_before": proposal.before[b].bytes if b in proposal.before else 0,
                  "bytes_after": proposal.after[b].bytes if b in proposal.after else 0,
                  "rack": (proposal.after.get(b) or proposal.before[b]).rack}
                 for b in sorted(set(proposal.before) | set(proposal.after))]
        moves = [{"topic": new.topic, "partition": new.partition, "replicas_before": list(old.replicas),
                  "replicas_after": list(new.replicas), "bytes": new.size * len(set(new.replicas) - set(old.replicas))}
                 for old, new in proposal.moves]
        return Response(ProposalSerializer({
            "goal": query.get("goal"), "moves": moves, "replica_moves": proposal.replica_moves,
            "bytes_to_move": proposal.bytes_to_move, "brokers": loads,
            "plan": [asdict(e) for e in proposals.plan_entries(proposal)]}).data)
