from django.apps import AppConfig


class BrokerApiConfig(AppConfig):
    name = "controlplane.brokerapi"
    label = "brokerapi"
