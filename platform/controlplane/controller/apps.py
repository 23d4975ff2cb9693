from django.apps import AppConfig


class ControllerConfig(AppConfig):
    name = "controlplane.controller"
    label = "controller"
