"""The console's Reassignments page: pick a balance goal, or topics onto brokers (Kafka's `--generate`) → preview
the moves and each broker's load before/after (reading only) → execute with a throttle (`controller.executor`) →
live progress per partition and overall with ETA → history. Execute, pause, resume and cancel are POST-only
`ActionView`s needing the operator role, audited; the progress JSON is what `/api/reassignments/executions/<id>/`
answers. The Brokers page's Decommission button (`DecommissionView`) leads to the preview of the decommission
goal for that broker."""

from collections.abc import Callable
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views import View

from controlplane.access import actions
from controlplane.access.console import ActionView, ViewerRequiredMixin
from controlplane.controller import executor, plans, proposals
from controlplane.controller.api.serializers import ExecutionDetailSerializer
from controlplane.controller.balance import Proposal
from controlplane.controller.models import ReassignmentExecution
from controlplane.core.errors import KafkaApiError

HISTORY_ROWS = 50
GOAL_LABELS = {"replicas": "Even replica counts (also: spread onto a new broker)", "disk": "Even bytes per broker",
               "leaders": "Even preferred leaders", "racks": "Fix rack-awareness violations",
               "decommission": "Decommission brokers", "replication-factor": "Change a topic's replication factor"}


def _broker_ids(text: str) -> list[int]:
    try:
        return [int(b) for b in text.replace(" ", "").split(",") if b]
    except ValueError:
        raise forms.ValidationError("broker ids separated by commas, e.g. 1,2,3") from None


class PlanForm(forms.Form):
    """What to preview: a balance goal (with its parameters), or topics placed onto a broker list."""

    source = forms.ChoiceField(choices=(("goal", "A balance goal"), ("topics", "Topics onto brokers")),
                               widget=forms.RadioSelect, initial="goal")
    goal = forms.ChoiceField(choices=[(g, GOAL_LABELS[g]) for g in proposals.GOALS], required=False)
    brokers = forms.CharField(required=False, help_text="decommission: the brokers to empty; topics: the brokers "
                                                        "to place them on (comma-separated)")
    topic = forms.CharField(required=False, help_text="replication factor: the topic")
    replication_factor = forms.IntegerField(required=False, min_value=1)
    topics = forms.CharField(required=False, help_text="topics onto brokers: topic names, comma-separated")

    def clean_brokers(self):
        return _broker_ids(self.cleaned_data["brokers"])

    def clean_topics(self):
        return [t.strip() for t in self.cleaned_data["topics"].split(",") if t.strip()]

    def clean(self):
        data = super().clean()
        if data.get("source") == "topics" and not (data.get("topics") and data.get("brokers")):
            raise forms.ValidationError("Name the topics and the brokers to place them on.")
        if data.get("source") == "goal" and not data.get("goal"):
            raise forms.ValidationError("Choose a goal.")
        return data

    def proposal(self) -> tuple[Proposal, str]:
        """(the proposal, its description); raises KafkaApiError."""
        data = self.cleaned_data
        if data["source"] == "topics":
            return (proposals.generated(data["topics"], data["brokers"]),
                    f"{', '.join(data['topics'])} onto brokers {', '.join(map(str, data['brokers']))}")
        args = (data["goal"], data["brokers"], data["topic"] or None, data["replication_factor"])
        return proposals.propose(*args), proposals.describe(*args)


class ExecuteForm(forms.Form):
    plan = forms.CharField(widget=forms.HiddenInput, help_text="Kafka's reassignment JSON")
    description = forms.CharField(max_length=200, widget=forms.HiddenInput)
    throttle_mb_s = forms.DecimalField(required=False, min_value=0.001, decimal_places=3, label="Throttle (MB/s)",
                                       help_text="replication throttle of the moves; blank: none")
    max_moves_per_broker = forms.IntegerField(min_value=1, initial=10, label="Moves per broker",
                                              help_text="moves in progress involving one broker at a time")


def _load_rows(proposal: Proposal) -> list[dict]:
    """Per broker: replicas, leaders and bytes before/after, with bar widths in % of the largest value."""
    brokers = sorted(set(proposal.before) | set(proposal.after))
    rows = []
    for metric in ("replicas", "leaders", "bytes"):
        top = max([getattr(load, metric) for side in (proposal.before, proposal.after) for load in side.values()]
                  + [1])
        for b in brokers:
            before = getattr(proposal.before[b], metric) if b in proposal.before else 0
            after = getattr(proposal.after[b], metric) if b in proposal.after else 0
            rows.append({"broker": b, "metric": metric, "before": before, "after": after,
                         "before_pct": round(100 * before / top), "after_pct": round(100 * after / top)})
    return rows


def render_page(request, status: int = 200, **context):
    executions = list(ReassignmentExecution.objects.select_related("created_by").prefetch_related("tasks")
                      [:HISTORY_ROWS])
    context.setdefault("plan_form", PlanForm(initial={"source": "goal"}))
    return render(request, "console/reassignments.html", {
        "active": next((e for e in executions if e.is_active), None), "history": executions, **context},
        status=status)


