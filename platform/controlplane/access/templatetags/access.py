"""`{% action_button "reset_offsets" "Reset offsets" %}`: a submit button for an action of `actions.ACTIONS`,
rendered disabled, with the reason beside it (and as its tooltip), for users who may not do it. Extra
keyword arguments become button attributes: `name="mode" value="execute" class="danger"`; `show_reason=False`
keeps the reason to the tooltip (for a button followed by another of the same action)."""

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.text import slugify

from ..actions import ACTIONS
from ..checks import refusal

register = template.Library()


@register.simple_tag(takes_context=True)
def action_button(context, action_name: str, label: str, show_reason: bool = True, **attributes) -> str:
    reason = refusal(context["request"].user, ACTIONS[action_name])
    attrs = format_html_join("", ' {}="{}"', sorted(attributes.items()))
    if reason is None:
        return format_html('<button type="submit" data-action="{}"{}>{}</button>', action_name, attrs, label)
    if not show_reason:
        return format_html('<button type="submit" data-action="{}"{} disabled aria-disabled="true" title="{}">{}'
                           '</button>', action_name, attrs, reason, label)
    reason_id = f"why-{action_name}-{slugify(label)}"
    return format_html('<button type="submit" data-action="{}"{} disabled aria-disabled="true" title="{}" '
                       'aria-describedby="{}">{}</button> <span class="refusal" id="{}">{}</span>',
                       action_name, attrs, reason, reason_id, label, reason_id, reason)

