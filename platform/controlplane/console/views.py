"""Server-rendered console pages; all require login and a role (`ViewerRequiredMixin`), and every change is an
`ActionView` (checked and audited, see controlplane.access.console). They read the metadata store, and the
consumer-group pages read the cluster through `controlplane.groups.services` and the lag monitor's verdicts through
`controlplane.lag.client` (an unreachable cluster or monitor is shown, never hidden)."""

import csv
import datetime
import itertools
import json
from urllib.parse import quote

from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.exceptions import ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import Count
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views import View
from django.views.generic import ListView, TemplateView

from controlplane.access import actions, checks, tokens
from controlplane.access.console import ActionView, ViewerRequiredMixin, actor_of, refused_response
from controlplane.access.models import ApiToken
from controlplane.audit.filtersets import AuditEntryFilterSet
from controlplane.audit.models import AuditEntry, Source
from controlplane.cluster.models import Broker, ControllerState, with_liveness
from controlplane.controller import election, skew
from controlplane.core.errors import KafkaApiError
from controlplane.groups.services import GroupService
from controlplane.health.models import ClusterHealthSnapshot
from controlplane.health.snapshot import partition_problems, running_broker_ids
from controlplane.lag import client as lag_client
from controlplane.topics.models import Topic

from .forms import ElectLeadersForm, ResetOffsetsForm, TokenForm


class OverviewView(ViewerRequiredMixin, TemplateView):
    template_name = "console/overview.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        running = running_broker_ids()
        partition_count, problems = partition_problems(running)
        context.update(
            brokers=with_liveness(Broker.objects.all()),
            brokers_running=len(running),
            topic_count=Topic.objects.count(),
            partition_count=partition_count,
            offline=problems.offline,
            under_replicated=problems.under_replicated,
            controller=ControllerState.current(),
            latest_health=ClusterHealthSnapshot.objects.first(),
            largest_topics=Topic.objects.annotate(partition_count=Count("partitions"))
                                        .order_by("-partition_count", "name")[:10],
        )
        return context


class BrokerListView(ViewerRequiredMixin, ListView):
    """The brokers with each one's share of replicas, leaders and bytes and its skew (`controller.skew`)."""

    model = Broker
    template_name = "console/brokers.html"
    context_object_name = "brokers"
    extra_context = {"election_form": ElectLeadersForm()}

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        brokers = with_liveness(context["brokers"])
        shares = skew.current([b.broker_id for b in brokers])
        return {**context, "rows": [(b, shares[b.broker_id]) for b in brokers],
                "even_share": 100 / len(brokers) if brokers else None}


class ElectLeadersView(ActionView):
    """Preferred (operator) or unclean (admin) leader election for every partition or one topic's."""

    def get_action(self):
        return election.election_action(self.request.POST.get("election_type", election.PREFERRED))

    def targets(self) -> list[tuple[str, int]] | None:
        topic = self.request.POST.get("topic", "").strip()
        return election.topic_targets(topic) if topic else None

    def audit_target(self) -> str:
        return election.audit_target(self.targets())

    def perform(self, request):
        form = ElectLeadersForm(request.POST)
        back = request.POST.get("next", "")
        if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
            back = "console:brokers"  # the topic page sends its own address; nothing else is followed
        if not form.is_valid():
            messages.error(request, "Choose an election type.")
            return redirect(back)
        with self.audited_change() as change:
            results = election.elect_leaders(form.cleaned_data["election_type"], self.targets())
            change.before, change.after = election.audit_states(results)
        elected = [r for r in results if r.error is None]
        failed = [f"{r.topic}-{r.partition}: {r.error}" for r in results if r.error is not None]
        messages.success(request, f"Elected a new leader for {len(elected)} partition(s)."
                         + (f" Not elected: {'; '.join(failed)}." if failed else ""))
        return redirect(back)


