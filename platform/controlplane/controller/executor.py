"""The reassignment executor: runs a plan as Cruise Control's executor does (/work/shared/reference/reassignment.md
§2.5-§2.7) over Kafka's reassignment semantics (`reassignment`), with its state and progress in the database
(`models.ReassignmentExecution` / `ReassignmentTask`).

Decisions (pure, table-tested): `next_batch` picks the pending moves to start now —
- **order**: partitions whose ISR is below `min.insync.replicas` first (their move restores availability), then
  those at it with a replica out of sync (one failure from unavailability; Cruise Control's
  PrioritizeMinIsrWithOfflineReplicas / PrioritizeOneAboveMinIsr…), then the rest; smaller partitions first
  within a tier (PrioritizeSmallReplicaMovement), then by name;
- **concurrency**: a move occupies its partition's leader (the copy's source) and every broker gaining or losing a
  replica; none may be in more than `max_moves_per_broker` moves at once, nor the cluster in more than
  `max_moves`; a partition without a leader waits (nothing to copy from).
Kafka's completion rule keeps every moved partition at or above `min.insync.replicas`: the removed replicas leave
only once every target replica is in the ISR, so the ISR never shrinks below the target's size, which `create`
requires to be at least `min.insync.replicas`.

Progress (`progress.copy_progress`) comes from the brokers' latest replica sizes (`metrics.PartitionReplicaSize`,
sampled every `strom.metrics.sample.interval.ms`).

`advance` is one step of the controller's loop (`Controller.tick`, every `STROM_EXECUTOR_INTERVAL_MS`): follow
the moves in progress in the metadata store, refresh their progress, and (unless paused) start the next batch:
throttles set as Kafka's tool sets them (`throttles.set_throttles`; the controller releases a partition's
throttle when its move ends), then AlterPartitionReassignments. `pause` stops new moves from starting (those in
progress finish); `cancel` cancels pending moves and reverts those in progress. Each runs in one transaction
holding the metadata lock, so the web process and the controller never interleave.
"""

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from controlplane.cluster import metadata
from controlplane.cluster.models import Broker
from controlplane.core.errors import KafkaApiError
from controlplane.metrics.models import PartitionReplicaSize
from controlplane.topics.models import NO_LEADER, Partition

from . import plans, reassignment, throttles
from .models import (
    ACTIVE_STATES,
    FINAL_TASK_STATES,
    IN_PROGRESS_STATES,
    ExecutionState,
    ReassignmentExecution,
    ReassignmentTask,
    TaskState,
)
from .progress import copy_progress

__all__ = ("Move", "PartitionNow", "advance", "cancel", "create", "next_batch", "occupied_brokers", "pause",
           "resume", "urgency")

Key = tuple[str, int]


@dataclass(frozen=True)
class Move:
    """A pending or running move: `size` is one replica's bytes (the planner's estimate)."""

    key: Key
    sources: tuple[int, ...]
    targets: tuple[int, ...]
    size: int = 0


@dataclass(frozen=True)
class PartitionNow:
    """What the metadata store says of a partition now."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    min_insync: int


def urgency(p: PartitionNow) -> int:
    """0: ISR below min.insync.replicas; 1: at it with a replica out of sync; 2: otherwise (lower goes first)."""
    if len(p.isr) < p.min_insync:
        return 0
    if len(p.isr) == p.min_insync and len(p.isr) < len(p.replicas):
        return 1
    return 2


def occupied_brokers(move: Move, leader: int) -> frozenset[int]:
    """The brokers a move keeps busy: its copy source (the leader) and every broker gaining or losing a replica."""
    changing = set(move.sources) ^ set(move.targets)
    return frozenset(changing | ({leader} if leader != NO_LEADER else set()))


def next_batch(pending: Sequence[Move], running: Sequence[tuple[Move, int]], now: Mapping[Key, PartitionNow],
               max_moves_per_broker: int, max_moves: int) -> list[Move]:
    """The pending moves to start now, in order (see the module docstring). `running` pairs each move in
    progress with the leader it copies from; `now` has every pending move's partition."""
    busy = Counter(b for move, leader in running for b in occupied_brokers(move, leader))
    started = len(running)
    batch = []
    for move in sorted(pending, key=lambda m: (urgency(now[m.key]), m.size, m.key)):
        if started >= max_moves:
            break
        leader = now[move.key].leader
        if leader == NO_LEADER:
            continue
        brokers = occupied_brokers(move, leader)
        if any(busy[b] >= max_moves_per_broker for b in brokers):
            continue
        batch.append(move)
        busy.update(brokers)
        started += 1
    return batch


