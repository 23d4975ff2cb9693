"""Writing and pruning the audit log. `record` is the one function every change in Strom ends in; most callers
reach it through `controlplane.access.checks` (`audited`, `recorded`, `authorize`), which pair it with the
permission check. Call it outside any transaction the change might roll back, so failures stay recorded."""

import datetime
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from .models import AuditEntry, Result, Source

__all__ = ("Actor", "prune", "record")


@dataclass(frozen=True)
class Actor:
    """Who makes a change: a Strom user (console, REST, command line, dashboard), or an unauthenticated Kafka
    client known by its address and client id."""

    user: AbstractBaseUser | None = None
    address: str = ""
    client_id: str = ""
    """The Kafka client id, or the name of the API token a REST request used."""

    @property
    def name(self) -> str:
        """The user name; for a Kafka client `<client id>@<address>` (or whichever of them is known)."""
        if self.user is not None and self.user.is_authenticated:
            return self.user.get_username()
        if self.client_id and self.address:
            return f"{self.client_id}@{self.address}"
        return self.client_id or self.address or "unknown"


def record(actor: Actor, action: str, target: str, before: object, after: object, result: Result,
           source: Source, detail: str = "") -> AuditEntry:
    """Append one entry. `before`/`after` must be JSON-serialisable (None where there is no state)."""
    user = actor.user if actor.user is not None and actor.user.is_authenticated else None
    return AuditEntry.objects.create(actor=actor.name[:300], user=user, address=actor.address[:64],
                                     client_id=actor.client_id[:255], source=source, action=action,
                                     target=target[:500], before=before, after=after, result=result, detail=detail)


def prune(retention_days: int, now: datetime.datetime | None = None) -> int:
    """Delete entries older than `retention_days`; returns how many."""
    cutoff = (now or timezone.now()) - datetime.timedelta(days=retention_days)
    deleted, _ = AuditEntry.objects.filter(at__lt=cutoff).delete()
    return deleted
