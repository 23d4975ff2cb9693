"""What every REST endpoint shares: the body of an error answer, and DRF's validation errors as its message."""

from rest_framework import serializers

__all__ = ("ErrorSerializer", "one_line")


class ErrorSerializer(serializers.Serializer):
    error = serializers.CharField(help_text="Kafka error name, e.g. TOPIC_ALREADY_EXISTS, GROUP_ID_NOT_FOUND")
    message = serializers.CharField()


def one_line(errors: dict) -> str:
    """DRF's validation errors as one message: "spec: … ; value: …" (non-field errors without a prefix)."""
    parts = []
    for field, messages in errors.items():
        for message in messages if isinstance(messages, list) else [messages]:
            text = one_line(message) if isinstance(message, dict) else str(message)
            if text:
                parts.append(text if field == "non_field_errors" else f"{field}: {text}")
    return "; ".join(parts)
