from django.apps import AppConfig


class LagConfig(AppConfig):
    name = "controlplane.lag"
    label = "lag"
    verbose_name = "consumer-lag monitor"
