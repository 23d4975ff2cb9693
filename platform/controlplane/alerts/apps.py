from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "controlplane.alerts"
    label = "alerts"
    verbose_name = "alerting: webhook endpoints, deliveries, lag rules and silences"
