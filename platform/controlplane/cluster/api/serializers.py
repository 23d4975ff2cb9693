from django.db.models import Manager
from rest_framework import serializers

from ..models import Broker, ControllerState, with_liveness


class BrokerListSerializer(serializers.ListSerializer):
    def to_representation(self, data):
        return super().to_representation(with_liveness(data.all() if isinstance(data, Manager) else data))


class BrokerSerializer(serializers.ModelSerializer):
    last_heartbeat = serializers.DateTimeField(read_only=True, allow_null=True,
                                               help_text="when the broker's registration last proved it is alive")

    class Meta:
        model = Broker
        list_serializer_class = BrokerListSerializer
        fields = ("broker_id", "listeners", "rack", "state", "last_heartbeat", "registration_epoch",
                  "log_dirs", "registered_at")


class ControllerStateSerializer(serializers.ModelSerializer):
    class Meta:
        model = ControllerState
        fields = ("controller_epoch", "active_controller_id", "metadata_version", "updated_at")
