"""API tokens: creating (the token is returned once, only its digest is stored) and revoking, both audited.
Used by the console's token page and POST /api/token/."""

import datetime

from django.core.exceptions import ValidationError

from controlplane.audit.models import Source
from controlplane.audit.services import Actor

from . import actions, checks
from .models import ApiToken

__all__ = ("MAX_EXPIRY_DAYS", "create_token", "revoke_token")

MAX_EXPIRY_DAYS = 3650


def _target(token_owner, name: str) -> str:
    return f"token:{token_owner.get_username()}/{name}"


def _state(token: ApiToken) -> dict:
    return {"name": token.name, "user": token.user.get_username(), "key": token.token_key, "expiry": token.expiry}


def create_token(actor: Actor, source: Source, name: str, expires_in: datetime.timedelta | None
                 ) -> tuple[ApiToken, str]:
    """A new token of the actor named `name` (unique per user), expiring after `expires_in` (None: never).
    Returns the stored token and the token string, which is never available again."""
    name = name.strip()
    if not name:
        raise ValidationError("Give the token a name.")
    if expires_in is not None and not datetime.timedelta(0) < expires_in <= datetime.timedelta(MAX_EXPIRY_DAYS):
        raise ValidationError(f"The expiry must be between 1 and {MAX_EXPIRY_DAYS} days.")
    with checks.audited(actor, source, actions.CREATE_TOKEN, _target(actor.user, name)) as change:
        if ApiToken.objects.filter(user=actor.user, name=name).exists():
            raise ValidationError(f"You have a token named '{name}' already.")
        token, secret = ApiToken.objects.create(user=actor.user, expiry=expires_in, name=name)
        change.after = _state(token)
    return token, secret


def revoke_token(actor: Actor, source: Source, token: ApiToken) -> None:
    """Delete `token`: one's own (any role), or another user's (admin)."""
    own = token.user_id == getattr(actor.user, "pk", None)
    action = actions.REVOKE_TOKEN if own else actions.REVOKE_USER_TOKEN
    with checks.audited(actor, source, action, _target(token.user, token.name)) as change:
        change.before = _state(token)
        token.delete()
