from django.apps import AppConfig


class HealthConfig(AppConfig):
    name = "controlplane.health"
    label = "health"
