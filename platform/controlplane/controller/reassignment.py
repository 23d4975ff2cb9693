"""Partition reassignment as Kafka's controller makes it (KIP-455; KRaft `PartitionReassignmentReplicas`,
`PartitionReassignmentRevert`, `PartitionChangeBuilder`; /work/shared/reference/reassignment.md §1.5, §1.8).

A reassignment is stored on the partition itself, so it survives control-plane restarts and controller
failovers. With original replicas O and target T:

1. **Start**: `replicas` = T followed by O − T, `adding_replicas` = T − O, `removing_replicas` = O − T. Brokers
   see the enlarged replica set in the metadata image: the adding replicas start as followers and fetch from
   the leader, which proposes each one into the ISR (AlterPartition) once it caught up.
2. **Complete**, checked after every ISR change (`complete_if_ready`): once ISR − removing is non-empty and
   holds every target replica, `replicas` = T, `isr` = ISR − removing, adding/removing cleared. The leader
   stays if it is still in the ISR, else the first live in-sync target replica leads (Kafka's ONLINE
   election: the preferred leader T[0] is elected later by the preferred-leader election). A replica set
   that is only reordered completes at once.
3. **Cancel** (`revert`): `replicas` = O, `isr` = ISR − adding; refused (INVALID_REPLICA_ASSIGNMENT) if that
   ISR is empty, unless the topic allows unclean leader election.

A new target for a partition already reassigning starts from its original replicas O (ZooKeeper-mode
Kafka's rule): adding replicas no longer targeted leave at once.

When a reassignment completes or is cancelled, its replication throttles go (`throttles.release`).

Epochs: `partition_epoch` + 1 on every change; `leader_epoch` + 1 when the leader changes or a replica leaves
the replica set (KRaft), so a removed replica's fetches are fenced.

The `start`/`complete_if_ready`/`revert` rules are pure; `alter_reassignments` and `list_reassignments` are
Kafka's AlterPartitionReassignments / ListPartitionReassignments over the metadata store.
"""

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from django.db import transaction

from controlplane.cluster import metadata
from controlplane.cluster.models import Broker
from controlplane.core.errors import KafkaApiError
from controlplane.topics.models import NO_LEADER, Partition

from . import election, throttles

__all__ = ("Assignment", "PartitionResult", "alter_reassignments", "audit_target", "complete_if_ready",
           "list_reassignments", "maybe_complete", "revert", "start", "validate_target")


@dataclass(frozen=True)
class Assignment:
    """What a reassignment changes of one partition. Invariants as `topics.models.Partition`'s."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @classmethod
    def of(cls, p: Partition) -> "Assignment":
        return cls(tuple(p.replicas), tuple(p.isr), p.leader, tuple(p.adding_replicas), tuple(p.removing_replicas))

    @property
    def original(self) -> tuple[int, ...]:
        """The replicas before the reassignment in progress (the replicas when none is)."""
        return tuple(b for b in self.replicas if b not in self.adding)

    @property
    def target(self) -> tuple[int, ...]:
        return tuple(b for b in self.replicas if b not in self.removing)


def _online_leader(order: Sequence[int], isr: Sequence[int], leader: int, live: Collection[int]) -> int:
    """Kafka's ONLINE election: the leader stays while in the ISR and live, else the first live ISR member."""
    if leader in isr and leader in live:
        return leader
    return next((b for b in order if b in isr and b in live), NO_LEADER)


def validate_target(target: Sequence[int], registered: Collection[int], where: str) -> None:
    """INVALID_REPLICA_ASSIGNMENT unless `target` is a non-empty list of distinct registered brokers."""
    if not target:
        raise KafkaApiError("INVALID_REPLICA_ASSIGNMENT", f"The manual partition assignment of {where} is empty.")
    if len(set(target)) != len(target):
        raise KafkaApiError("INVALID_REPLICA_ASSIGNMENT",
                            f"The manual partition assignment of {where} includes duplicate replicas.")
    unknown = [b for b in target if b not in registered]
    if unknown:
        raise KafkaApiError("INVALID_REPLICA_ASSIGNMENT", f"The manual partition assignment of {where} includes "
                                                           f"broker {unknown[0]}, but no such broker is registered.")


def start(current: Assignment, target: Sequence[int], live: Collection[int]) -> Assignment:
    """The partition once a reassignment to `target` began (and, if its ISR already qualifies, completed)."""
    original = current.original
    adding = tuple(b for b in target if b not in original)
    removing = tuple(b for b in original if b not in target)
    replicas = tuple(target) + removing
    isr = tuple(b for b in replicas if b in current.isr)  # replica order; adding replicas no longer targeted leave
    leader = _online_leader(replicas, isr, current.leader, live)
    return complete_if_ready(Assignment(replicas, isr, leader, adding, removing), live)


def complete_if_ready(a: Assignment, live: Collection[int]) -> Assignment:
    """`a` completed if every target replica is in sync (and some target replica is); else `a` unchanged."""
    if not a.adding and not a.removing:
        return a
    target = a.target
    isr = tuple(b for b in target if b in a.isr)
    if not isr or len(isr) != len(target):
        return a
    return Assignment(target, isr, _online_leader(target, isr, a.leader, live))