class GroupListView(ViewerRequiredMixin, TemplateView):
    template_name = "console/groups.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        try:
            groups = GroupService.connected().list_groups()
        except KafkaApiError as e:
            return {**context, "error": e}
        if query := self.request.GET.get("q", "").strip():
            groups = [g for g in groups if query.lower() in g.group_id.lower()]
        evaluated = lag_client.read_json("/strom/v1/groups")
        lag = {g["group"]: g for g in evaluated["groups"]} if evaluated else None
        return {**context, "groups": groups, "rows": [(g, (lag or {}).get(g.group_id)) for g in groups],
                "lag_monitor": lag is not None}


def render_group(request, group_id: str, status: int = 200, **context):
    """The group page: state, members and lag per partition, plus the reset form (and a reset plan, if any)."""
    context.setdefault("reset_form", ResetOffsetsForm())
    try:
        group = GroupService.connected().describe_group(group_id)
    except KafkaApiError as e:
        return render(request, "console/group_detail.html", {"group_id": group_id, "error": e}, status=e.status)
    evaluation = lag_client.read_json(f"/strom/v1/groups/{quote(group_id, safe='')}")
    return render(request, "console/group_detail.html",
                  {"group_id": group_id, "group": group, "evaluation": evaluation, **context}, status=status)


class GroupDetailView(ViewerRequiredMixin, View):
    """One group as `kafka-consumer-groups --describe` shows it."""

    def get(self, request, group_id: str):
        return render_group(request, group_id)


class GroupResetOffsetsView(ActionView):
    """Preview (mode=preview, changes nothing) or execute (mode=execute) an offset reset; both need the
    operator role, only executions are recorded."""

    action = actions.RESET_OFFSETS

    def audit_target(self) -> str:
        return f"group:{self.kwargs['group_id']}"

    def perform(self, request, group_id: str):
        form = ResetOffsetsForm(request.POST)
        if not form.is_valid():
            return render_group(request, group_id, status=400, reset_form=form)
        scope, spec = form.cleaned_data["scope"], form.cleaned_data["reset_spec"]
        if request.POST.get("mode") != "execute":
            try:
                plan = GroupService.connected().reset_offsets(group_id, scope, spec, execute=False)
            except KafkaApiError as e:
                return render_group(request, group_id, status=e.status, reset_form=form, reset_error=e)
            return render_group(request, group_id, reset_form=form, plan=plan)
        try:
            with self.audited_change() as change:
                plan = GroupService.connected().reset_offsets(group_id, scope, spec, execute=True)
                change.before, change.after = plan.audit_states()
        except KafkaApiError as e:
            messages.error(request, f"Offsets not reset: {e.message}")
        else:
            messages.success(request, f"Reset the offsets of {len(plan.rows)} partition(s) of group '{group_id}' "
                                      f"({spec.kind}).")
        return redirect("console:group", group_id=group_id)


class GroupDeleteView(ActionView):
    action = actions.DELETE_CONSUMER_GROUP

    def audit_target(self) -> str:
        return f"group:{self.kwargs['group_id']}"

    def perform(self, request, group_id: str):
        if request.POST.get("confirm") != "yes":
            messages.error(request, "Tick the box to confirm the deletion.")
            return redirect("console:group", group_id=group_id)
        try:
            with self.audited_change() as change:
                change.before = {"offsets": GroupService.connected().delete_group(group_id)}
        except KafkaApiError as e:
            messages.error(request, f"Group not deleted: {e.message}")
            return redirect("console:group", group_id=group_id)
        messages.success(request, f"Deleted consumer group '{group_id}' and its committed offsets.")
        return redirect("console:groups")


class AuditLogView(ViewerRequiredMixin, ListView):
    """Every change and refused or failed attempt, newest first, filtered by actor, action, target, source,
    result and time; the same filters download as CSV."""

    template_name = "console/audit.html"
    context_object_name = "entries"
    paginate_by = 50

    def get_queryset(self):
        self.filterset = AuditEntryFilterSet(self.request.GET, queryset=AuditEntry.objects.all())
        return self.filterset.qs if self.filterset.is_valid() else AuditEntry.objects.none()

    def get_context_data(self, **kwargs):
        query = self.request.GET.copy()
        query.pop("page", None)
        return super().get_context_data(filter=self.filterset, query=query.urlencode(),
                                         actions=sorted(actions.ACTIONS), **kwargs)


