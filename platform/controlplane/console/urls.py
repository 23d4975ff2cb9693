from django.urls import path

from . import views

app_name = "console"

urlpatterns = [
    path("", views.OverviewView.as_view(), name="overview"),
    path("brokers/", views.BrokerListView.as_view(), name="brokers"),
    path("topics/", views.TopicListView.as_view(), name="topics"),
    path("groups/", views.GroupListView.as_view(), name="groups"),
    path("groups/<path:group_id>/", views.GroupDetailView.as_view(), name="group"),
    path("reassignments/", views.UnavailableSectionView.as_view(section="Reassignments"), name="reassignments"),
    path("alerts/", views.UnavailableSectionView.as_view(section="Alerts"), name="alerts"),
    path("reports/", views.UnavailableSectionView.as_view(section="Reports"), name="reports"),
]
