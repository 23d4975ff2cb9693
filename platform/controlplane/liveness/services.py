"""Writes and reads of broker liveness (`models.BrokerLiveness`), in the liveness database (`router`).

Each write is one short transaction on that database alone, stamped once it holds the database's write lock,
which only other liveness writes take (milliseconds): so a heartbeat never waits for a metadata change.
Callers check the registration against the metadata store first (`cluster.services`); these functions only
keep the stamps of the registration they are given apart from those of other registrations.
"""

from collections.abc import Iterable
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from .models import BrokerLiveness

__all__ = ("connection_lost", "heartbeat", "newest_heartbeat", "of", "registered")


def _database() -> str:
    return settings.STROM_LIVENESS_DATABASE


def registered(broker_id: int, registration_epoch: int, now: datetime) -> None:
    """A new registration starts alive: heartbeat stamps `now`, no hang-up. Written before the registration
    commits in the metadata store, so a running registration always has its row."""
    with transaction.atomic(using=_database()):
        BrokerLiveness.objects.update_or_create(broker_id=broker_id, defaults={
            "registration_epoch": registration_epoch, "last_heartbeat": now, "heartbeat_arrived_at": now,
            "connection_lost_at": None})


def heartbeat(broker_id: int, registration_epoch: int, arrived_at: datetime, now: datetime | None = None) -> bool:
    """Stamp a heartbeat of this registration: `last_heartbeat` when written (`now` in tests), and its
    arrival. False if the row belongs to another (newer) registration. A row missing altogether (a broker
    registered before liveness had its own database) is created."""
    with transaction.atomic(using=_database()):  # on SQLite BEGIN IMMEDIATE: the stamp is read holding the lock
        stamps = {"last_heartbeat": now or timezone.now(), "heartbeat_arrived_at": arrived_at}
        if BrokerLiveness.objects.filter(broker_id=broker_id, registration_epoch=registration_epoch).update(**stamps):
            return True
        _, created = BrokerLiveness.objects.get_or_create(
            broker_id=broker_id, defaults={"registration_epoch": registration_epoch, **stamps})
        return created


def connection_lost(broker_id: int, registration_epoch: int, now: datetime | None = None) -> bool:
    """Record that this registration's session connection was closed from the broker's side; False if the
    row belongs to another registration (nothing recorded)."""
    with transaction.atomic(using=_database()):
        return BrokerLiveness.objects.filter(broker_id=broker_id, registration_epoch=registration_epoch).update(
            connection_lost_at=now or timezone.now()) > 0


def of(broker_ids: Iterable[int]) -> dict[int, BrokerLiveness]:
    """The liveness rows of these brokers, by broker id (a broker without a row is missing)."""
    return {row.broker_id: row for row in BrokerLiveness.objects.filter(broker_id__in=list(broker_ids))}


def newest_heartbeat() -> datetime | None:
    """The newest heartbeat stamp of any broker: whether the heartbeat path carries heartbeats."""
    return BrokerLiveness.objects.aggregate(newest=Max("last_heartbeat"))["newest"]