#
# Over the database
#


def _partitions(topics: Collection[str]) -> dict[Key, Partition]:
    return {(p.topic.name, p.partition): p
            for p in Partition.objects.select_related("topic").filter(topic__name__in=set(topics))}


def _now(p: Partition) -> PartitionNow:
    return PartitionNow(tuple(p.replicas), tuple(p.isr), p.leader, int(p.topic.effective_configs()[
        "min.insync.replicas"]))


def _replica_sizes(topics: Collection[str]) -> dict[tuple[str, int, int], PartitionReplicaSize]:
    return {(r.topic, r.partition, r.broker_id): r for r in PartitionReplicaSize.objects.filter(topic__in=set(topics))}


def create(entries: Sequence[plans.PlanEntry], description: str, user=None, throttle: int = -1,
           max_moves_per_broker: int = 10, max_moves: int = 1250) -> ReassignmentExecution:
    """Store a plan for the executor (it starts on the controller's next look). Refused while another execution
    is active or a plan partition is reassigning (REASSIGNMENT_IN_PROGRESS), for unknown partitions or brokers,
    a target smaller than the topic's min.insync.replicas (INVALID_REPLICA_ASSIGNMENT), a throttle below 1 KB/s,
    or a plan that changes nothing (INVALID_REQUEST)."""
    if 0 <= throttle < plans.MIN_THROTTLE:
        raise KafkaApiError("INVALID_REQUEST", f"The throttle must be at least {plans.MIN_THROTTLE} B/s "
                                               f"(or -1 for none), not {throttle}")
    if max_moves_per_broker < 1 or max_moves < 1:
        raise KafkaApiError("INVALID_REQUEST", "The concurrency limits must be at least 1")
    keys = [(e.topic, e.partition) for e in entries]
    if len(set(keys)) != len(keys):
        raise KafkaApiError("INVALID_REQUEST", "A partition appears more than once in the plan")
    with transaction.atomic():
        metadata.locked_state()
        active = ReassignmentExecution.objects.filter(state__in=ACTIVE_STATES).first()
        if active is not None:
            raise KafkaApiError("REASSIGNMENT_IN_PROGRESS", f"Reassignment {active.pk} ({active.description}) is "
                                                            f"{active.state}; cancel it or wait for it to finish")
        found = plans.partitions_of(keys)
        registered = set(Broker.objects.values_list("broker_id", flat=True))
        sizes = _replica_sizes({t for t, _ in keys})
        tasks = []
        for e in entries:
            where = f"{e.topic}-{e.partition}"
            p = found[e.topic, e.partition]
            if p.is_reassigning:
                raise KafkaApiError("REASSIGNMENT_IN_PROGRESS", f"{where} is being reassigned already")
            reassignment.validate_target(list(e.replicas), registered, where)
            min_insync = _now(p).min_insync
            if len(e.replicas) < min_insync:
                raise KafkaApiError("INVALID_REPLICA_ASSIGNMENT", f"{where} would have {len(e.replicas)} replica(s), "
                                                                  f"fewer than its min.insync.replicas={min_insync}")
            if tuple(p.replicas) == e.replicas:
                continue
            size = max((sizes[e.topic, e.partition, b].size_bytes for b in p.replicas
                        if (e.topic, e.partition, b) in sizes), default=0)
            tasks.append(ReassignmentTask(topic=e.topic, partition=e.partition, source_replicas=list(p.replicas),
                                          target_replicas=list(e.replicas), size_estimate=size))
        if not tasks:
            raise KafkaApiError("INVALID_REQUEST", "The plan changes no partition's replicas")
        execution = ReassignmentExecution.objects.create(
            description=description[:200], created_by=user, throttle=throttle,
            max_moves_per_broker=max_moves_per_broker, max_moves=max_moves)
        for task in tasks:
            task.execution = execution
        ReassignmentTask.objects.bulk_create(tasks)
    return execution


