from django.urls import path

from controlplane.reports import views as reports

from . import alerts, topic_views, views

app_name = "console"

urlpatterns = [
    path("", views.OverviewView.as_view(), name="overview"),
    path("brokers/", views.BrokerListView.as_view(), name="brokers"),
    path("brokers/elect-leaders/", views.ElectLeadersView.as_view(), name="elect-leaders"),
    path("topics/", topic_views.TopicListView.as_view(), name="topics"),
    path("topics/new/", topic_views.TopicNewView.as_view(), name="topic-new"),
    path("topics/create/", topic_views.TopicCreateView.as_view(), name="topic-create"),
    path("topics/<str:name>/configs/", topic_views.TopicConfigView.as_view(), name="topic-configs"),
    path("topics/<str:name>/partitions/", topic_views.TopicPartitionsView.as_view(), name="topic-partitions"),
    path("topics/<str:name>/messages/", topic_views.TopicMessagesView.as_view(), name="topic-messages"),
    path("topics/<str:name>/produce/", topic_views.TopicProduceView.as_view(), name="topic-produce"),
    path("topics/<str:name>/delete/", topic_views.TopicDeleteView.as_view(), name="topic-delete"),
    path("topics/<str:name>/", topic_views.TopicDetailView.as_view(), name="topic"),
    path("groups/", views.GroupListView.as_view(), name="groups"),
    path("groups/<path:group_id>/reset-offsets/", views.GroupResetOffsetsView.as_view(), name="group-reset-offsets"),
    path("groups/<path:group_id>/delete/", views.GroupDeleteView.as_view(), name="group-delete"),
    path("groups/<path:group_id>/", views.GroupDetailView.as_view(), name="group"),
    path("reassignments/", views.UnavailableSectionView.as_view(section="Reassignments"), name="reassignments"),
    path("alerts/", alerts.AlertsView.as_view(), name="alerts"),
    path("alerts/endpoints/new/", alerts.EndpointCreateView.as_view(), name="alert-endpoint-create"),
    path("alerts/endpoints/<int:pk>/", alerts.EndpointPage.as_view(), name="alert-endpoint"),
    path("alerts/endpoints/<int:pk>/edit/", alerts.EndpointUpdateView.as_view(), name="alert-endpoint-edit"),
    path("alerts/endpoints/<int:pk>/test/", alerts.EndpointTestView.as_view(), name="alert-endpoint-test"),
    path("alerts/endpoints/<int:pk>/delete/", alerts.EndpointDeleteView.as_view(), name="alert-endpoint-delete"),
    path("alerts/thresholds/new/", alerts.ThresholdCreateView.as_view(), name="alert-threshold-create"),
    path("alerts/thresholds/<int:pk>/delete/", alerts.ThresholdDeleteView.as_view(), name="alert-threshold-delete"),
    path("alerts/silences/new/", alerts.SilenceCreateView.as_view(), name="alert-silence-create"),
    path("alerts/silences/<int:pk>/delete/", alerts.SilenceDeleteView.as_view(), name="alert-silence-delete"),
    path("alerts/deliveries/<int:pk>/retry/", alerts.DeliveryRetryView.as_view(), name="alert-delivery-retry"),
    path("reports/", reports.ReportListView.as_view(), name="reports"),
    path("reports/plotly.min.js", reports.PlotlyScriptView.as_view(), name="report-plotly"),
    path("reports/<str:report>/run/", reports.RunNowView.as_view(), name="report-run-now"),
    path("reports/<str:report>/schedule/", reports.ScheduleView.as_view(), name="report-schedule"),
    path("reports/runs/<int:pk>/", reports.RunDetailView.as_view(), name="report-run"),
    path("reports/runs/<int:pk>/progress/", reports.RunProgressView.as_view(), name="report-run-progress"),
    path("reports/runs/<int:pk>/cancel/", reports.CancelRunView.as_view(), name="report-run-cancel"),
    path("reports/runs/<int:pk>/csv/<str:table>/", reports.RunCsvView.as_view(), name="report-run-csv"),
    path("audit/", views.AuditLogView.as_view(), name="audit"),
    path("audit/export.csv", views.AuditExportView.as_view(), name="audit-export"),
    path("tokens/", views.TokenListView.as_view(), name="tokens"),
    path("tokens/new/", views.TokenCreateView.as_view(), name="token-create"),
    path("tokens/revoke/", views.TokenRevokeView.as_view(), name="token-revoke"),
]
