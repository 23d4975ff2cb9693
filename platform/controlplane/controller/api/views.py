from dataclasses import asdict

from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import ParseError
from rest_framework.response import Response
from rest_framework.views import APIView

from controlplane.access.actions import Action
from controlplane.access.rest import ActionViewMixin

from .. import election
from .serializers import ElectLeadersResultSerializer, ElectLeadersSerializer


class ElectLeadersView(ActionViewMixin, APIView):
    """Kafka's ElectLeaders: preferred (operator role) or unclean (admin role) leader election for some or all
    partitions."""

    def required_action(self, request) -> Action:
        return election.election_action(self._body().get("election_type", election.PREFERRED))

    def audit_target(self) -> str:
        partitions = self._body().get("partitions")
        if not isinstance(partitions, list):
            return election.audit_target(None)
        return election.audit_target([(p.get("topic"), p.get("partition")) for p in partitions if isinstance(p, dict)])

    def _body(self) -> dict:
        """The request body as far as it is an object (it is validated later, once the permission is checked)."""
        try:
            data = self.request.data
        except ParseError:
            return {}
        return data if isinstance(data, dict) else {}

    @extend_schema(request=ElectLeadersSerializer, responses=ElectLeadersResultSerializer)
    def post(self, request):
        serializer = ElectLeadersSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        partitions = serializer.validated_data["partitions"]
        targets = None if partitions is None else [(p["topic"], p["partition"]) for p in partitions]
        with self.audited_change() as change:
            results = election.elect_leaders(serializer.validated_data["election_type"], targets)
            change.before, change.after = election.audit_states(results)
        return Response(ElectLeadersResultSerializer({"results": [asdict(r) for r in results]}).data)
