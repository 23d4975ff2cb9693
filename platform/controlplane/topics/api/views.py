from django.db.models import Count
from rest_framework import viewsets

from ..filtersets import PartitionFilterSet, TopicFilterSet
from ..models import Partition, Topic
from .serializers import PartitionSerializer, TopicSerializer


class TopicViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = (Topic.objects.annotate(partition_count=Count("partitions")).order_by("name")
                .prefetch_related("partitions"))
    serializer_class = TopicSerializer
    filterset_class = TopicFilterSet
    lookup_field = "name"
    lookup_value_regex = r"[a-zA-Z0-9._-]+"
    ordering_fields = ("name", "created_at", "partition_count")


class PartitionViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Partition.objects.select_related("topic")
    serializer_class = PartitionSerializer
    filterset_class = PartitionFilterSet
    ordering_fields = ("partition", "leader", "leader_epoch")
