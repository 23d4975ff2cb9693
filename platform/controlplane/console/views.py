"""Server-rendered console pages; all require login. They read the metadata store, and the consumer-group pages
read the cluster through `controlplane.groups.services` (an unreachable cluster is shown, never hidden)."""

from django.contrib.auth.mixins import LoginRequiredMixin
from django.db.models import Count
from django.views.generic import ListView, TemplateView

from controlplane.cluster.models import Broker, ControllerState
from controlplane.core.errors import KafkaApiError
from controlplane.groups.services import GroupService
from controlplane.health.models import ClusterHealthSnapshot
from controlplane.health.snapshot import partition_problems, running_broker_ids
from controlplane.topics.models import Topic


class OverviewView(LoginRequiredMixin, TemplateView):
    template_name = "console/overview.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        running = running_broker_ids()
        partition_count, problems = partition_problems(running)
        context.update(
            brokers=Broker.objects.all(),
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


class BrokerListView(LoginRequiredMixin, ListView):
    model = Broker
    template_name = "console/brokers.html"
    context_object_name = "brokers"


class TopicListView(LoginRequiredMixin, ListView):
    template_name = "console/topics.html"
    context_object_name = "topics"
    paginate_by = 100

    def get_queryset(self):
        queryset = (Topic.objects.annotate(partition_count=Count("partitions")).order_by("name")
                    .prefetch_related("partitions"))
        if query := self.request.GET.get("q", "").strip():
            queryset = queryset.filter(name__icontains=query)
        return queryset


class GroupListView(LoginRequiredMixin, TemplateView):
    template_name = "console/groups.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        try:
            groups = GroupService.connected().list_groups()
        except KafkaApiError as e:
            return {**context, "error": e}
        if query := self.request.GET.get("q", "").strip():
            groups = [g for g in groups if query.lower() in g.group_id.lower()]
        return {**context, "groups": groups}


class GroupDetailView(LoginRequiredMixin, TemplateView):
    """One group: state, members and lag per partition, as `kafka-consumer-groups --describe` shows them."""

    template_name = "console/group_detail.html"

    def get(self, request, group_id: str):
        try:
            group = GroupService.connected().describe_group(group_id)
        except KafkaApiError as e:
            return self.render_to_response(self.get_context_data(group_id=group_id, error=e), status=e.status)
        return self.render_to_response(self.get_context_data(group_id=group_id, group=group))


class UnavailableSectionView(LoginRequiredMixin, TemplateView):
    """A section whose feature has not landed yet; says so plainly instead of faking content."""

    template_name = "console/unavailable.html"
    section = ""

    def get_context_data(self, **kwargs):
        return super().get_context_data(section=self.section, **kwargs)
