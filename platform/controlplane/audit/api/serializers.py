from rest_framework import serializers

from ..models import AuditEntry


class AuditEntrySerializer(serializers.ModelSerializer):
    class Meta:
        model = AuditEntry
        fields = ("id", "at", "actor", "address", "client_id", "source", "action", "target", "before", "after",
                  "result", "detail")
