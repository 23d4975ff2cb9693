"""The control plane's implementation of webui's DashboardActions: the same check and audit call as the console,
REST API and commands (`controlplane.access.checks`), for the user the mount found for this request."""

import flask

from controlplane.access import actions, checks
from controlplane.audit.models import Source
from controlplane.audit.services import Actor
from controlplane.controller import election
from webui.actions import ActionRefusedError

USER_KEY = "strom.django_user"
"""Where `mount.LoginRequired` leaves the request's Django user in the WSGI environ (`strom.user` holds only its
name, for the shell's session bar)."""


def current_actor() -> Actor:
    """The request's user; nobody outside a request (Dash builds the layout once at start-up to validate it)."""
    if not flask.has_request_context():
        return Actor()
    environ = flask.request.environ
    return Actor(environ.get(USER_KEY), environ.get("REMOTE_ADDR", ""))


class ControlPlaneActions:
    def refusal(self, action: str) -> str | None:
        return checks.refusal(current_actor().user, actions.ACTIONS[action])

    def elect_preferred_leaders(self) -> str:
        try:
            with checks.audited(current_actor(), Source.DASH, actions.ELECT_PREFERRED_LEADERS,
                                election.audit_target(None)) as change:
                results = election.elect_leaders(election.PREFERRED, None)
                change.before, change.after = election.audit_states(results)
        except checks.ActionRefused as refused:
            raise ActionRefusedError(refused.reason) from None
        elected = sum(1 for r in results if r.error is None)
        return f"Elected the preferred leader of {elected} partition(s); {len(results) - elected} could not move."
