"""What brokers do to the cluster: register, heartbeat, propose ISR changes, take producer-id blocks, and
what the web process observes of them (a closed session connection).

Each mutation is one transaction that first takes `metadata.locked_state()`; requests carrying a broker's
old `registration_epoch` (a zombie) are refused with STALE_BROKER_EPOCH and change nothing. AlterPartition
validates its (large) batch before that transaction and writes it by compare-and-set on the partitions'
epochs, so that the lock is held only for set-based statements (`alter_partitions`). The heartbeat and
the connection-loss record are the exceptions that prove the rule: neither is a metadata change, so each reads
the registration without a lock and writes only the broker's liveness (`controlplane.liveness`, its own
database on SQLite), never waiting for a metadata change; the controller re-reads liveness under the lock
before fencing.
"""

import json
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from django.conf import settings
from django.db import transaction
from django.db.models import F, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from controlplane.controller import election, reassignment
from controlplane.core.errors import KafkaApiError
from controlplane.liveness import services as liveness
from controlplane.topics.models import Partition

from . import metadata
from .models import Broker, BrokerState, ControllerState

__all__ = ("PRODUCER_ID_BLOCK_SIZE", "IsrChange", "allocate_producer_ids", "alter_partition", "alter_partitions",
           "check_registration", "connection_lost", "heartbeat", "register_broker")

# Kafka's ProducerIdManager hands out blocks of 1000 ids.
PRODUCER_ID_BLOCK_SIZE = 1000


def _stale(broker_id: int, epoch: int) -> KafkaApiError:
    return KafkaApiError("STALE_BROKER_EPOCH",
                         f"Broker {broker_id} has no current registration with epoch {epoch}")


def _checked_broker(broker_id: int, registration_epoch: int) -> Broker:
    """The running broker `broker_id` at `registration_epoch` (call under the lock), else STALE_BROKER_EPOCH."""
    broker = Broker.objects.filter(broker_id=broker_id).first()
    if broker is None or broker.registration_epoch != registration_epoch or broker.state != BrokerState.RUNNING:
        raise _stale(broker_id, registration_epoch)
    return broker


def register_broker(broker_id: int, listeners: str, rack: str | None, log_dirs: list[str],
                    now: datetime | None = None) -> dict:
    """(Re-)register a broker: a new `registration_epoch`, state `running`.

    A broker that registers while its previous incarnation still counts as running (a quick restart) is
    first treated as fenced: its leaderships move to other in-sync replicas and it leaves the ISRs, since
    the new incarnation has to prove it caught up (the leader proposes it back through AlterPartition).
    Then partitions without a leader whose ISR contains it get it as leader.
    """
    now = now or timezone.now()
    broker = Broker(broker_id=broker_id, listeners=listeners, rack=rack or "", log_dirs=log_dirs)
    try:
        broker.clean_fields(exclude=["state", "registration_epoch", "registered_at"])
    except Exception as e:  # ValidationError: message_dict names the field
        raise KafkaApiError("INVALID_REQUEST", f"Invalid broker registration: {e}") from None
    with transaction.atomic():
        state = metadata.locked_state()
        existing = Broker.objects.select_for_update().filter(broker_id=broker_id).first()
        if existing is not None and existing.state in (BrokerState.RUNNING, BrokerState.SHUTTING_DOWN):
            election.on_broker_gone(broker_id, election.live_broker_ids() - {broker_id})
        epoch = (existing.registration_epoch if existing else 0) + 1
        liveness.registered(broker_id, epoch, now)  # its own transaction, committed before this one
        Broker.objects.update_or_create(broker_id=broker_id, defaults={
            "listeners": listeners, "rack": rack or "", "log_dirs": log_dirs, "state": BrokerState.RUNNING,
            "registration_epoch": epoch,
        })
        election.elect_offline_partitions(election.live_broker_ids())
        version = metadata.bump(state)
    return {"cluster_id": state.cluster_id, "registration_epoch": epoch,
            "heartbeat_interval_ms": settings.STROM_BROKER_HEARTBEAT_INTERVAL_MS,
            "session_timeout_ms": settings.STROM_BROKER_SESSION_TIMEOUT_MS, "metadata_version": version}