class ReassignmentsView(ViewerRequiredMixin, View):
    """The page; with a filled plan form (GET, reading only) it shows the preview and the execute form."""

    def get(self, request):
        if "source" not in request.GET:
            return render_page(request)
        form = PlanForm(request.GET)
        if not form.is_valid():
            return render_page(request, status=400, plan_form=form)
        try:
            proposal, description = form.proposal()
        except KafkaApiError as e:
            return render_page(request, status=e.status, plan_form=form, plan_error=e)
        entries = proposals.plan_entries(proposal)
        moves = [{"topic": new.topic, "partition": new.partition, "before": old.replicas, "after": new.replicas,
                  "bytes": new.size * len(set(new.replicas) - set(old.replicas))} for old, new in proposal.moves]
        execute_form = ExecuteForm(initial={"plan": plans.format_plan(entries), "description": description})
        return render_page(request, plan_form=form, proposal=proposal, description=description, moves=moves,
                           loads=_load_rows(proposal), execute_form=execute_form)


class ExecuteView(ActionView):
    action = actions.START_REASSIGNMENT

    def audit_target(self) -> str:
        try:
            entries = plans.parse_plan(self.request.POST.get("plan", ""))
        except KafkaApiError:
            return "partitions:all"
        return "partitions:" + ",".join(f"{e.topic}-{e.partition}" for e in entries)

    def perform(self, request):
        form = ExecuteForm(request.POST)
        if not form.is_valid():
            messages.error(request, f"Not executed: {form.errors.as_text()}")
            return redirect("console:reassignments")
        throttle = form.cleaned_data["throttle_mb_s"]
        try:
            with self.audited_change() as change:
                entries = plans.parse_plan(form.cleaned_data["plan"])
                execution = executor.create(entries, form.cleaned_data["description"], request.user,
                                            -1 if throttle is None else int(throttle * 1_000_000),
                                            form.cleaned_data["max_moves_per_broker"])
                change.after = {"execution": execution.pk, "throttle": execution.throttle,
                                "targets": {f"{e.topic}-{e.partition}": list(e.replicas) for e in entries}}
        except KafkaApiError as e:
            messages.error(request, f"Not executed: {e.message}")
            return redirect("console:reassignments")
        messages.success(request, f"Reassignment {execution.pk} started: {execution.tasks.count()} partition(s).")
        return redirect("console:reassignment", pk=execution.pk)


class DecommissionView(ActionView):
    """The Brokers page's Decommission button: proposes moving everything off the broker (recording its load and
    the proposal's size in the audit log), then shows that proposal on this page's preview, to execute from
    there. A broker that cannot be decommissioned (not running, nowhere to move its replicas) goes back to the
    Brokers page with the reason."""

    action = actions.DECOMMISSION_BROKER

    def audit_target(self) -> str:
        return f"broker:{self.kwargs['broker_id']}"

    def perform(self, request, broker_id: int):
        try:
            with self.audited_change() as change:
                proposal = proposals.propose("decommission", [broker_id])
                load = proposal.before[broker_id]
                change.before = {"replicas": load.replicas, "preferred_leaders": load.leaders,
                                 "estimated_bytes": load.bytes}
                change.after = {"partitions": len(proposal.moves), "replica_moves": proposal.replica_moves,
                                "bytes_to_move": proposal.bytes_to_move}
                change.detail = "previewed; executing it is start_reassignment"
        except KafkaApiError as e:
            messages.error(request, f"Broker {broker_id} cannot be decommissioned: {e.message}")
            return redirect("console:brokers")
        query = urlencode({"source": "goal", "goal": "decommission", "brokers": broker_id})
        return redirect(f"{reverse('console:reassignments')}?{query}#preview-result")


class ExecutionDetailView(ViewerRequiredMixin, View):
    def get(self, request, pk: int):
        execution = get_object_or_404(ReassignmentExecution.objects.prefetch_related("tasks"), pk=pk)
        state = ExecutionDetailSerializer(execution).data
        return render(request, "console/reassignment_detail.html", {
            "execution": execution, "tasks": list(zip(execution.tasks.all(), state["tasks"], strict=True)),
            "state": state})


class ExecutionProgressView(ViewerRequiredMixin, View):
    """The execution as JSON, for the page's live progress (same fields as the REST detail)."""

    def get(self, request, pk: int):
        execution = get_object_or_404(ReassignmentExecution.objects.prefetch_related("tasks"), pk=pk)
        return JsonResponse(ExecutionDetailSerializer(execution).data)


class _ControlView(ActionView):
    """Pause, resume or cancel an execution as a whole (`operation`), then back to its page."""

    operation: Callable[[int], ReassignmentExecution]
    done: str

    def audit_target(self) -> str:
        return f"reassignment:{self.kwargs['pk']}"

    def perform(self, request, pk: int):
        try:
            with self.audited_change() as change:
                change.after = {"state": self.operation(pk).state}
        except KafkaApiError as e:
            messages.error(request, e.message)
        else:
            messages.success(request, f"Reassignment {pk} {self.done}.")
        return redirect("console:reassignment", pk=pk)


class PauseView(_ControlView):
    action, operation, done = actions.PAUSE_REASSIGNMENT, staticmethod(executor.pause), "paused"


class ResumeView(_ControlView):
    action, operation, done = actions.RESUME_REASSIGNMENT, staticmethod(executor.resume), "resumed"


class CancelView(_ControlView):
    action, operation, done = actions.CANCEL_REASSIGNMENT, staticmethod(executor.cancel), "cancelled"
