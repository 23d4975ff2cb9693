"""The REST API's side of `checks`: the default permission class, and a view mixin recording mutations.

A view declares which action each mutation is (`mutations`, keyed by the viewset action or the HTTP method
in lower case) and what it acts on (`audit_target`); `ActionPermission` checks before the view runs (so a
viewer gets 403 whatever the body), and the view records the change with `self.audited_change()`:

    class GroupViewSet(ActionViewMixin, viewsets.GenericViewSet):
        mutations = {"destroy": actions.DELETE_CONSUMER_GROUP}

        def audit_target(self) -> str:
            return f"group:{self.kwargs['group_id']}"

        def destroy(self, request, group_id):
            with self.audited_change() as change:
                ...
"""

from rest_framework import exceptions
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from controlplane.audit.models import Source
from controlplane.audit.services import Actor

from . import checks
from .actions import VIEW_CLUSTER, Action
from .models import ApiToken

__all__ = ("ActionPermission", "ActionViewMixin", "actor_of")


def actor_of(request) -> Actor:
    """The request's user, client address and (for token authentication) the token's name."""
    token = getattr(request, "auth", None)
    return Actor(request.user, request.META.get("REMOTE_ADDR", ""),
                 token.name if isinstance(token, ApiToken) else "")


class ActionViewMixin:
    """For views with mutations: `mutations` maps a viewset action (or a method, e.g. "post") to its Action;
    override `required_action` when the body decides (e.g. preferred vs unclean election)."""

    mutations: dict[str, Action] = {}

    def required_action(self, request: Request) -> Action | None:
        return self.mutations.get(getattr(self, "action", None) or request.method.lower())

    def audit_target(self) -> str:
        return self.request.path

    def request_body(self) -> dict:
        """The request body as far as it is an object, for `required_action` and `audit_target`: they run before
        the body is validated (a refusal is decided and recorded first), so a malformed body reads as {}."""
        try:
            data = self.request.data
        except exceptions.ParseError:
            return {}
        return data if isinstance(data, dict) else {}

    def audited_change(self):
        """Record the change made in the block (`ActionPermission` has checked it already)."""
        return checks.recorded(actor_of(self.request), Source.REST, self.required_action(self.request),
                               self.audit_target())


class ActionPermission(BasePermission):
    """Every request needs a logged-in user; reads need VIEW_CLUSTER; anything else needs the action the view
    declares for it (`ActionViewMixin`), and a view declaring none refuses (fail closed). A refusal of a
    logged-in user is recorded in the audit log; anonymous requests get 401/403 and are not."""

    def has_permission(self, request: Request, view) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        if request.method in SAFE_METHODS:
            if reason := checks.refusal(request.user, VIEW_CLUSTER):
                raise exceptions.PermissionDenied(reason)
            return True
        if not hasattr(view, request.method.lower()):
            return True  # the view answers 405 Method Not Allowed
        action = view.required_action(request) if isinstance(view, ActionViewMixin) else None
        if action is None:
            raise exceptions.PermissionDenied(f"{request.method} {request.path} declares no action, so nobody may "
                                              "call it.")
        try:
            checks.authorize(actor_of(request), Source.REST, action, view.audit_target())
        except checks.ActionRefused as refused:
            raise exceptions.PermissionDenied(refused.reason) from None
        return True