def _move(task: ReassignmentTask) -> Move:
    return Move((task.topic, task.partition), tuple(task.source_replicas), tuple(task.target_replicas),
                task.size_estimate)


def _finish_task(task: ReassignmentTask, state: TaskState, now: datetime, error: str = "") -> None:
    task.state, task.finished_at, task.error = state, now, error[:500]
    if state == TaskState.DONE:
        task.bytes_copied = task.bytes_to_copy


def _follow(task: ReassignmentTask, p: Partition | None, sizes: Mapping, now: datetime) -> None:
    """Update a task in progress from its partition's state and the latest replica sizes."""
    if p is None:
        return _finish_task(task, TaskState.FAILED, now, "the partition was deleted")
    if not p.is_reassigning:
        if p.replicas == task.target_replicas:
            leader = sizes.get((task.topic, task.partition, p.leader))
            if leader is not None:  # a final reading if the sample is newer than the last look
                task.bytes_to_copy = max(task.bytes_to_copy, leader.size_bytes * len(task.adding))
            return _finish_task(task, TaskState.DONE, now)
        if p.replicas == task.source_replicas:
            return _finish_task(task, TaskState.CANCELLED, now, "cancelled outside this execution")
        return _finish_task(task, TaskState.FAILED, now, f"the replicas were changed outside this execution to "
                                                         f"{p.replicas}")
    if p.target_replicas != task.target_replicas:
        return _finish_task(task, TaskState.FAILED, now, f"reassigned outside this execution to {p.target_replicas}")
    adding = task.adding
    task.state = TaskState.IN_ISR if all(b in p.isr for b in adding) else TaskState.COPYING
    leader = sizes.get((task.topic, task.partition, p.leader))
    if leader is None:
        return None
    fresh = {b: r.size_bytes for b in adding if (r := sizes.get((task.topic, task.partition, b))) is not None
             and task.started_at is not None and r.sampled_at >= task.started_at}
    to_copy, copied = copy_progress(adding, p.isr, leader.size_bytes, fresh)
    task.bytes_to_copy = max(task.bytes_to_copy, to_copy)  # the leader's log grows under load
    task.bytes_copied = min(max(task.bytes_copied, copied), task.bytes_to_copy)
    return None


def _start(execution: ReassignmentExecution, tasks: Sequence[ReassignmentTask], partitions: Mapping[Key, Partition],
           now: datetime) -> None:
    pending = [t for t in tasks if t.state == TaskState.PENDING]
    if not pending:
        return
    running = [(_move(t), partitions[t.topic, t.partition].leader) for t in tasks
               if t.state in IN_PROGRESS_STATES and (t.topic, t.partition) in partitions]
    for task in pending:
        if (task.topic, task.partition) not in partitions:
            _finish_task(task, TaskState.FAILED, now, "the partition was deleted")
    waiting = [t for t in pending if t.state == TaskState.PENDING]
    batch = next_batch([_move(t) for t in waiting], running,
                       {(t.topic, t.partition): _now(partitions[t.topic, t.partition]) for t in waiting},
                       execution.max_moves_per_broker, execution.max_moves)
    if not batch:
        return
    by_key = {(t.topic, t.partition): t for t in waiting}
    if execution.throttle >= 0:
        throttles.set_throttles({m.key: (m.sources, m.targets) for m in batch}, execution.throttle)
    results = reassignment.alter_reassignments([(m.key[0], m.key[1], list(m.targets)) for m in batch])
    for result in results:
        task = by_key[result.topic, result.partition]
        if result.error:
            _finish_task(task, TaskState.FAILED, now, f"{result.error}: {result.message}")
        else:
            task.state, task.started_at = TaskState.COPYING, now
            task.bytes_to_copy = task.size_estimate * len(task.adding)  # until the leader's size is read
            execution.copy_started_at = execution.copy_started_at or now


def _advance(execution: ReassignmentExecution, now: datetime) -> None:
    tasks = list(execution.tasks.all())
    topics = {t.topic for t in tasks}
    partitions = _partitions(topics)
    sizes = _replica_sizes(topics)
    for task in tasks:
        if task.state in IN_PROGRESS_STATES:
            _follow(task, partitions.get((task.topic, task.partition)), sizes, now)
    if execution.state == ExecutionState.RUNNING:
        _start(execution, tasks, partitions, now)
    _save(execution, tasks, now)


