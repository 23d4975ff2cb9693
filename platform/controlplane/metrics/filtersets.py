
from controlplane.core.filters import FilterSet

from .models import BrokerMetricPoint, TopicMetricPoint


class BrokerMetricPointFilterSet(FilterSet):
    class Meta:
        model = BrokerMetricPoint
        fields = {"resolution": ["exact"], "broker_id": ["exact", "in"], "start": ["gte", "lt"]}


class TopicMetricPointFilterSet(FilterSet):
    class Meta:
        model = TopicMetricPoint
        fields = {"resolution": ["exact"], "topic": ["exact", "in", "startswith"], "start": ["gte", "lt"]}
