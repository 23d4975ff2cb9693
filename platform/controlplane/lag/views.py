"""Thin views forwarding to the lag monitor (`client.forward`) after authentication (API token, Bearer or
Token, or the console's session) and the usual permission check: reads need the viewer role; Burrow's
DELETE of a group from the monitor is `manage_alerts`, audited.

- `/v3/…`: Burrow's HTTP API v3, its paths and bodies unchanged (so Burrow's clients only change the URL);
- `/metrics`: Prometheus text with Burrow's, kafka_exporter's and kafka-lag-exporter's lag families;
- `/api/lag/status`, `/api/lag/groups/`, `/api/lag/groups/<group>/`, `/api/lag/topics/<topic>/groups/`:
  Strom's JSON (in the OpenAPI schema);
- `/api/lag/incidents/`: the incidents the monitor opened and closed (from the database).
"""

import json
from urllib.parse import quote

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.authentication import SessionAuthentication
from rest_framework.views import APIView

from controlplane.access import actions
from controlplane.access.rest import ActionViewMixin

from .auth import TokenOrBearerAuthentication
from .client import MonitorUnavailable, forward, topic_groups_path
from .models import LagIncident


def _forwarded(request, path: str) -> HttpResponse:
    try:
        answer = forward(request.method, path, request.META.get("QUERY_STRING", ""),
                         "gzip" in request.META.get("HTTP_ACCEPT_ENCODING", ""))
    except MonitorUnavailable as exc:
        return HttpResponse(json.dumps({"error": True, "message": str(exc)}), status=503,
                            content_type="application/json")
    response = HttpResponse(answer.body, status=answer.status, content_type=answer.content_type)
    if answer.content_encoding:
        response["Content-Encoding"] = answer.content_encoding
    return response


class MonitorProxyView(ActionViewMixin, APIView):
    """Strom's own endpoints take the REST API's authentication; Burrow's and /metrics also `Bearer`."""


class BearerProxyView(MonitorProxyView):
    authentication_classes = [TokenOrBearerAuthentication, SessionAuthentication]


@extend_schema(exclude=True)
class BurrowView(BearerProxyView):
    """Burrow's HTTP API v3 (`/v3/kafka/<cluster>/consumer/<group>/status`, …)."""

    mutations = {"delete": actions.MANAGE_ALERTS}

    def audit_target(self) -> str:
        return f"lag-monitor:{self.request.path}"

    def get(self, request, rest: str = ""):
        return _forwarded(request, f"/v3/{quote(rest)}")

    def delete(self, request, rest: str = ""):
        with self.audited_change():
            return _forwarded(request, f"/v3/{quote(rest)}")


@extend_schema(exclude=True)
class MetricsView(BearerProxyView):
    """Prometheus exposition of the consumer-lag metrics (`?family=burrow|kafka_exporter|lag_exporter|…`)."""

    def get(self, request):
        return _forwarded(request, "/metrics")


class LagStatusView(MonitorProxyView):
    """The lag monitor's state: ready, last evaluation round, counts."""

    @extend_schema(operation_id="lag_status", responses={200: OpenApiTypes.OBJECT, 503: OpenApiTypes.OBJECT})
    def get(self, request):
        return _forwarded(request, "/strom/v1/status")


class LagGroupsView(MonitorProxyView):
    """Every evaluated consumer group: status, alert status, total lag (records), lag in seconds, open incident."""

    @extend_schema(operation_id="lag_groups_list", responses={200: OpenApiTypes.OBJECT, 503: OpenApiTypes.OBJECT})
    def get(self, request):
        return _forwarded(request, "/strom/v1/groups")


class LagGroupView(MonitorProxyView):
    """One group's evaluation: per partition status, lag, lag seconds and commit window."""

    @extend_schema(operation_id="lag_group", responses={200: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT,
                                                        503: OpenApiTypes.OBJECT})
    def get(self, request, group: str):
        return _forwarded(request, f"/strom/v1/groups/{quote(group, safe='')}")


class LagTopicGroupsView(MonitorProxyView):
    """The groups reading a topic (committed offsets or owners on it), each with its lag on that topic: records,
    seconds, the topic's worst partition status, and the group's own status."""

    @extend_schema(operation_id="lag_topic_groups", responses={200: OpenApiTypes.OBJECT, 503: OpenApiTypes.OBJECT})
    def get(self, request, topic: str):
        return _forwarded(request, topic_groups_path(topic))


class LagIncidentSerializer(serializers.ModelSerializer):
    class Meta:
        model = LagIncident
        fields = ("incident_id", "cluster", "group", "start_ms", "status", "notified_status", "notified_ms",
                  "notified", "closed_ms")


class LagIncidentViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Consumer-group incidents from OPEN to CLOSE (`closed_ms` null while open; times in ms), newest first;
    `notified`: what each endpoint (by id) was last told, `[status, ms]`."""

    queryset = LagIncident.objects.all()
    serializer_class = LagIncidentSerializer
    filterset_fields = ("group", "status", "cluster")