def _save(execution: ReassignmentExecution, tasks: Sequence[ReassignmentTask], now: datetime) -> None:
    """Store the tasks and the execution's totals; an execution whose tasks all ended is finished."""
    ReassignmentTask.objects.bulk_update(tasks, ["state", "bytes_to_copy", "bytes_copied", "started_at",
                                                 "finished_at", "error"])
    execution.bytes_to_copy = sum(t.bytes_to_copy for t in tasks)
    execution.bytes_copied = sum(t.bytes_copied for t in tasks)
    execution.updated_at = now
    if execution.is_active and all(t.state in FINAL_TASK_STATES for t in tasks):
        execution.state = ExecutionState.FAILED if any(t.state == TaskState.FAILED for t in tasks) \
            else ExecutionState.COMPLETED
        execution.finished_at = now
    execution.save()


def advance(now: datetime | None = None) -> list[int]:
    """One look at every active execution (the controller's loop); returns their ids."""
    now = now or timezone.now()
    with transaction.atomic():
        metadata.locked_state()
        executions = list(ReassignmentExecution.objects.filter(state__in=ACTIVE_STATES))
        for execution in executions:
            _advance(execution, now)
    return [e.pk for e in executions]


def _locked(execution_id: int) -> ReassignmentExecution:
    metadata.locked_state()
    execution = ReassignmentExecution.objects.filter(pk=execution_id).first()
    if execution is None:
        raise KafkaApiError("INVALID_REQUEST", f"No reassignment {execution_id}", status=404)
    return execution


def _refuse(execution: ReassignmentExecution, verb: str) -> KafkaApiError:
    return KafkaApiError("INVALID_REQUEST", f"Reassignment {execution.pk} is {execution.state}; it cannot be {verb}",
                         status=409)


def _transition(execution_id: int, from_state: ExecutionState, to_state: ExecutionState,
                verb: str) -> ReassignmentExecution:
    with transaction.atomic():
        execution = _locked(execution_id)
        if execution.state != from_state:
            raise _refuse(execution, verb)
        execution.state = to_state
        execution.save(update_fields=["state"])
    return execution


def pause(execution_id: int) -> ReassignmentExecution:
    """No new moves start (those in progress finish); 409 unless running."""
    return _transition(execution_id, ExecutionState.RUNNING, ExecutionState.PAUSED, "paused")


def resume(execution_id: int) -> ReassignmentExecution:
    """Start moves again from the next look; 409 unless paused."""
    return _transition(execution_id, ExecutionState.PAUSED, ExecutionState.RUNNING, "resumed")


def cancel(execution_id: int, now: datetime | None = None) -> ReassignmentExecution:
    """Cancel the whole execution: pending moves are cancelled, moves in progress reverted to their original
    replicas (Kafka's cancel; a move whose revert is refused, e.g. it would need an unclean election, is failed
    with that reason and keeps going). 409 unless running or paused."""
    now = now or timezone.now()
    with transaction.atomic():
        execution = _locked(execution_id)
        if not execution.is_active:
            raise _refuse(execution, "cancelled")
        tasks = list(execution.tasks.all())
        partitions = _partitions({t.topic for t in tasks})
        sizes = _replica_sizes({t.topic for t in tasks})
        for task in tasks:  # a last look first, so moves that just finished count as done
            if task.state in IN_PROGRESS_STATES:
                _follow(task, partitions.get((task.topic, task.partition)), sizes, now)
        running = {(t.topic, t.partition): t for t in tasks if t.state in IN_PROGRESS_STATES}
        for result in reassignment.alter_reassignments([(t, p, None) for t, p in running]):
            task = running[result.topic, result.partition]
            if result.error:
                _finish_task(task, TaskState.FAILED, now, f"could not be cancelled: {result.message}")
            else:
                _finish_task(task, TaskState.CANCELLED, now)
        for task in tasks:
            if task.state == TaskState.PENDING:
                _finish_task(task, TaskState.CANCELLED, now)
        execution.state, execution.finished_at = ExecutionState.CANCELLED, now
        _save(execution, tasks, now)
    return execution
