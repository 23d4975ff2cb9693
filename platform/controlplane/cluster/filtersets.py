import django_filters

from .models import Broker


class BrokerFilterSet(django_filters.FilterSet):
    class Meta:
        model = Broker
        fields = {"broker_id": ["exact", "in"], "state": ["exact"], "rack": ["exact"]}
