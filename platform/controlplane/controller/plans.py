"""Kafka's `kafka-reassign-partitions` over the metadata store (/work/shared/reference/reassignment.md §1):
its JSON formats and its `--generate`, `--execute`, `--verify`, `--cancel` and `--list` steps, shared by
`manage.py reassign_partitions` and the other front ends. Callers check and audit (START_REASSIGNMENT,
CANCEL_REASSIGNMENT, CLEAR_REASSIGNMENT_THROTTLES).

Plan JSON: `{"version": 1, "partitions": [{"topic", "partition", "replicas": [...], "log_dirs": [...]}]}`
(`replicas[0]` is the preferred leader; `log_dirs`, if present, as long as `replicas`, only "any" supported).
Topics to move: `{"version": 1, "topics": [{"topic": "t"}, ...]}`.
"""

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass

from controlplane.cluster.models import Broker
from controlplane.core.errors import KafkaApiError
from controlplane.topics.models import Partition, Topic
from controlplane.topics.placement import PlacementError, assign_replicas

from . import reassignment, throttles
from .reassignment import Assignment, PartitionResult

__all__ = ("MIN_THROTTLE", "PlanEntry", "Verification", "cancel", "current_assignment", "execute",
           "execute_audit_states", "format_plan", "generate", "parse_plan", "parse_topics_to_move", "partitions_of",
           "verify")

MIN_THROTTLE = 1024
"""Kafka's tool refuses a `--throttle` below 1 KB/s (bytes/s)."""


@dataclass(frozen=True)
class PlanEntry:
    topic: str
    partition: int
    replicas: tuple[int, ...]


def _invalid(message: str) -> KafkaApiError:
    return KafkaApiError("INVALID_REQUEST", message)


def _json(text: str, what: str) -> dict:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as e:
        raise _invalid(f"The {what} is not valid JSON: {e}") from None
    if not isinstance(document, dict):
        raise _invalid(f"The {what} must be a JSON object")
    if document.get("version", 1) != 1:
        raise _invalid(f"Unsupported {what} version {document.get('version')!r}; only version 1 is known")
    return document


def parse_plan(text: str) -> list[PlanEntry]:
    """A reassignment JSON file → its entries; INVALID_REQUEST naming what is wrong."""
    partitions = _json(text, "reassignment JSON").get("partitions")
    if not isinstance(partitions, list) or not partitions:
        raise _invalid("The reassignment JSON has no partitions")
    entries, seen = [], set()
    for p in partitions:
        if not isinstance(p, dict) or not isinstance(p.get("topic"), str) or \
                not isinstance(p.get("partition"), int) or not isinstance(p.get("replicas"), list) or \
                not all(isinstance(b, int) and not isinstance(b, bool) for b in p["replicas"]):
            raise _invalid(f"Each partition needs a topic, a partition number and a replicas list: {p!r}")
        log_dirs = p.get("log_dirs")
        if log_dirs is not None and (not isinstance(log_dirs, list) or len(log_dirs) != len(p["replicas"])):
            raise _invalid(f"log_dirs of {p['topic']}-{p['partition']} must be as long as its replicas")
        if log_dirs is not None and any(d != "any" for d in log_dirs):
            raise _invalid("Moving replicas between log dirs is not supported; use \"any\"")
        key = (p["topic"], p["partition"])
        if key in seen:
            raise _invalid(f"Partition {key[0]}-{key[1]} appears more than once in the reassignment JSON")
        seen.add(key)
        entries.append(PlanEntry(p["topic"], p["partition"], tuple(p["replicas"])))
    return entries


def parse_topics_to_move(text: str) -> list[str]:
    topics = _json(text, "topics-to-move JSON").get("topics")
    if not isinstance(topics, list) or not topics or \
            not all(isinstance(t, dict) and isinstance(t.get("topic"), str) for t in topics):
        raise _invalid('The topics-to-move JSON must be {"topics": [{"topic": "name"}, ...], "version": 1}')
    return list(dict.fromkeys(t["topic"] for t in topics))


def format_plan(entries: Sequence[PlanEntry]) -> str:
    """Kafka's plan JSON (`formatAsReassignmentJson`): version 1, `log_dirs` all "any"."""
    return json.dumps({"version": 1, "partitions": [
        {"topic": e.topic, "partition": e.partition, "replicas": list(e.replicas),
         "log_dirs": ["any"] * len(e.replicas)} for e in entries]}, separators=(",", ":"))


def partitions_of(keys: Sequence[tuple[str, int]]) -> dict[tuple[str, int], Partition]:
    """The partitions by (topic, number); UNKNOWN_TOPIC_OR_PARTITION naming any missing."""
    topics = {t for t, _ in keys}
    found = {(p.topic.name, p.partition): p for p in
             Partition.objects.select_related("topic").filter(topic__name__in=topics)}
    missing = [f"{t}-{n}" for t, n in keys if (t, n) not in found]
    if missing:
        raise KafkaApiError("UNKNOWN_TOPIC_OR_PARTITION", f"Unknown partitions: {', '.join(missing)}")
    return found


