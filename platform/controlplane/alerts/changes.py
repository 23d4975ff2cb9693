"""What the audit log records of an alerting object before and after a change (console and REST alike)."""

from django.db import models
from django.forms.models import model_to_dict

SECRET_FIELDS = {"secret"}


def audit_state(instance: models.Model) -> dict:
    """The object's fields as JSON values, secrets left out."""
    return {k: v if isinstance(v, str | int | float | bool | dict | list | type(None)) else str(v)
            for k, v in model_to_dict(instance).items() if k not in SECRET_FIELDS}
