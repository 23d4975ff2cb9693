"""The console's side of `checks`: pages need the viewer role, and each mutation is a POST-only `ActionView`.

    class GroupDeleteView(ActionView):
        action = actions.DELETE_CONSUMER_GROUP

        def audit_target(self) -> str:
            return f"group:{self.kwargs['group_id']}"

        def perform(self, request, group_id):
            with self.audited_change() as change:
                ...
            return redirect(...)

In templates, `{% load access %}{% action_button "delete_consumer_group" "Delete group" %}` renders the submit
button, or a disabled one with the reason for users who may not (see templatetags/access.py).
"""

from django.contrib.auth.mixins import AccessMixin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views import View

from controlplane.audit.models import Source
from controlplane.audit.services import Actor

from . import checks
from .actions import VIEW_CLUSTER, Action

__all__ = ("ActionView", "ViewerRequiredMixin", "actor_of", "refused_response")


def actor_of(request: HttpRequest) -> Actor:
    return Actor(request.user, request.META.get("REMOTE_ADDR", ""))


def refused_response(request: HttpRequest, reason: str, recorded: bool = True) -> HttpResponse:
    """403 with the reason; `recorded` says the attempt is in the audit log (refused changes are, reads not)."""
    return render(request, "console/refused.html", {"reason": reason, "recorded": recorded}, status=403)


class ViewerRequiredMixin(AccessMixin):
    """Anonymous users go to the login page; logged-in users without a role get 403 with the reason."""

    def dispatch(self, request, *args, **kwargs):
        if not request.user.is_authenticated:
            return self.handle_no_permission()
        if reason := checks.refusal(request.user, VIEW_CLUSTER):
            return refused_response(request, reason, recorded=False)
        return super().dispatch(request, *args, **kwargs)


class ActionView(AccessMixin, View):
    """A console mutation (POST only; anonymous users go to the login page): checks `get_action()` for the user —
    a refusal is recorded and answered 403 with its reason — then calls `perform`, which makes the change inside
    `self.audited_change()` (or, for a preview that changes nothing, outside it)."""

    http_method_names = ["post"]
    action: Action

    def dispatch(self, request, *args, **kwargs):
        if not request.user.is_authenticated:
            return self.handle_no_permission()
        return super().dispatch(request, *args, **kwargs)

    def get_action(self) -> Action:
        return self.action

    def audit_target(self) -> str:
        raise NotImplementedError

    def post(self, request, *args, **kwargs):
        try:
            checks.authorize(actor_of(request), Source.CONSOLE, self.get_action(), self.audit_target())
        except checks.ActionRefused as refused:
            return refused_response(request, refused.reason)
        return self.perform(request, *args, **kwargs)

    def perform(self, request, *args, **kwargs) -> HttpResponse:
        raise NotImplementedError

    def audited_change(self):
        """Record the change made in the block (`post` has checked it already)."""
        return checks.recorded(actor_of(self.request), Source.CONSOLE, self.get_action(), self.audit_target())