def current_assignment(keys: Sequence[tuple[str, int]]) -> list[PlanEntry]:
    """The partitions' replicas now (before a reassignment in progress: its original replicas), for rollback."""
    found = partitions_of(keys)
    return [PlanEntry(t, n, Assignment.of(found[t, n]).original) for t, n in keys]


def generate(topics: Sequence[str], broker_list: Sequence[int], rack_aware: bool = True,
             rng: random.Random | None = None) -> tuple[list[PlanEntry], list[PlanEntry]]:
    """Kafka's `--generate`: (current, proposed) for `topics`, each topic placed from scratch onto
    `broker_list` by the topic-creation algorithm with the replication factor of its first partition."""
    brokers = dict(Broker.objects.filter(broker_id__in=broker_list).values_list("broker_id", "rack"))
    unknown = sorted(set(broker_list) - set(brokers))
    if unknown:
        raise KafkaApiError("INVALID_REPLICA_ASSIGNMENT", f"Unknown broker ids {unknown}")
    if not rack_aware:
        brokers = dict.fromkeys(brokers, None)
    current, proposed = [], []
    for name in topics:
        topic = Topic.objects.filter(name=name).first()
        if topic is None:
            raise KafkaApiError("UNKNOWN_TOPIC_OR_PARTITION", f"Topic {name} not found")
        partitions = list(topic.partitions.order_by("partition"))
        current += [PlanEntry(name, p.partition, Assignment.of(p).original) for p in partitions]
        try:
            lists = assign_replicas(brokers, len(partitions), len(Assignment.of(partitions[0]).original), rng)
        except PlacementError as e:
            raise KafkaApiError("INVALID_REPLICATION_FACTOR", str(e)) from None
        proposed += [PlanEntry(name, p.partition, tuple(r)) for p, r in zip(partitions, lists, strict=True)]
    return current, proposed


def execute(entries: Sequence[PlanEntry], throttle: int = -1, additional: bool = False) -> list[PartitionResult]:
    """Kafka's `--execute`: refuse while other reassignments run (unless `additional`), set the throttle
    (bytes/s, -1 for none) on the moves, then AlterPartitionReassignments."""
    if 0 <= throttle < MIN_THROTTLE:
        raise _invalid(f"The throttle must be at least {MIN_THROTTLE} B/s (or -1 for none), not {throttle}")
    keys = [(e.topic, e.partition) for e in entries]
    if not additional and reassignment.list_reassignments():
        raise KafkaApiError("REASSIGNMENT_IN_PROGRESS", "Cannot execute because there is an existing partition "
                                                         "reassignment (use --additional to add to it)")
    sources = {(e.topic, e.partition): e.replicas for e in current_assignment(keys)}
    registered = set(Broker.objects.values_list("broker_id", flat=True))
    for e in entries:
        reassignment.validate_target(list(e.replicas), registered, f"{e.topic}-{e.partition}")
    if throttle >= 0:
        throttles.set_throttles({(e.topic, e.partition): (sources[e.topic, e.partition], e.replicas)
                                 for e in entries}, throttle)
    return reassignment.alter_reassignments([(e.topic, e.partition, list(e.replicas)) for e in entries])


def execute_audit_states(current: Sequence[PlanEntry], entries: Sequence[PlanEntry], throttle: int,
                         results: Sequence[PartitionResult]) -> tuple[dict, dict]:
    """(before, after) of an `--execute` for the audit log: replicas, targets, throttle, per-partition errors."""
    return ({"replicas": {f"{e.topic}-{e.partition}": list(e.replicas) for e in current}},
            {"targets": {f"{e.topic}-{e.partition}": list(e.replicas) for e in entries}, "throttle": throttle,
             "errors": {f"{r.topic}-{r.partition}": r.error for r in results if r.error}})


@dataclass(frozen=True)
class Verification:
    """`--verify` of one partition: `state` is "in progress", "completed" or "other" (a different replica set
    and no reassignment: `actual` holds it)."""

    topic: str
    partition: int
    state: str
    actual: tuple[int, ...] = ()


def verify(entries: Sequence[PlanEntry]) -> tuple[list[Verification], bool]:
    """Kafka's `--verify`: each partition's state, and whether no reassignment at all is in progress (then
    the caller may clear throttles with `throttles.clear_throttles`)."""
    found = partitions_of([(e.topic, e.partition) for e in entries])
    states = []
    for e in entries:
        p = found[e.topic, e.partition]
        if p.is_reassigning:
            states.append(Verification(e.topic, e.partition, "in progress"))
        elif tuple(p.replicas) == e.replicas:
            states.append(Verification(e.topic, e.partition, "completed"))
        else:
            states.append(Verification(e.topic, e.partition, "other", tuple(p.replicas)))
    return states, not reassignment.list_reassignments()


def cancel(entries: Sequence[PlanEntry]) -> list[PartitionResult]:
    """Kafka's `--cancel`: revert those of the plan's partitions that are reassigning."""
    keys = [(e.topic, e.partition) for e in entries]
    found = partitions_of(keys)
    return reassignment.alter_reassignments([(t, n, None) for t, n in keys if found[t, n].is_reassigning])
