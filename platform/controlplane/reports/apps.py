from django.apps import AppConfig


class ReportsConfig(AppConfig):
    name = "controlplane.reports"
    label = "reports"