def heartbeat(broker_id: int, registration_epoch: int, shutting_down: bool = False,
              now: datetime | None = None) -> dict:
    """Record that the broker is alive. A fenced broker learns it must register again (state `fenced`).

    The registration is read without a lock and the stamps go to the liveness database
    (`liveness.heartbeat`: the write time, which the session timeout reads, and the arrival time, which
    orders the heartbeat against a hang-up), so a heartbeat never waits for a metadata change. A fence
    committing meanwhile is told at the broker's next heartbeat.

    `shutting_down` is Kafka's controlled shutdown: the broker's leaderships move to other in-sync
    replicas and it leaves the ISRs at once, before it stops; it is fenced when its heartbeats stop.
    """
    arrived_at = now or timezone.now()
    broker = Broker.objects.filter(broker_id=broker_id).values("registration_epoch", "state").first()
    if broker is None or broker["registration_epoch"] != registration_epoch:
        raise _stale(broker_id, registration_epoch)
    if broker["state"] not in (BrokerState.RUNNING, BrokerState.SHUTTING_DOWN):
        return {"state": broker["state"], "metadata_version": metadata.current_version()}
    if not liveness.heartbeat(broker_id, registration_epoch, arrived_at, now=now):
        raise _stale(broker_id, registration_epoch)  # registered again meanwhile
    if shutting_down:
        with transaction.atomic():
            state = metadata.locked_state()
            if Broker.objects.filter(broker_id=broker_id, registration_epoch=registration_epoch,
                                     state=BrokerState.RUNNING).update(state=BrokerState.SHUTTING_DOWN):
                election.on_broker_gone(broker_id, election.live_broker_ids())
                metadata.bump(state)
    broker_state = Broker.objects.filter(broker_id=broker_id).values_list("state", flat=True).first()
    return {"state": broker_state, "metadata_version": metadata.current_version()}


def check_registration(broker_id: int, registration_epoch: int) -> None:
    """STALE_BROKER_EPOCH unless the broker is live (running or shutting down) at `registration_epoch`."""
    if not Broker.objects.filter(broker_id=broker_id, registration_epoch=registration_epoch,
                                 state__in=(BrokerState.RUNNING, BrokerState.SHUTTING_DOWN)).exists():
        raise _stale(broker_id, registration_epoch)


def connection_lost(broker_id: int, registration_epoch: int, now: datetime | None = None) -> bool:
    """Record that this registration's session (`GET /brokers/<id>/session`, held by the web process) was
    closed from the broker's side (EOF or reset), in its liveness. A broker closes it only when stopping or
    when its own request timed out, while the kernel closes every socket of a process that died, so this is
    evidence of death the controller acts on unless a heartbeat follows. False if the registration is not
    live (nothing recorded)."""
    now = now or timezone.now()
    try:
        check_registration(broker_id, registration_epoch)
    except KafkaApiError:
        return False
    return liveness.connection_lost(broker_id, registration_epoch, now)


@dataclass(frozen=True)
class IsrChange:
    """One partition of an AlterPartition request: the ISR its leader proposes at the epochs it knows."""

    topic: str
    partition: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]


def alter_partition(broker_id: int, registration_epoch: int, topic: str, partition: int, leader_epoch: int,
                    partition_epoch: int, isr: list[int]) -> dict:
    """`alter_partitions` for one partition: its new state, or its error raised as a KafkaApiError."""
    [result] = alter_partitions(broker_id, registration_epoch,
                                [IsrChange(topic, partition, leader_epoch, partition_epoch, tuple(isr))])
    error = result.pop("error")
    if error:
        raise KafkaApiError(error, result["message"])
    return result


class _Read(NamedTuple):
    """A partition as `alter_partitions` validates against it: plain values read outside the write lock."""

    pk: int
    leader: int
    leader_epoch: int
    partition_epoch: int
    replicas: list[int]
    isr: list[int]
    adding_replicas: list[int]
    removing_replicas: list[int]


@dataclass
class _Accepted:
    """A proposal that passed validation: the row it was checked against and the ISR it asks for."""

    result: dict
    read: _Read
    isr: tuple[int, ...]

    @property
    def changes(self) -> bool:
        return list(self.isr) != self.read.isr

    @property
    def joining(self) -> set[int]:
        return set(self.isr) - set(self.read.isr)

    @property
    def reassigning(self) -> bool:
        return bool(self.read.adding_replicas or self.read.removing_replicas)


