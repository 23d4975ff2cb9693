"""The console's topic pages: the list (one query per page, `topics.listing`), creation, and a topic's detail with
its changes — configs, added partitions, deletion — each an `ActionView` calling `topics.services` as the REST API
and `manage.py topics` do. Preferred-leader election posts to the brokers page's `ElectLeadersView`."""

import datetime
import zoneinfo

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views import View

from controlplane.access import actions, checks
from controlplane.access.console import ActionView, ViewerRequiredMixin
from controlplane.core.errors import KafkaApiError
from controlplane.lag import client as lag_client
from controlplane.topics import services
from controlplane.topics.describe import config_entries, partition_rows
from controlplane.topics.listing import ORDERINGS, SortedTopics, topic_summaries
from controlplane.topics.message_browser import parse_browse_request, produce
from controlplane.topics.message_format import DECODINGS, message_row
from controlplane.topics.models import Partition, Topic
from kafkaspec import topic_config, topic_names

PAGE_SIZE = 100
COLUMNS = [("name", "Name"), ("partition_count", "Partitions"), ("replication_factor", "Replication factor"),
           ("under_replicated", "Under-replicated"), ("size_bytes", "Size"), ("messages", "Messages"),
           ("produce_rate", "Produce rate (msg/s)")]


class TopicListView(ViewerRequiredMixin, View):
    """Sorted by any column, filtered by a name substring, 100 a page; sizes and rates from the metrics rollups."""

    def get(self, request):
        query = request.GET.get("q", "").strip()
        ordering = request.GET.get("sort", "name")
        if ordering.removeprefix("-") not in ORDERINGS:
            ordering = "name"
        page = Paginator(SortedTopics(topic_summaries(query, ordering)), PAGE_SIZE).get_page(request.GET.get("page"))
        columns = [(key, label, ("-" + key) if ordering == key else key, ordering.removeprefix("-") == key,
                    ordering.startswith("-")) for key, label in COLUMNS]
        return render(request, "console/topics.html", {"page": page, "topics": page.object_list, "q": query,
                                                       "sort": ordering, "columns": columns})


def render_create(request, status: int = 200, error: KafkaApiError | None = None):
    definitions = [(name, d.type.value, d.render(d.default), d.doc, request.POST.get(f"config.{name}", ""))
                   for name, d in sorted(topic_config.TOPIC_CONFIGS.items())]
    return render(request, "console/topic_create.html",
                  {"definitions": definitions, "error": error, "max_name_length": topic_names.MAX_NAME_LENGTH,
                   "values": request.POST}, status=status)


class TopicNewView(ViewerRequiredMixin, View):
    """The creation form: name (checked as you type), partitions, replication factor and every topic config."""

    def get(self, request):
        return render_create(request)


class TopicCreateView(ActionView):
    action = actions.CREATE_TOPICS

    def audit_target(self) -> str:
        return f"topic:{self.request.POST.get('name', '').strip()}"

    def perform(self, request):
        name = request.POST.get("name", "").strip()
        configs = {key.removeprefix("config."): value.strip() for key, value in request.POST.items()
                   if key.startswith("config.") and value.strip()}
        try:
            partitions = int(request.POST.get("partitions") or services.DEFAULT)
            replication_factor = int(request.POST.get("replication_factor") or services.DEFAULT)
        except ValueError:
            return render_create(request, 400, KafkaApiError("INVALID_REQUEST", "Partitions and replication factor "
                                                                                "are whole numbers."))
        try:
            with self.audited_change() as change:
                services.create_topic(name, partitions, replication_factor, configs=configs)
                change.after = services.audit_state(name)
        except KafkaApiError as e:
            return render_create(request, e.status, e)
        messages.success(request, f"Created topic '{name}'.")
        return redirect("console:topic", name=name)


class TopicDetailView(ViewerRequiredMixin, View):
    """Partitions (leader, replicas in order, ISR, flags, log offsets), every config with its source, and the
    consumer groups reading the topic with their lag on it (one request to the lag monitor, whatever the number of
    groups; None when it does not answer)."""

    def get(self, request, name: str):
        topic = topic_summaries().filter(name=name).first()
        if topic is None:
            raise Http404(f"No topic '{name}'.")
        consumers = lag_client.read_json(lag_client.topic_groups_path(name))
        return render(request, "console/topic_detail.html",
                      {"topic": topic, "partitions": partition_rows(topic), "configs": config_entries(topic),
                       "consumers": consumers})


class _TopicAction(ActionView):
    def audit_target(self) -> str:
        return f"topic:{self.kwargs['name']}"

    def change(self, request, name: str, apply, done: str):
        """Apply the change audited; show what happened on the topic's page."""
        try:
            with self.audited_change() as change:
                change.before = services.audit_state(name)
                apply()
                change.after = services.audit_state(name)
        except KafkaApiError as e:
            messages.error(request, f"{e.error}: {e.message}")
        else:
            messages.success(request, done)
        return redirect("console:topic", name=name)