def revert(a: Assignment, live: Collection[int], unclean: bool, where: str) -> Assignment:
    """Cancel the reassignment in progress: back to the original replicas, adding replicas leave the ISR."""
    if not a.adding and not a.removing:
        raise KafkaApiError("NO_REASSIGNMENT_IN_PROGRESS", f"No reassignment of {where} is in progress.")
    original = a.original
    isr = tuple(b for b in original if b in a.isr)
    if not isr:
        if not unclean:
            raise KafkaApiError("INVALID_REPLICA_ASSIGNMENT", f"Unable to revert the partition assignment of {where} "
                                                               "because it would require an unclean leader election.")
        leader = next((b for b in original if b in live), NO_LEADER)
        return Assignment(original, (leader,) if leader != NO_LEADER else (original[0],), leader)
    return Assignment(original, isr, _online_leader(original, isr, a.leader, live))


def _write(partition: Partition, new: Assignment) -> bool:
    """Store `new` if the partition still has the epochs it was read with; True if a row changed.
    Caller holds `metadata.locked_state()`."""
    old = Assignment.of(partition)
    if new == old:
        return False
    replica_left = not set(old.replicas) <= set(new.replicas)
    leader_epoch = partition.leader_epoch + (1 if new.leader != old.leader or replica_left else 0)
    fields = {"replicas": list(new.replicas), "isr": list(new.isr), "leader": new.leader,
              "adding_replicas": list(new.adding), "removing_replicas": list(new.removing),
              "leader_epoch": leader_epoch, "partition_epoch": partition.partition_epoch + 1}
    updated = Partition.objects.filter(pk=partition.pk, leader_epoch=partition.leader_epoch,
                                       partition_epoch=partition.partition_epoch).update(**fields)
    if updated:
        for name, value in fields.items():
            setattr(partition, name, value)
        if not (new.adding or new.removing) and (old.adding or old.removing or old.replicas != new.replicas):
            throttles.release(partition)  # completed or cancelled (perhaps at once, e.g. only removing replicas)
    return bool(updated)


def maybe_complete(partition: Partition, live: Collection[int]) -> bool:
    """Complete `partition`'s reassignment if its ISR now qualifies. Caller holds `metadata.locked_state()`;
    True if the partition changed (the caller bumps the metadata version)."""
    if not partition.is_reassigning:
        return False
    return _write(partition, complete_if_ready(Assignment.of(partition), live))


@dataclass(frozen=True)
class PartitionResult:
    """One partition's answer to AlterPartitionReassignments: `error` None on success."""

    topic: str
    partition: int
    error: str | None = None
    message: str | None = None


def alter_reassignments(requests: Sequence[tuple[str, int, Sequence[int] | None]]) -> list[PartitionResult]:
    """Kafka's AlterPartitionReassignments, in one transaction: each (topic, partition, target replicas) starts
    or replaces a reassignment, a target of None cancels one. Errors are per partition (the others still apply):
    UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT, NO_REASSIGNMENT_IN_PROGRESS."""
    results = []
    with transaction.atomic():
        state = metadata.locked_state()
        live = election.live_broker_ids()
        registered = set(Broker.objects.values_list("broker_id", flat=True))
        changed = False
        for topic, number, target in requests:
            where = f"{topic}-{number}"
            partition = Partition.objects.select_related("topic").filter(topic__name=topic, partition=number).first()
            try:
                if partition is None:
                    raise KafkaApiError("UNKNOWN_TOPIC_OR_PARTITION", f"Unknown partition {where}")
                current = Assignment.of(partition)
                if target is None:
                    new = revert(current, live, election.unclean_allowed(partition.topic), where)
                else:
                    validate_target(list(target), registered, where)
                    new = start(current, list(target), live)
            except KafkaApiError as e:
                results.append(PartitionResult(topic, number, e.error, e.message))
                continue
            changed |= _write(partition, new)
            results.append(PartitionResult(topic, number))
        if changed:
            metadata.bump(state)
    return results


def list_reassignments(targets: Sequence[tuple[str, int]] | None = None) -> list[dict]:
    """Kafka's ListPartitionReassignments: the partitions reassigning (of `targets`, or all), as
    `{topic, partition, replicas, adding_replicas, removing_replicas}`; unknown partitions are left out."""
    reassigning = [p for p in Partition.objects.select_related("topic").order_by("topic__name", "partition")
                   if p.is_reassigning]
    if targets is not None:
        wanted = set(targets)
        reassigning = [p for p in reassigning if (p.topic.name, p.partition) in wanted]
    return [{"topic": p.topic.name, "partition": p.partition, "replicas": list(p.replicas),
             "adding_replicas": list(p.adding_replicas), "removing_replicas": list(p.removing_replicas)}
            for p in reassigning]


def audit_target(requests: Sequence[tuple[str, int, Sequence[int] | None]]) -> str:
    return "partitions:" + ",".join(f"{t}-{p}" for t, p, _ in requests)
