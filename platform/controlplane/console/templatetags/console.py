import json

from django import template
from django.core.serializers.json import DjangoJSONEncoder

register = template.Library()


@register.filter
def as_json(value) -> str:
    """`{{ entry.before|as_json }}`: compact JSON (the audit log's before/after states)."""
    return json.dumps(value, cls=DjangoJSONEncoder, separators=(", ", ": "))
