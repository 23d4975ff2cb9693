from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from controlplane.access.api.views import ObtainTokenView
from controlplane.alerts.api.views import (
    DeliveryViewSet,
    LagThresholdViewSet,
    SilenceViewSet,
    WebhookEndpointViewSet,
)
from controlplane.audit.api.views import AuditEntryViewSet
from controlplane.cluster.api.views import BrokerViewSet
from controlplane.controller.api.views import (
    ElectLeadersView,
    ProposalView,
    ReassignmentExecutionViewSet,
    ReassignmentViewSet,
    SkewView,
)
from controlplane.groups.api.views import GroupViewSet
from controlplane.health.api.views import ClusterHealthSnapshotViewSet
from controlplane.lag.views import (
    LagGroupsView,
    LagGroupView,
    LagIncidentViewSet,
    LagStatusView,
    LagTopicGroupsView,
)
from controlplane.metrics.api.views import BrokerMetricPointViewSet, TopicMetricPointViewSet
from controlplane.reports.api.views import ReportRunViewSet, ReportScheduleViewSet
from controlplane.topics.api.views import PartitionViewSet, TopicViewSet

router = DefaultRouter()
router.include_format_suffixes = False
"""No `<pk>.<format>` routes: `DELETE /api/alerts/endpoints/1.6/` would reach a view with the format "6" and be
answered 404 by content negotiation before the permission check (`?format=json` still works)."""
router.register("brokers", BrokerViewSet)
router.register("topics", TopicViewSet, basename="topic")
router.register("partitions", PartitionViewSet)
router.register("health-snapshots", ClusterHealthSnapshotViewSet)
router.register("groups", GroupViewSet, basename="group")
router.register("metrics/brokers", BrokerMetricPointViewSet)
router.register("metrics/topics", TopicMetricPointViewSet)
router.register("audit", AuditEntryViewSet)
router.register("reassignments/executions", ReassignmentExecutionViewSet)
router.register("reassignments", ReassignmentViewSet, basename="reassignment")
router.register("reports/runs", ReportRunViewSet)
router.register("reports/schedules", ReportScheduleViewSet, basename="report-schedule")
router.register("alerts/endpoints", WebhookEndpointViewSet)
router.register("alerts/deliveries", DeliveryViewSet)
router.register("alerts/thresholds", LagThresholdViewSet)
router.register("alerts/silences", SilenceViewSet)
router.register("lag/incidents", LagIncidentViewSet)

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    path("token/", ObtainTokenView.as_view(), name="token"),
    path("elect-leaders/", ElectLeadersView.as_view(), name="elect-leaders"),
    path("proposals/", ProposalView.as_view(), name="proposals"),
    path("skew/", SkewView.as_view(), name="skew"),
    path("lag/status/", LagStatusView.as_view(), name="lag-status"),
    path("lag/groups/", LagGroupsView.as_view(), name="lag-groups"),
    path("lag/groups/<str:group>/", LagGroupView.as_view(), name="lag-group"),
    path("lag/topics/<str:topic>/groups/", LagTopicGroupsView.as_view(), name="lag-topic-groups"),
    path("", include(router.urls)),
]