class TopicConfigView(_TopicAction):
    """Set one config (Kafka's validation), or with `reset` delete its override."""

    action = actions.ALTER_CONFIGS

    def perform(self, request, name: str):
        config, value = request.POST.get("config", ""), request.POST.get("value", "").strip()
        if "reset" in request.POST:
            return self.change(request, name, lambda: services.alter_configs(name, delete=[config]),
                               f"{config} is back to its default.")
        return self.change(request, name, lambda: services.alter_configs(name, {config: value}),
                           f"Set {config}={value}.")


class TopicPartitionsView(_TopicAction):
    action = actions.CREATE_PARTITIONS

    def perform(self, request, name: str):
        try:
            count = int(request.POST.get("count", ""))
        except ValueError:
            messages.error(request, "INVALID_PARTITIONS: the new number of partitions is a whole number.")
            return redirect("console:topic", name=name)
        return self.change(request, name, lambda: services.create_partitions(name, count),
                           f"The topic now has {count} partitions.")


class TopicDeleteView(ActionView):
    """Deletion needs the topic's name typed again."""

    action = actions.DELETE_TOPICS

    def audit_target(self) -> str:
        return f"topic:{self.kwargs['name']}"

    def perform(self, request, name: str):
        if request.POST.get("confirm_name") != name:
            messages.error(request, f"Type the topic's name ({name}) to confirm the deletion.")
            return redirect("console:topic", name=name)
        try:
            with self.audited_change() as change:
                change.before = services.audit_state(name)
                services.delete_topic(name)
        except KafkaApiError as e:
            messages.error(request, f"{e.error}: {e.message}")
            return redirect("console:topic", name=name) if Topic.objects.filter(name=name).exists() \
                else redirect("console:topics")
        messages.success(request, f"Deleted topic '{name}'.")
        return redirect("console:topics")


class TopicMessagesView(ViewerRequiredMixin, View):
    """The message browser: the same request as `GET /api/topics/<name>/messages/` (seek, order, filters, decode,
    cursor), shown as a table with times in the user's time zone (`tz`, set by the browser); export links download
    the same page from the REST API. Viewers see the reason instead of message contents."""

    def get(self, request, name: str):
        if not Topic.objects.filter(name=name).exists():
            raise Http404(f"No topic '{name}'.")
        context = {"topic": name, "params": request.GET, "decodings": DECODINGS,
                   "partitions": list(Partition.objects.filter(topic__name=name).order_by("partition")
                                      .values_list("partition", flat=True))}
        if reason := checks.refusal(request.user, actions.READ_MESSAGES):
            return render(request, "console/topic_messages.html", {**context, "refusal": reason})
        if "start" not in request.GET:
            return render(request, "console/topic_messages.html", context)
        try:
            browse = parse_browse_request(request.GET)
            page = browse.run(name)
        except KafkaApiError as e:
            return render(request, "console/topic_messages.html", {**context, "error": e}, status=e.status)
        zone = _zone(request.GET.get("tz", ""))
        rows = [{**message_row(m, browse.decoding), "time": datetime.datetime.fromtimestamp(
                     m.timestamp_ms / 1000, zone).isoformat(timespec="milliseconds")} for m in page.messages]
        query = request.GET.copy()
        query.pop("cursor", None)
        return render(request, "console/topic_messages.html",
                      {**context, "page": page, "rows": rows, "query": query.urlencode(), "zone": zone.key})


def _zone(name: str) -> zoneinfo.ZoneInfo:
    try:
        return zoneinfo.ZoneInfo(name or "UTC")
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return zoneinfo.ZoneInfo("UTC")


class TopicProduceView(ActionView):
    """Produce one test message (key, value, headers as name=value lines, partition or by key)."""

    action = actions.PRODUCE_TEST_MESSAGES

    def audit_target(self) -> str:
        return f"topic:{self.kwargs['name']}"

    def perform(self, request, name: str):
        lines = [line for line in request.POST.get("headers", "").splitlines() if line.strip()]
        headers = [(k.strip(), v.encode()) for k, _, v in (line.partition("=") for line in lines)]
        partition = request.POST.get("partition", "").strip()
        key = request.POST.get("key", "")
        page = reverse("console:topic-messages", args=[name])
        try:
            with self.audited_change() as change:
                written = produce(name, request.POST.get("value", "").encode(), key.encode() if key else None,
                                  headers, int(partition) if partition.isdecimal() else None)
                change.after = {"partition": written.partition, "offset": written.offset}
        except KafkaApiError as e:
            messages.error(request, f"{e.error}: {e.message}")
            return redirect(page)
        messages.success(request, f"Produced to partition {written.partition} at offset {written.offset}.")
        return redirect(f"{page}?start=offset&partitions={written.partition}&offset={written.offset}")