def alter_partitions(broker_id: int, registration_epoch: int, changes: list[IsrChange]) -> list[dict]:
    """Kafka's AlterPartition: a leader proposes new ISRs for partitions it leads, at the epochs it knows.

    At most one metadata version for the whole batch (a broker failure makes the survivors shrink thousands of
    ISRs at once). The broker's registration is checked (a stale one refuses the whole request:
    STALE_BROKER_EPOCH raised). Each partition is then checked on its own, in Kafka's order — it exists
    (UNKNOWN_TOPIC_OR_PARTITION), the leader epoch (FENCED_LEADER_EPOCH), that the sender leads
    (INVALID_REQUEST), the partition epoch (INVALID_UPDATE_VERSION), then the ISR itself: replicas only,
    containing the leader, and every member that joins must be running (INELIGIBLE_REPLICA) — and a refused
    partition does not fail the others. An ISR that now holds every target replica of a reassignment in
    progress completes it (`controller.reassignment`).

    Two phases, so that SQLite's write lock (which every heartbeat and the controller's lease wait for) is held
    only for set-based statements: the rows are read and every proposal validated without a transaction, on
    plain values; then one write transaction, under `metadata.locked_state()`, re-reads the epochs of the
    accepted rows (and the running brokers) and writes only the proposals whose partition still has the
    epochs they were validated at — a compare-and-set. A partition that changed in between is refused as
    Kafka refuses a stale proposal (FENCED_LEADER_EPOCH if its leader epoch moved, else
    INVALID_UPDATE_VERSION; a joining member fenced meanwhile: INELIGIBLE_REPLICA); the leader retries with
    the state it then learns. The ISRs are written by one UPDATE per distinct new ISR and `CHANGE_CHUNK`
    partitions; only partitions with a reassignment in progress are loaded as models (rare).

    Returns one result per change, in order: `{"topic", "partition", "error": None, ...its new state}` or
    `{"topic", "partition", "error": <Kafka error name>, "message"}`.
    """
    _checked_broker(broker_id, registration_epoch)
    live = election.live_broker_ids()
    results, accepted = _validated(broker_id, changes, _read(changes), live)
    with transaction.atomic():
        state = metadata.locked_state()
        _checked_broker(broker_id, registration_epoch)
        live = election.live_broker_ids()
        accepted = _still_current(accepted, live)
        changed = _write_isrs([a for a in accepted if a.changes])
        completed = {}
        for partition in Partition.objects.filter(pk__in=[a.read.pk for a in accepted if a.reassigning]):
            if reassignment.maybe_complete(partition, live):
                completed[partition.pk] = partition
        if changed or completed:
            metadata.bump(state)
    for a in accepted:
        done = completed.get(a.read.pk)
        a.result.update(metadata.partition_image(done) if done is not None else _image(a))
    return results


def _read(changes: list[IsrChange]) -> dict[tuple[str, int], _Read]:
    """The partitions `changes` name, by (topic, partition): one query, no model instances; the JSON columns
    are decoded only for the partitions asked for (the query returns every pair of named topic and index)."""
    wanted = {(c.topic, c.partition) for c in changes}
    rows = Partition.objects.order_by().filter(
        topic__name__in={t for t, _ in wanted}, partition__in={p for _, p in wanted}).values_list(
        "topic__name", "partition", "pk", "leader", "leader_epoch", "partition_epoch", *_JSON_COLUMNS)
    return {(topic, number): _Read(pk, leader, leader_epoch, partition_epoch, *(json.loads(t) for t in texts))
            for topic, number, pk, leader, leader_epoch, partition_epoch, *texts in rows.iterator(chunk_size=5000)
            if (topic, number) in wanted}


_JSON_COLUMNS = tuple(Cast(column, TextField()) for column in ("replicas", "isr", "adding_replicas",
                                                                "removing_replicas"))


def _validated(broker_id: int, changes: list[IsrChange], rows: dict[tuple[str, int], _Read], live: set[int]
               ) -> tuple[list[dict], list[_Accepted]]:
    """One result per change (errors filled in) and the proposals that passed (`_checked_isr`)."""
    results: list[dict] = []
    accepted: dict[tuple[str, int], _Accepted] = {}
    for change in changes:
        key = (change.topic, change.partition)
        result = {"topic": change.topic, "partition": change.partition, "error": None}
        results.append(result)
        try:
            current = rows.get(key)
            if current is None or key in accepted:  # a partition twice in one request: refused as Kafka does
                raise KafkaApiError("UNKNOWN_TOPIC_OR_PARTITION" if current is None else "INVALID_REQUEST",
                                    f"Unknown partition {change.topic}-{change.partition}" if current is None
                                    else f"{change.topic}-{change.partition} is proposed twice")
            accepted[key] = _Accepted(result, current, _checked_isr(broker_id, current, change, live))
        except KafkaApiError as e:
            _refuse(result, e)
    return results, list(accepted.values())


def _refuse(result: dict, error: KafkaApiError) -> None:
    result.update(error=error.error, message=error.message)


