from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from controlplane.access import actions
from controlplane.access.rest import ActionViewMixin
from controlplane.core.errors import KafkaApiError
from controlplane.core.serializers import ErrorSerializer, one_line

from ..services import GroupService
from .serializers import (
    GroupDetailSerializer,
    GroupSummarySerializer,
    ResetOffsetsRequestSerializer,
    ResetPlanSerializer,
)

_GROUP_ID = OpenApiParameter("group_id", str, OpenApiParameter.PATH, description="the consumer group id")
_UNREACHABLE = OpenApiResponse(ErrorSerializer, description="the cluster or the group's coordinator is unreachable")
_NOT_FOUND = OpenApiResponse(ErrorSerializer, description="no such group (GROUP_ID_NOT_FOUND)")


@extend_schema_view(
    list=extend_schema(summary="Consumer groups with state, protocol type and member count (kafka-consumer-groups "
                               "--list)", responses={200: GroupSummarySerializer(many=True), 503: _UNREACHABLE}),
    retrieve=extend_schema(summary="A group's members and, per partition, committed offset, log end offset, lag and "
                                   "owner (--describe)", parameters=[_GROUP_ID],
                           responses={200: GroupDetailSerializer, 404: _NOT_FOUND, 503: _UNREACHABLE}),
    destroy=extend_schema(summary="Delete an inactive group and its offsets (--delete)", parameters=[_GROUP_ID],
                          responses={204: None, 404: _NOT_FOUND, 409: ErrorSerializer, 503: _UNREACHABLE}),
)
class GroupViewSet(ActionViewMixin, viewsets.GenericViewSet):
    """Consumer groups, read from the brokers over the Kafka protocol (the control plane as an admin client).
    Resets (also dry runs) need the operator role, and so do deletions."""

    lookup_field = "group_id"
    lookup_value_regex = r"[^/]+"
    filter_backends = ()
    mutations = {"destroy": actions.DELETE_CONSUMER_GROUP, "reset_offsets": actions.RESET_OFFSETS}

    def audit_target(self) -> str:
        return f"group:{self.kwargs['group_id']}"

    def handle_exception(self, exc):
        if isinstance(exc, KafkaApiError):
            return Response(exc.as_json(), status=exc.status)
        return super().handle_exception(exc)

    def list(self, request):
        groups = self.paginate_queryset(GroupService.connected().list_groups())
        return self.get_paginated_response(GroupSummarySerializer(groups, many=True).data)

    def retrieve(self, request, group_id: str):
        return Response(GroupDetailSerializer(GroupService.connected().describe_group(group_id)).data)

    def destroy(self, request, group_id: str):
        with self.audited_change() as change:
            change.before = {"offsets": GroupService.connected().delete_group(group_id)}
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="Plan an offset reset (dry run, the default) or execute it (--reset-offsets)",
        description="Kafka's reset specs: to-earliest, to-latest, to-datetime, by-duration, shift-by, to-offset. "
                    "New offsets are clamped to [log start, log end]. Executing is refused (409) while the group "
                    "has active members. For a group that does not exist yet, offsets can be set on named topics.",
        parameters=[_GROUP_ID], request=ResetOffsetsRequestSerializer,
        responses={200: ResetPlanSerializer,
                   400: OpenApiResponse(ErrorSerializer, description="bad scope, spec or value (INVALID_REQUEST), "
                                                                     "unknown topic or partition"),
                   404: _NOT_FOUND, 409: OpenApiResponse(ErrorSerializer, description="the group is active"),
                   503: _UNREACHABLE})
    @action(detail=True, methods=["post"], url_path="reset-offsets")
    def reset_offsets(self, request, group_id: str):
        body = ResetOffsetsRequestSerializer(data=request.data)
        if not body.is_valid():
            raise KafkaApiError("INVALID_REQUEST", one_line(body.errors), 400)
        service, scope, spec = GroupService.connected(), body.validated_data["scope"], body.validated_data["reset_spec"]
        if body.validated_data["dry_run"]:
            plan = service.reset_offsets(group_id, scope, spec, execute=False)
        else:
            with self.audited_change() as change:
                plan = service.reset_offsets(group_id, scope, spec, execute=True)
                change.before, change.after = plan.audit_states()
        return Response(ResetPlanSerializer(plan).data)
