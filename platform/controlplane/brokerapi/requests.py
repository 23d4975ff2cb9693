"""Reading internal-API request bodies: JSON objects whose fields have Kafka's types.

`Body` raises `KafkaApiError("INVALID_REQUEST")` for a missing or mistyped field, so views stay one line of
parsing per field and the services receive plain, typed values.
"""

import builtins
import json
from typing import Any

from django.http import HttpRequest

from controlplane.core.errors import KafkaApiError

__all__ = ("Body",)

_MISSING = object()


def _is(value: object, kind: type) -> bool:
    # bool is an int in Python, but a JSON true is never a valid integer field.
    return isinstance(value, kind) and not (kind is int and isinstance(value, bool))


class Body:
    """The JSON object of a request; `int`, `bool`, `str`, `list_of`, `optional` read typed fields."""

    def __init__(self, request: HttpRequest):
        try:
            data = json.loads(request.body or b"{}")
        except (ValueError, UnicodeDecodeError):
            raise KafkaApiError("INVALID_REQUEST", "The request body is not JSON") from None
        if not isinstance(data, dict):
            raise KafkaApiError("INVALID_REQUEST", "The request body must be a JSON object")
        self.data = data

    @classmethod
    def of(cls, data: object, what: "builtins.str") -> "Body":
        """A nested JSON object (`what` names it in the error) read the same way."""
        if not isinstance(data, dict):
            raise KafkaApiError("INVALID_REQUEST", f"Each entry of '{what}' must be a JSON object")
        body = cls.__new__(cls)
        body.data = data
        return body

    def _get(self, name: str, kind: type, default: Any) -> Any:
        value = self.data.get(name, default)
        if value is _MISSING:
            raise KafkaApiError("INVALID_REQUEST", f"Missing field '{name}'")
        if value is not default and not _is(value, kind):
            raise KafkaApiError("INVALID_REQUEST", f"Field '{name}' must be of type {kind.__name__}")
        return value

    def int(self, name: str, default: Any = _MISSING) -> Any:
        return self._get(name, int, default)

    def bool(self, name: str, default: Any = _MISSING) -> Any:
        return self._get(name, bool, default)

    def str(self, name: str, default: Any = _MISSING) -> Any:
        return self._get(name, str, default)

    def dict(self, name: str, default: Any = _MISSING) -> Any:
        return self._get(name, dict, default)

    def raw(self, name: str, default: Any = None) -> Any:
        return self.data.get(name, default)

    def list_of(self, name: str, item: type, default: Any = _MISSING) -> Any:
        value = self._get(name, list, default)
        if value is not default and not all(_is(v, item) for v in value):
            raise KafkaApiError("INVALID_REQUEST", f"Field '{name}' must be a list of {item.__name__}")
        return value
