"""The one permission check per action, and its pairing with the audit log. Every front end uses these:

    refusal(user, action)                       -> None if allowed, else why not (for rendering a disabled button)
    authorize(actor, source, action, target)    checks; a refusal is recorded and raised as ActionRefused
    with recorded(actor, source, action, target) as change:   the change, recorded as ok or failed
    with audited(actor, source, action, target) as change:    authorize + recorded

Inside the block, set `change.before` / `change.after` (JSON-serialisable state) and optionally
`change.detail`; an exception leaving the block is recorded as `failed` (with its message) and re-raised.
"""

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from controlplane.audit.models import Result, Source
from controlplane.audit.services import Actor, record
from controlplane.core.errors import KafkaApiError

from .actions import Action
from .roles import role_of

__all__ = ("ActionRefused", "Change", "audited", "authorize", "recorded", "refusal")


class ActionRefused(Exception):
    """The actor may not do `action`; `reason` says why, in a sentence fit for a tooltip or a 403."""

    def __init__(self, action: Action, reason: str):
        super().__init__(reason)
        self.action = action
        self.reason = reason


@dataclass
class Change:
    """What a change saw and left, filled in by the caller inside `recorded`/`audited`."""

    before: object = None
    after: object = None
    detail: str = ""


def refusal(user, action: Action) -> str | None:
    """None if `user` may do `action`, else the reason (which role it needs, which the user has)."""
    if user is None or not user.is_authenticated:
        return "Log in first."
    if not user.is_active:
        return "This account is disabled."
    if user.has_perm(action.permission_name):
        return None
    role = role_of(user)
    held = f"your role is {role.group_name}" if role else "you have no role"
    return f"{action.label} needs the {action.role.group_name} role; {held}."


def authorize(actor: Actor, source: Source, action: Action, target: str) -> None:
    """The permission check: raises ActionRefused (after recording the refusal) unless allowed."""
    if reason := refusal(actor.user, action):
        record(actor, action.name, target, None, None, Result.REFUSED, source, detail=reason)
        raise ActionRefused(action, reason)


def _describe_error(error: BaseException) -> str:
    if isinstance(error, KafkaApiError):
        return f"{error.error}: {error.message}"
    return f"{type(error).__name__}: {error}"


@contextlib.contextmanager
def recorded(actor: Actor, source: Source, action: Action, target: str) -> Iterator[Change]:
    """Record the change made in the block (already authorized, or made by an unauthenticated Kafka client)."""
    change = Change()
    try:
        yield change
    except Exception as error:
        record(actor, action.name, target, change.before, change.after, Result.FAILED, source,
               detail=_describe_error(error))
        raise
    record(actor, action.name, target, change.before, change.after, Result.OK, source, detail=change.detail)


@contextlib.contextmanager
def audited(actor: Actor, source: Source, action: Action, target: str) -> Iterator[Change]:
    """Check, then record the change made in the block."""
    authorize(actor, source, action, target)
    with recorded(actor, source, action, target) as change:
        yield change
