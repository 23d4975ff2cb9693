from django.urls import path

from . import views

app_name = "brokerapi"

urlpatterns = [
    path("brokers/register", views.register_broker, name="register"),
    path("brokers/<int:broker_id>/heartbeat", views.broker_heartbeat, name="heartbeat"),
    path("brokers/<int:broker_id>/session", views.broker_session, name="session"),
    path("metadata", views.metadata_image, name="metadata"),
    path("metadata/changes", views.metadata_changes, name="metadata-changes"),
    path("partitions/alter", views.alter_partition, name="alter-partition"),
    path("topics", views.topics_create, name="topics"),
    path("topics/<str:name>", views.topic_detail, name="topic"),
    path("topics/<str:name>/partitions", views.topic_partitions, name="topic-partitions"),
    path("topics/<str:name>/configs", views.topic_configs, name="topic-configs"),
    path("elect-leaders", views.elect_leaders, name="elect-leaders"),
    path("producer-ids", views.producer_ids, name="producer-ids"),
]
