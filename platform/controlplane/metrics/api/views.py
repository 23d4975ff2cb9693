from rest_framework import viewsets

from ..filtersets import BrokerMetricPointFilterSet, TopicMetricPointFilterSet
from ..models import BrokerMetricPoint, TopicMetricPoint
from .serializers import BrokerMetricPointSerializer, TopicMetricPointSerializer


class BrokerMetricPointViewSet(viewsets.ReadOnlyModelViewSet):
    """Per-broker traffic and gauges per bucket (`resolution` 10, 60 or 3600 s)."""

    queryset = BrokerMetricPoint.objects.order_by("resolution", "start", "broker_id")
    serializer_class = BrokerMetricPointSerializer
    filterset_class = BrokerMetricPointFilterSet
    ordering_fields = ("start",)


class TopicMetricPointViewSet(viewsets.ReadOnlyModelViewSet):
    """Per-topic traffic and size per bucket (`resolution` 10, 60 or 3600 s)."""

    queryset = TopicMetricPoint.objects.order_by("resolution", "start", "topic")
    serializer_class = TopicMetricPointSerializer
    filterset_class = TopicMetricPointFilterSet
    ordering_fields = ("start",)
