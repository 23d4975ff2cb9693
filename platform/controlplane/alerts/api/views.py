"""Alerting over REST: endpoints, lag thresholds and silences (changes need `manage_alerts`, each audited),
the delivery log with its retry action, and the endpoints' send-test action."""

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from controlplane.access import actions
from controlplane.access.rest import ActionViewMixin
from monitoring.notifier.payloads import TemplateError

from .. import outbox
from ..changes import audit_state
from ..models import Delivery, LagThreshold, Silence, WebhookEndpoint
from .serializers import (
    DeliverySerializer,
    LagThresholdSerializer,
    SilenceSerializer,
    WebhookEndpointSerializer,
)

MANAGE = actions.MANAGE_ALERTS


class AuditedModelViewSet(ActionViewMixin, viewsets.ModelViewSet):
    """Create, update and delete as `manage_alerts`, each recorded with the object before and after (secrets
    left out)."""

    mutations = {"create": MANAGE, "update": MANAGE, "partial_update": MANAGE, "destroy": MANAGE}
    kind = ""

    def audit_target(self) -> str:
        key = self.kwargs.get(self.lookup_url_kwarg or self.lookup_field)
        return f"{self.kind}:{key}" if key else f"{self.kind}:new"

    def perform_create(self, serializer):
        with self.audited_change() as change:
            instance = serializer.save(**self.created_extra())
            change.after = audit_state(instance)

    def created_extra(self) -> dict:
        return {}

    def perform_update(self, serializer):
        with self.audited_change() as change:
            change.before = audit_state(serializer.instance)
            change.after = audit_state(serializer.save())

    def perform_destroy(self, instance):
        with self.audited_change() as change:
            change.before = audit_state(instance)
            instance.delete()


class WebhookEndpointViewSet(AuditedModelViewSet):
    """Webhook endpoints. The signing secret is generated on create (or given) and shown only in the create
    answer; `POST …/test/` sends a test event through the outbox."""

    queryset = WebhookEndpoint.objects.all()
    serializer_class = WebhookEndpointSerializer
    mutations = {**AuditedModelViewSet.mutations, "send_test": MANAGE}
    kind = "webhook-endpoint"

    def create(self, request, *args, **kwargs):
        response = super().create(request, *args, **kwargs)
        response.data["secret"] = WebhookEndpoint.objects.get(pk=response.data["id"]).secret
        return response

    @extend_schema(request=None, responses={202: DeliverySerializer})
    @action(detail=True, methods=["post"], url_path="test")
    def send_test(self, request, pk=None):
        endpoint = self.get_object()
        with self.audited_change() as change, transaction.atomic():
            try:
                delivery = outbox.send_test(endpoint)
            except (TemplateError, ValueError) as exc:
                raise serializers.ValidationError({"detail": f"cannot build the test body: {exc}"}) from None
            change.after = {"delivery": delivery.id, "webhook_id": delivery.webhook_id}
        return Response(DeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED)


class LagThresholdViewSet(AuditedModelViewSet):
    """Thresholds on top of Burrow's rules (records and/or seconds, per group/topic glob); the monitor applies
    edits from its next round."""

    queryset = LagThreshold.objects.all()
    serializer_class = LagThresholdSerializer
    kind = "lag-threshold"


class SilenceViewSet(AuditedModelViewSet):
    """Time-boxed silences of consumer-group announcements (group glob)."""

    queryset = Silence.objects.all()
    serializer_class = SilenceSerializer
    kind = "silence"

    def created_extra(self) -> dict:
        return {"created_by": self.request.user.get_username()}


class DeliveryViewSet(ActionViewMixin, viewsets.ReadOnlyModelViewSet):
    """The delivery log: what was sent where, each attempt's status code, latency and error; `POST …/retry/`
    sends a delivery again now, under the same `webhook-id`."""

    queryset = Delivery.objects.select_related("endpoint").prefetch_related("attempt_log")
    serializer_class = DeliverySerializer
    filterset_fields = ("state", "endpoint", "event", "subject")
    mutations = {"retry": MANAGE}

    def audit_target(self) -> str:
        return f"webhook-delivery:{self.kwargs.get('pk')}"

    @extend_schema(request=None, responses={202: DeliverySerializer})
    @action(detail=True, methods=["post"])
    def retry(self, request, pk=None):
        delivery = self.get_object()
        with self.audited_change() as change, transaction.atomic():
            change.before = {"state": delivery.state, "attempts": delivery.attempts}
            outbox.retry_now(delivery)
        delivery.refresh_from_db()
        return Response(DeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED)
