from dataclasses import asdict

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, viewsets
from rest_framework.decorators import action as route
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from controlplane.access import actions
from controlplane.access.actions import Action
from controlplane.access.rest import ActionViewMixin
from controlplane.core.errors import KafkaApiError

from .. import election, executor, plans, proposals, reassignment, skew, throttles
from ..models import ReassignmentExecution
from .serializers import (
    CancelSerializer,
    CreateExecutionSerializer,
    ElectLeadersResultSerializer,
    ElectLeadersSerializer,
    ExecutePlanSerializer,
    ExecutionDetailSerializer,
    ExecutionSerializer,
    GeneratedPlanSerializer,
    PartitionResultSerializer,
    ProposalSerializer,
    ReassignmentSerializer,
    SkewReportSerializer,
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


def _partitions_target(body: dict) -> str:
    """The audit target of a request naming partitions (in a body not validated yet)."""
    partitions = body.get("partitions")
    if not isinstance(partitions, list):
        return "partitions:all"
    return "partitions:" + ",".join(f"{p.get('topic')}-{p.get('partition')}" for p in partitions
                                    if isinstance(p, dict))


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
        return _partitions_target(self.request_body())

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


class SkewView(APIView):
    """Each registered broker's share of the cluster's replicas, leaders and bytes on disk, and its skew from an
    even share in percentage points (`controller.skew`; the console's Brokers page columns)."""

    @extend_schema(responses=SkewReportSerializer)
    def get(self, request):
        return Response(SkewReportSerializer(skew.report()).data)


class ReassignmentExecutionViewSet(ActionViewMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                                   viewsets.GenericViewSet):
    """Plans run by the executor (`controller.executor`): in batches under per-broker and cluster limits, ordered
    to keep partitions at or above min.insync.replicas, with progress per partition and overall (bytes, rate,
    ETA). Create from a plan or a proposal; pause, resume or cancel one as a whole. The list is the history,
    newest first."""

    queryset = ReassignmentExecution.objects.select_related("created_by").prefetch_related("tasks")
    lookup_value_regex = r"\d+"
    mutations = {"create": actions.START_REASSIGNMENT, "pause": actions.PAUSE_REASSIGNMENT,
                 "resume": actions.RESUME_REASSIGNMENT, "cancel": actions.CANCEL_REASSIGNMENT}

    def get_serializer_class(self):
        return ExecutionDetailSerializer if self.action != "list" else ExecutionSerializer

    def handle_exception(self, exc):
        if isinstance(exc, KafkaApiError):
            return Response(exc.as_json(), status=exc.status)
        return super().handle_exception(exc)

    def audit_target(self) -> str:
        if "pk" in self.kwargs:
            return f"reassignment:{self.kwargs['pk']}"
        proposal = self.request_body().get("proposal")
        if isinstance(proposal, dict):
            return f"proposal:{proposal.get('goal')}"
        return _partitions_target(self.request_body())

    @extend_schema(request=CreateExecutionSerializer, responses={201: ExecutionDetailSerializer})
    def create(self, request):
        data = _valid(CreateExecutionSerializer, request.data)
        with self.audited_change() as change:
            if "proposal" in data:
                goal = data["proposal"]
                entries = proposals.plan_entries(proposals.propose(
                    goal["goal"], goal["brokers"], goal["topic"], goal["replication_factor"]))
                description = data["description"] or proposals.describe(
                    goal["goal"], goal["brokers"], goal["topic"], goal["replication_factor"])
            else:
                entries = _entries(data["partitions"])
                description = data["description"] or "plan"
            execution = executor.create(entries, description, request.user, data["throttle"],
                                        data["max_moves_per_broker"], data["max_moves"])
            change.after = {"execution": execution.pk, "throttle": execution.throttle,
                            "targets": {f"{e.topic}-{e.partition}": list(e.replicas) for e in entries}}
        return Response(ExecutionDetailSerializer(self.get_queryset().get(pk=execution.pk)).data, status=201)

    def _control(self, operation, pk):
        with self.audited_change() as change:
            execution = operation(int(pk))
            change.after = {"state": execution.state}
        return Response(ExecutionDetailSerializer(self.get_queryset().get(pk=execution.pk)).data)

    @extend_schema(request=None, responses=ExecutionDetailSerializer)
    @route(detail=True, methods=["post"])
    def pause(self, request, pk=None):
        """No new moves start; those in progress finish."""
        return self._control(executor.pause, pk)

    @extend_schema(request=None, responses=ExecutionDetailSerializer)
    @route(detail=True, methods=["post"])
    def resume(self, request, pk=None):
        return self._control(executor.resume, pk)

    @extend_schema(request=None, responses=ExecutionDetailSerializer)
    @route(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Pending moves are cancelled, moves in progress reverted to their original replicas."""
        return self._control(executor.cancel, pk)