CSV_COLUMNS = ("at", "actor", "address", "client_id", "source", "action", "target", "result", "detail", "before",
               "after")


def _csv_row(entry: AuditEntry) -> list[str]:
    values = {column: getattr(entry, column) for column in CSV_COLUMNS}
    values["at"] = entry.at.isoformat()
    values["before"], values["after"] = (json.dumps(entry.before, cls=DjangoJSONEncoder),
                                         json.dumps(entry.after, cls=DjangoJSONEncoder))
    return [values[column] for column in CSV_COLUMNS]


class _Echo:
    """A file for csv.writer whose write() returns the line, so rows can be streamed."""

    def write(self, value: str) -> str:
        return value


class AuditExportView(ViewerRequiredMixin, View):
    """The audit log as CSV (the page's filters apply), newest first, streamed; before/after as JSON."""

    def get(self, request):
        filterset = AuditEntryFilterSet(request.GET, queryset=AuditEntry.objects.all())
        if not filterset.is_valid():
            return render(request, "console/refused.html", {"reason": f"Bad filter: {filterset.errors.as_text()}"},
                          status=400)
        writer = csv.writer(_Echo())
        rows = itertools.chain([CSV_COLUMNS], map(_csv_row, filterset.qs.iterator()))
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
        return StreamingHttpResponse((writer.writerow(row) for row in rows), content_type="text/csv",
                                     headers={"Content-Disposition": f'attachment; filename="strom-audit-{stamp}.csv"'})


def render_tokens(request, form: TokenForm, status: int = 200, **context):
    """The token page: the user's tokens (admins: everyone's) and the creation form."""
    everyone = checks.refusal(request.user, actions.REVOKE_USER_TOKEN) is None
    shown = ApiToken.objects.select_related("user")
    if not everyone:
        shown = shown.filter(user=request.user)
    return render(request, "console/tokens.html", {"form": form, "tokens": shown, "everyone": everyone,
                                                   "now": datetime.datetime.now(datetime.UTC), **context},
                  status=status)


class TokenListView(ViewerRequiredMixin, View):
    """Your API tokens (admins see everyone's), and the form to create one."""

    def get(self, request):
        return render_tokens(request, TokenForm())


class TokenCreateView(LoginRequiredMixin, View):
    """Create a token (checked and audited by `access.tokens`); it is shown once, on this answer."""

    http_method_names = ["post"]

    def post(self, request):
        form = TokenForm(request.POST)
        if not form.is_valid():
            return render_tokens(request, form, status=400)
        days = form.cleaned_data["expires_in_days"]
        try:
            token, secret = tokens.create_token(actor_of(request), Source.CONSOLE, form.cleaned_data["name"],
                                                None if days is None else datetime.timedelta(days=days))
        except checks.ActionRefused as refused:
            return refused_response(request, refused.reason)
        except ValidationError as invalid:
            form.add_error(None, invalid)
            return render_tokens(request, form, status=400)
        return render_tokens(request, TokenForm(), created=token, secret=secret)


class TokenRevokeView(LoginRequiredMixin, View):
    """Revoke a token: one's own, or (admins) anyone's; checked and audited by `access.tokens`."""

    http_method_names = ["post"]

    def post(self, request):
        token = ApiToken.objects.select_related("user").filter(digest=request.POST.get("token", "")).first()
        if token is None:
            raise Http404("No such token.")
        try:
            tokens.revoke_token(actor_of(request), Source.CONSOLE, token)
        except checks.ActionRefused as refused:
            return refused_response(request, refused.reason)
        messages.success(request, f"Revoked token '{token.name}' of {token.user.get_username()}.")
        return redirect("console:tokens")
