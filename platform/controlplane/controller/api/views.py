from dataclasses import asdict

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import election
from .serializers import ElectLeadersResultSerializer, ElectLeadersSerializer


class ElectLeadersView(APIView):
    """Kafka's ElectLeaders: preferred (or unclean) leader election for some or all partitions."""

    @extend_schema(request=ElectLeadersSerializer, responses=ElectLeadersResultSerializer)
    def post(self, request):
        serializer = ElectLeadersSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        partitions = serializer.validated_data["partitions"]
        targets = None if partitions is None else [(p["topic"], p["partition"]) for p in partitions]
        results = election.elect_leaders(serializer.validated_data["election_type"], targets)
        return Response(ElectLeadersResultSerializer({"results": [asdict(r) for r in results]}).data)
