import django_filters

from .models import BrokerMetricPoint, TopicMetricPoint


class BrokerMetricPointFilterSet(django_filters.FilterSet):
    class Meta:
        model = BrokerMetricPoint
        fields = {"resolution": ["exact"], "broker_id": ["exact", "in"], "start": ["gte", "lt"]}


class TopicMetricPointFilterSet(django_filters.FilterSet):
    class Meta:
        model = TopicMetricPoint
        fields = {"resolution": ["exact"], "topic": ["exact", "in", "startswith"], "start": ["gte", "lt"]}
