from rest_framework import viewsets

from ..filtersets import BrokerFilterSet
from ..models import Broker
from .serializers import BrokerSerializer


class BrokerViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Broker.objects.all()
    serializer_class = BrokerSerializer
    filterset_class = BrokerFilterSet
    lookup_field = "broker_id"
    ordering_fields = ("broker_id", "state")  # not last_heartbeat: liveness lives in another database
