from rest_framework import viewsets

from ..models import ClusterHealthSnapshot
from .serializers import ClusterHealthSnapshotSerializer


class ClusterHealthSnapshotViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = ClusterHealthSnapshot.objects.all()
    serializer_class = ClusterHealthSnapshotSerializer
    filterset_fields = {"taken_at": ["gte", "lte"]}
    ordering_fields = ("taken_at",)