def _still_current(accepted: list[_Accepted], live: set[int]) -> list[_Accepted]:
    """The proposals whose partitions still have the epochs they were validated at and whose joining members
    still run; the others are refused (their results get the error). Under `metadata.locked_state()`."""
    pks = [a.read.pk for a in accepted]
    epochs = {}
    for start in range(0, len(pks), election.CHANGE_CHUNK):
        epochs.update((pk, (leader_epoch, partition_epoch)) for pk, leader_epoch, partition_epoch in
                      Partition.objects.order_by().filter(pk__in=pks[start:start + election.CHANGE_CHUNK])
                      .values_list("pk", "leader_epoch", "partition_epoch"))
    current = []
    for a in accepted:
        name = f"{a.result['topic']}-{a.result['partition']}"
        now = epochs.get(a.read.pk)
        if now is None:
            _refuse(a.result, KafkaApiError("UNKNOWN_TOPIC_OR_PARTITION", f"Unknown partition {name}"))
        elif now[0] != a.read.leader_epoch:
            _refuse(a.result, KafkaApiError("FENCED_LEADER_EPOCH", f"Leader epoch {a.read.leader_epoch} of {name} "
                                                                   f"is not the current {now[0]}"))
        elif now[1] != a.read.partition_epoch:
            _refuse(a.result, KafkaApiError("INVALID_UPDATE_VERSION", f"Partition epoch {a.read.partition_epoch} of "
                                                                      f"{name} is not the current {now[1]}"))
        elif a.joining - live:
            _refuse(a.result, KafkaApiError("INELIGIBLE_REPLICA", f"Brokers {sorted(a.joining - live)} are not "
                                                                  f"running and cannot join the ISR of {name}"))
        else:
            current.append(a)
    return current


def _write_isrs(accepted: list[_Accepted]) -> bool:
    """Write the new ISRs: one UPDATE per distinct ISR and `CHANGE_CHUNK` partitions, `partition_epoch` + 1.
    Under `metadata.locked_state()`, after `_still_current`; True if any partition changed."""
    by_isr: dict[tuple[int, ...], list[int]] = {}
    for a in accepted:
        by_isr.setdefault(a.isr, []).append(a.read.pk)
    for isr, pks in by_isr.items():
        for start in range(0, len(pks), election.CHANGE_CHUNK):
            Partition.objects.filter(pk__in=pks[start:start + election.CHANGE_CHUNK]).update(
                isr=list(isr), partition_epoch=F("partition_epoch") + 1)
    return bool(accepted)


def _image(a: _Accepted) -> dict:
    """The partition's entry in the image once `a` was written (or, if it changed nothing, as it was)."""
    read = a.read
    return {"partition": a.result["partition"], "replicas": read.replicas, "isr": list(a.isr), "leader": read.leader,
            "leader_epoch": read.leader_epoch, "partition_epoch": read.partition_epoch + (1 if a.changes else 0),
            "adding_replicas": read.adding_replicas, "removing_replicas": read.removing_replicas}


def _checked_isr(broker_id: int, current: _Read, change: IsrChange, live: set[int]) -> tuple[int, ...]:
    """The proposed ISR in replica order, or the KafkaApiError refusing it."""
    name = f"{change.topic}-{change.partition}"
    if change.leader_epoch != current.leader_epoch:
        raise KafkaApiError("FENCED_LEADER_EPOCH", f"Leader epoch {change.leader_epoch} of {name} "
                                                   f"is not the current {current.leader_epoch}")
    if current.leader != broker_id:
        raise KafkaApiError("INVALID_REQUEST", f"Broker {broker_id} is not the leader of {name} "
                                               f"(the leader is {current.leader})")
    if change.partition_epoch != current.partition_epoch:
        raise KafkaApiError("INVALID_UPDATE_VERSION", f"Partition epoch {change.partition_epoch} of {name} is not "
                                                      f"the current {current.partition_epoch}")
    isr = change.isr
    if len(set(isr)) != len(isr) or not set(isr) <= set(current.replicas) or broker_id not in isr:
        raise KafkaApiError("INVALID_REQUEST", f"The ISR {list(isr)} must be distinct replicas of {name} "
                                               f"({current.replicas}) including the leader {broker_id}")
    ineligible = (set(isr) - set(current.isr)) - live
    if ineligible:
        raise KafkaApiError("INELIGIBLE_REPLICA", f"Brokers {sorted(ineligible)} are not running and cannot "
                                                   f"join the ISR of {name}")
    return tuple(b for b in current.replicas if b in isr)


def allocate_producer_ids(broker_id: int, registration_epoch: int) -> dict:
    """Kafka's AllocateProducerIds: the next block of producer ids, never handed out twice."""
    with transaction.atomic():
        state = metadata.locked_state()
        _checked_broker(broker_id, registration_epoch)
        first = state.next_producer_id
        ControllerState.objects.filter(pk=state.pk).update(next_producer_id=first + PRODUCER_ID_BLOCK_SIZE)
    return {"first_producer_id": first, "count": PRODUCER_ID_BLOCK_SIZE}
