"""The metadata image brokers receive, the metadata version, and the lock every metadata change takes.

Concurrency contract: every change to brokers, topics or partitions runs inside `transaction.atomic()` and
starts with `locked_state()`, which locks the single `ControllerState` row (SELECT … FOR UPDATE on
PostgreSQL; SQLite's IMMEDIATE transactions already serialise writers). Changes are therefore applied one at
a time, and whoever holds the lock sees the latest committed epochs. `bump()` increments `metadata_version`;
readers (`image`, `wait_for_version`) take no lock.

The controller's lease renewal is not a metadata change but, on SQLite, needs the same write lock;
`liveness_write()` waits for it only briefly and is stamped once it holds it. (Brokers' heartbeats no longer
need it: `controlplane.liveness` keeps them in a database of their own.)
"""

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from datetime import datetime

from django.conf import settings
from django.db import OperationalError, transaction
from django.utils import timezone

from controlplane.core.errors import KafkaApiError
from controlplane.topics.models import Partition, Topic

from . import changelog, version_watch
from .changelog import broker_configs_image
from .models import Broker, BrokerState, ControllerState
from .version_watch import current_version

__all__ = ("WriteLockBusy", "broker_configs_image", "bump", "current_version", "image", "image_json", "liveness_write",
           "locked_state", "partition_image", "topic_image", "wait_for_version")

MAX_WAIT_MS = 30_000


def locked_state() -> ControllerState:
    """Lock and return the controller-state row; only inside `transaction.atomic()`."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("locked_state() must be called inside transaction.atomic()")
    state = ControllerState.objects.select_for_update().filter(singleton=True).first()
    if state is None:  # a flushed test database: recreate the row (migrations create it otherwise)
        ControllerState.objects.get_or_create(singleton=True)
        state = ControllerState.objects.select_for_update().get(singleton=True)
    return state


class WriteLockBusy(KafkaApiError):
    """`liveness_write` did not get SQLite's write lock within its wait (503: the caller retries)."""

    def __init__(self, wait_ms: int):
        super().__init__("REQUEST_TIMED_OUT", f"The metadata store's write lock stayed busy for {wait_ms} ms; "
                                              "try again", status=503)


@contextlib.contextmanager
def liveness_write(wait_ms: int | None = None) -> Iterator[Callable[[], datetime]]:
    """A short write transaction in the metadata store for liveness (the controller's lease renewal) that
    waits at most `wait_ms` (setting `STROM_LIVENESS_LOCK_WAIT_MS`) for SQLite's write lock, else raises
    `WriteLockBusy`; yields the clock to stamp the write with, read once the lock is held.

    Why: SQLite has one write lock, which metadata changes hold for their whole transaction. A renewal that
    waited the connection's full busy timeout (20 s) would count its new expiry from before the wait; now it
    gives up (the controller keeps its unexpired lease: nobody can take it over while the lock is held) and a
    committed one counts from when it got the lock. On PostgreSQL and inside an enclosing transaction (tests)
    this is a plain `transaction.atomic()`.
    """
    db = transaction.get_connection()
    if db.vendor != "sqlite" or db.in_atomic_block:
        with transaction.atomic():
            yield timezone.now
        return
    wait_ms = settings.STROM_LIVENESS_LOCK_WAIT_MS if wait_ms is None else wait_ms
    db.ensure_connection()
    with db.cursor() as cursor:
        cursor.execute(f"PRAGMA busy_timeout = {int(wait_ms)}")
    try:
        with transaction.atomic():  # BEGIN IMMEDIATE: waits here for the write lock
            yield timezone.now
    except OperationalError as e:
        if "locked" not in str(e):
            raise
        raise WriteLockBusy(wait_ms) from None
    finally:
        with db.cursor() as cursor:
            cursor.execute(f"PRAGMA busy_timeout = {int(db.settings_dict['OPTIONS'].get('timeout', 5) * 1000)}")


def bump(state: ControllerState) -> int:
    """Record a change: increment the metadata version and store what changed under it in the metadata log
    (`changelog.record`), in the caller's transaction (the caller holds `locked_state()`); waiting long polls in
    every process are woken when it commits (`version_watch.announce`)."""
    state.metadata_version += 1
    state.save(update_fields=["metadata_version", "updated_at"])
    changelog.record(state.metadata_version)
    version_watch.announce(state.metadata_version)
    return state.metadata_version


def wait_for_version(min_version: int, wait_ms: int) -> int:
    """Block until `metadata_version >= min_version` or `wait_ms` passed; return the version last seen.

    Reads the version once on the caller's connection, then waits on the process's one version watcher
    (`version_watch`), woken within milliseconds of a commit in any process.
    """
    deadline = time.monotonic() + min(max(wait_ms, 0), MAX_WAIT_MS) / 1000
    version = current_version()
    if version >= min_version or wait_ms <= 0:
        return version
    version_watch.wait(min_version, deadline)
    return current_version()


def partition_image(partition: Partition) -> dict:
    return {"partition": partition.partition, "replicas": list(partition.replicas), "isr": list(partition.isr),
            "leader": partition.leader, "leader_epoch": partition.leader_epoch,
            "partition_epoch": partition.partition_epoch, "adding_replicas": list(partition.adding_replicas),
            "removing_replicas": list(partition.removing_replicas)}


def topic_image(topic: Topic, partitions: list[Partition] | None = None) -> dict:
    if partitions is None:
        partitions = list(topic.partitions.order_by("partition"))
    return {"name": topic.name, "topic_id": str(topic.topic_id), "configs": dict(topic.configs),
            "partitions": [partition_image(p) for p in partitions]}


def image() -> dict:
    """The full metadata image (see ARCHITECTURE.md, "Broker ↔ control plane internal API")."""
    return json.loads(image_json())


def image_json() -> str:
    """The full metadata image as JSON text, built without decoding a partition's JSON columns
    (`changelog.topic_partitions`): at 100,000 partitions, model instances made this a minute under load.

    The version is read first, so the data that follows is at least that new. Topics and partitions come
    from one joined query, so a topic is never seen without its partitions.
    """
    state = ControllerState.objects.filter(singleton=True).first() or ControllerState.current()
    brokers = [changelog.broker_record(b) for b in Broker.objects.order_by("broker_id").values(
        *changelog.BROKER_COLUMNS)]
    running = [b["broker_id"] for b in brokers if b["state"] == BrokerState.RUNNING]
    head = json.dumps({
        "cluster_id": state.cluster_id,
        "metadata_version": state.metadata_version,
        # Every broker forwards admin requests to the control plane (as KRaft brokers do), so the
        # "controller" brokers name in Metadata responses is any running broker: the lowest id, so all agree.
        "controller_id": min(running, default=-1),
        "brokers": brokers,
        "broker_configs": broker_configs_image(),
    }, separators=(",", ":"))
    topics = ",".join(f'{{"name":{json.dumps(name)},"topic_id":"{topic_id}","configs":{configs},'
                      f'"partitions":[{",".join(entries)}]}}'
                      for name, topic_id, configs, entries in changelog.topic_partitions(Partition.objects.all()))
    return f'{head[:-1]},"topics":[{topics}]}}'
