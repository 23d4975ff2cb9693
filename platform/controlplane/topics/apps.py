from django.apps import AppConfig


class TopicsConfig(AppConfig):
    name = "controlplane.topics"
    label = "topics"
