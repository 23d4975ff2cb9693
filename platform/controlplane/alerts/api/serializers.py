import copy

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from ..models import Delivery, DeliveryAttempt, LagThreshold, Silence, WebhookEndpoint


class ModelCleanMixin:
    """Runs the model's validation (`full_clean`: field validators and `clean`) on the would-be instance, so
    REST rejects with 400 what the console's forms reject."""

    def validate(self, attrs):
        instance = copy.copy(self.instance) if self.instance is not None else self.Meta.model()
        for name, value in attrs.items():
            setattr(instance, name, value)
        try:
            instance.full_clean(validate_unique=False)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from None
        return attrs


class WebhookEndpointSerializer(ModelCleanMixin, serializers.ModelSerializer):
    class Meta:
        model = WebhookEndpoint
        fields = ("id", "name", "url", "preset", "method", "headers", "secret", "template_open", "template_close",
                  "extras", "routing_key", "link", "group_allowlist", "group_denylist", "notify_threshold",
                  "reminder_interval_s", "enabled",
                  "disabled_reason", "timeout_s", "created_at")
        read_only_fields = ("disabled_reason", "created_at")
        extra_kwargs = {"secret": {"write_only": True, "required": False}}


class DeliveryAttemptSerializer(serializers.ModelSerializer):
    class Meta:
        model = DeliveryAttempt
        fields = ("number", "at", "outcome", "status_code", "latency_ms", "error")


class DeliverySerializer(serializers.ModelSerializer):
    endpoint_name = serializers.CharField(source="endpoint.name", read_only=True)
    attempt_log = DeliveryAttemptSerializer(many=True, read_only=True)

    class Meta:
        model = Delivery
        fields = ("id", "endpoint", "endpoint_name", "webhook_id", "event", "subject", "url", "method", "headers",
                  "body", "state", "attempts", "next_attempt_at", "last_status_code", "last_error",
                  "last_latency_ms", "created_at", "finished_at", "attempt_log")


class LagThresholdSerializer(ModelCleanMixin, serializers.ModelSerializer):
    class Meta:
        model = LagThreshold
        fields = ("id", "group", "topic", "max_lag", "max_lag_seconds", "comment", "created_at")
        read_only_fields = ("created_at",)


class SilenceSerializer(ModelCleanMixin, serializers.ModelSerializer):
    class Meta:
        model = Silence
        fields = ("id", "group", "starts_at", "ends_at", "comment", "created_by", "created_at")
        read_only_fields = ("created_by", "created_at")
