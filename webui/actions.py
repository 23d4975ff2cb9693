"""What the dashboard may change, and the interface of whoever checks and records it.

webui never decides permissions or writes the audit log itself: the control plane injects `DashboardActions`,
whose methods act for the user of the current request — `refusal` tells a layout whether to render a button
disabled (and why), and each mutation method checks the permission, makes the change and records it, raising
`ActionRefusedError` with the reason when the user may not. A mutating callback is therefore one call:

    try:
        return actions.elect_preferred_leaders()
    except ActionRefusedError as refused:
        return refused.reason
"""

from typing import Protocol

ELECT_PREFERRED_LEADERS = "elect_preferred_leaders"
"""Action names, as the control plane's registry (controlplane.access.actions) spells them."""


class ActionRefusedError(Exception):
    """The current user may not do this; `reason` says why (which role it needs)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class DashboardActions(Protocol):
    def refusal(self, action: str) -> str | None:
        """None if the current user may do `action`, else why not."""

    def elect_preferred_leaders(self) -> str:
        """Preferred leader election for every partition; a one-line outcome. Raises ActionRefusedError."""
