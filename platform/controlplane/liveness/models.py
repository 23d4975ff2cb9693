"""Broker liveness: what the failure detector reads, kept apart from the metadata (see `router`)."""

from django.db import models


class BrokerLiveness(models.Model):
    """The liveness of a broker's current registration: its heartbeats and its session's hang-up.

    One row per broker id, for the registration `registration_epoch` (written when it registers, before the
    registration commits); stamps of an older registration are replaced, never mixed in. `last_heartbeat`
    is when the latest heartbeat was written (the failure detector's session clock); `heartbeat_arrived_at`
    is when that heartbeat reached the web process, and `connection_lost_at` when the web process saw the
    registration's session connection closed from the broker's side — both on the web process's clock, so
    that a heartbeat is ordered against a hang-up by arrival (see `controller.Controller.fence_expired_brokers`).
    """

    broker_id = models.IntegerField(unique=True)
    registration_epoch = models.BigIntegerField()
    last_heartbeat = models.DateTimeField(null=True, blank=True)
    heartbeat_arrived_at = models.DateTimeField(null=True, blank=True)
    connection_lost_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["broker_id"]
        verbose_name_plural = "broker liveness"

    def __str__(self) -> str:
        return f"liveness of broker {self.broker_id} (registration {self.registration_epoch})"
