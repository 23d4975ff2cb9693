
from controlplane.core.filters import FilterSet

from .models import Broker


class BrokerFilterSet(FilterSet):
    class Meta:
        model = Broker
        fields = {"broker_id": ["exact", "in"], "state": ["exact"], "rack": ["exact"]}
