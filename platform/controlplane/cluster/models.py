"""Brokers and the controller's state: the part of the metadata store ZooKeeper/KRaft holds in Kafka."""

import base64
import uuid
from collections.abc import Iterable
from datetime import datetime

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from controlplane.liveness import services as liveness
from kafkaspec.listeners import InvalidListenerError, parse_listeners


def validate_listeners(value: str) -> None:
    try:
        parse_listeners(value)
    except InvalidListenerError as e:
        raise ValidationError(str(e)) from None


class BrokerState(models.TextChoices):
    """Kafka's broker registration states (KRaft `BrokerRegistration`)."""

    STARTING = "starting", "Starting"
    RUNNING = "running", "Running"
    FENCED = "fenced", "Fenced"
    SHUTTING_DOWN = "shutting_down", "Shutting down"


class Broker(models.Model):
    """A broker registered with the cluster.

    `registration_epoch` increases with every (re-)registration; requests from a broker carrying an older
    epoch are from a zombie and are refused. Its liveness (heartbeats, the session's hang-up) is not here but in
    `liveness.models.BrokerLiveness`, in a database of its own on SQLite, so that heartbeats never wait for a
    metadata change.
    """

    broker_id = models.IntegerField(unique=True, validators=[MinValueValidator(0)],
                                    help_text="Kafka broker.id / node.id")
    listeners = models.CharField(max_length=1000, validators=[validate_listeners],
                                 help_text="Kafka listener list, e.g. PLAINTEXT://127.0.0.1:9092")
    rack = models.CharField(max_length=255, blank=True, default="", help_text="broker.rack, empty if none")
    state = models.CharField(max_length=16, choices=BrokerState.choices, default=BrokerState.STARTING)
    registration_epoch = models.BigIntegerField(default=0, validators=[MinValueValidator(0)])
    log_dirs = models.JSONField(default=list, blank=True)
    registered_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["broker_id"]

    def __str__(self) -> str:
        return f"broker {self.broker_id}"

    @property
    def last_heartbeat(self) -> datetime | None:
        """When this registration last proved it is alive, for display: read with the other brokers' by
        `with_liveness` (one query for a page), else on its own."""
        if not hasattr(self, "_liveness"):
            self._liveness = liveness.of([self.broker_id]).get(self.broker_id)
        row = self._liveness
        return row.last_heartbeat if row is not None and row.registration_epoch == self.registration_epoch else None

    @property
    def endpoints(self) -> list[tuple[str, str, int]]:
        """(listener name, host, port) per listener."""
        return [(e.name, e.host, e.port) for e in parse_listeners(self.listeners)]


def with_liveness(brokers: Iterable[Broker]) -> list[Broker]:
    """The brokers, each with its liveness read in one query for all (`Broker.last_heartbeat`)."""
    brokers = list(brokers)
    rows = liveness.of(b.broker_id for b in brokers)
    for broker in brokers:
        broker._liveness = rows.get(broker.broker_id)
    return brokers


CLUSTER_DEFAULT = -1
"""`BrokerConfig.broker_id` of the cluster-wide default (Kafka's `<default>` broker entity, resource name "")."""


class BrokerConfig(models.Model):
    """A broker's dynamic config overrides (Kafka's `kafka-configs --entity-type brokers`), as Kafka's strings;
    `broker_id` CLUSTER_DEFAULT holds the default every broker falls back to. Only the keys
    `kafkaspec.replication_throttles.BROKER_DYNAMIC_CONFIGS` names; the rest of a broker's config is static.
    A broker id may have overrides before it registers."""

    broker_id = models.IntegerField(unique=True, validators=[MinValueValidator(CLUSTER_DEFAULT)])
    configs = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["broker_id"]

    def __str__(self) -> str:
        return "broker default configs" if self.broker_id == CLUSTER_DEFAULT else f"configs of broker {self.broker_id}"


def new_cluster_id() -> str:
    """A Kafka cluster id: a random UUID in URL-safe base64 without padding (22 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class ControllerState(models.Model):
    """The single row holding the controller lease, the controller epoch and the metadata version.

    Every metadata change locks this row first (`controlplane.cluster.metadata.locked_state`), so changes are
    serialised. `controller_epoch` increases each time a controller takes over the lease (held by
    `active_controller_id` until `lease_expires_at`); `metadata_version` increases with every committed
    metadata change, so brokers can tell whether their copy is current. `next_producer_id` is the first id of
    the next block handed out by AllocateProducerIds.
    """

    singleton = models.BooleanField(default=True, unique=True, editable=False)
    cluster_id = models.CharField(max_length=64, default=new_cluster_id, help_text="Kafka cluster id")
    controller_epoch = models.BigIntegerField(default=0)
    active_controller_id = models.CharField(max_length=255, blank=True, default="",
                                            help_text="identity of the controller process holding the lease")
    lease_expires_at = models.DateTimeField(null=True, blank=True,
                                            help_text="the active controller's lease ends here unless renewed")
    metadata_version = models.BigIntegerField(default=0)
    next_producer_id = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "controller state"
        verbose_name_plural = "controller state"

    def __str__(self) -> str:
        return f"controller epoch {self.controller_epoch}, metadata version {self.metadata_version}"

    @classmethod
    def current(cls) -> "ControllerState":
        state, _ = cls.objects.get_or_create(singleton=True)
        return state


class MetadataChange(models.Model):
    """One committed metadata change in the metadata log (KRaft's `__cluster_metadata`): the records of what
    it changed, each the new state of one broker, topic or partition, under the metadata version it bumped to.

    Written by `metadata.bump()` in the transaction that made the change, so versions are gapless and each
    row holds exactly the changes of its version. `records` is the JSON array as served to brokers (kept as
    text so it goes out without being parsed again); `record_count` its records (each partition entry one),
    for retention (`changelog.prune`). The tables themselves are the compacted snapshot: a broker older than the oldest
    retained version gets the full image instead (`changelog`).
    """

    version = models.BigIntegerField(primary_key=True)
    records = models.TextField()
    record_count = models.IntegerField()
    committed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["version"]

    def __str__(self) -> str:
        return f"metadata version {self.version} ({self.record_count} records)"


class ChangedRow(models.Model):
    """A broker, topic or partition row the open transaction changed, noted by a database trigger
    (`changelog.TRIGGERS`, installed after every migrate) and consumed by `metadata.bump()` in the same
    transaction. So every change is captured whatever wrote it (a service, the controller, a bulk update).

    `kind` is "broker", "topic" or "partition" (`row_id` = the row's primary key), or "broker_removed" /
    "topic_removed" with the removed row's natural key in `name` (the broker id; the topic name) and, for a
    topic, its id in `topic_id`.
    """

    kind = models.CharField(max_length=16)
    row_id = models.BigIntegerField()
    name = models.CharField(max_length=255, blank=True, default="")
    topic_id = models.CharField(max_length=36, blank=True, default="")

    def __str__(self) -> str:
        return f"{self.kind} {self.row_id}"
