"""Leader election and ISR changes, as Kafka's controller makes them (KRaft `PartitionChangeBuilder`).

The `choose_*` functions are pure: given a partition's replicas, ISR and leader and the set of live brokers
they return the partition's next `(leader, isr)`. `apply_change` writes one partition conditionally on the
epochs it was read at, bumping `leader_epoch` when the leader changes and `partition_epoch` on any change;
`apply_changes` writes many given partitions (ElectLeaders) in a few statements, one per distinct outcome
and `CHANGE_CHUNK` partitions; a broker failure, the offline election and the rebalance (`_elect`) decide
once per distinct partition state and write one UPDATE per outcome, without reading partitions. Callers
hold `metadata.locked_state()` inside one transaction and bump the metadata version if anything changed: a
failure moving 30,000 leaderships is one transaction and one metadata version.

Glossary: a broker is *live* when it is registered and `running`; an *eligible* leader is a live ISR member;
an *unclean* election picks a live replica outside the ISR (may lose acknowledged records).
"""

import json
from collections import Counter
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count, F, Q, QuerySet, TextField
from django.db.models.functions import Cast

from controlplane.access import actions
from controlplane.access.actions import Action
from controlplane.cluster import metadata
from controlplane.cluster.models import Broker, BrokerState
from controlplane.core.errors import KafkaApiError
from controlplane.topics.models import NO_LEADER, Partition, Topic

__all__ = ("PREFERRED", "UNCLEAN", "ElectionResult", "PartitionState", "apply_change", "apply_changes", "audit_states",
           "audit_target", "choose_after_fencing", "choose_leader_for_offline", "choose_preferred", "elect_leaders",
           "elect_offline_partitions", "election_action", "live_broker_ids",
           "on_broker_gone", "rebalance_preferred_leaders", "topic_targets", "unclean_allowed")

PREFERRED = "preferred"
UNCLEAN = "unclean"
CHANGE_CHUNK = 500
"""Partition ids per UPDATE in `apply_changes` (SQLite allows 999 parameters per statement by default)."""
MAX_STATES_BY_CONDITION = 32
"""`_elect` matches at most this many partition states in the WHERE of its UPDATEs (each costs a comparison
per row and state), above it it updates by id."""
UNCLEAN_CONFIG = "unclean.leader.election.enable"


@dataclass(frozen=True)
class PartitionState:
    """The part of a partition an election decides: its leader and ISR."""

    leader: int
    isr: tuple[int, ...]


def choose_after_fencing(replicas: list[int], isr: list[int], leader: int, gone: int, live: Collection[int],
                         unclean: bool) -> PartitionState:
    """`gone` stopped being live: drop it from the ISR and, if it led, elect the first eligible replica.

    The ISR never becomes empty: if `gone` was its last member it stays (Kafka keeps the last ISR so the
    partition can come back when that broker does) and the partition has no leader, unless `unclean`
    allows a live out-of-sync replica to take over.
    """
    new_isr = [b for b in isr if b != gone]
    if not new_isr:
        new_isr = list(isr)
    new_leader = leader
    if leader == gone or leader not in new_isr:
        new_leader = next((b for b in replicas if b in new_isr and b in live and b != gone), NO_LEADER)
    if new_leader == NO_LEADER and unclean:
        new_leader = next((b for b in replicas if b in live and b != gone), NO_LEADER)
        if new_leader != NO_LEADER:
            new_isr = [new_leader]
    return PartitionState(new_leader, tuple(new_isr))


def choose_leader_for_offline(replicas: list[int], isr: list[int], live: Collection[int], unclean: bool
                              ) -> PartitionState | None:
    """A partition without a leader: the first live ISR member leads; with `unclean`, any live replica."""
    leader = next((b for b in replicas if b in isr and b in live), NO_LEADER)
    if leader != NO_LEADER:
        return PartitionState(leader, tuple(isr))
    if unclean:
        leader = next((b for b in replicas if b in live), NO_LEADER)
        if leader != NO_LEADER:
            return PartitionState(leader, (leader,))
    return None


def choose_preferred(replicas: list[int], isr: list[int], leader: int, live: Collection[int]
                     ) -> PartitionState | str:
    """Preferred-leader election: `replicas[0]` leads if it is live and in sync; else a Kafka error name."""
    preferred = replicas[0]
    if leader == preferred:
        return "ELECTION_NOT_NEEDED"
    if preferred not in isr or preferred not in live:
        return "PREFERRED_LEADER_NOT_AVAILABLE"
    return PartitionState(preferred, tuple(isr))


def live_broker_ids() -> set[int]:
    return set(Broker.objects.filter(state=BrokerState.RUNNING).values_list("broker_id", flat=True))


def unclean_allowed(topic: Topic) -> bool:
    return bool(topic.effective_configs()[UNCLEAN_CONFIG])


def apply_change(partition: Partition, change: PartitionState) -> bool:
    """Write `change` if the partition still has the epochs it was read with; True if a row changed.

    The caller holds the controller-state lock, so the condition normally holds; it is the last line of
    defence against a writer that did not take the lock.
    """
    if partition.leader == change.leader and tuple(partition.isr) == change.isr:
        return False
    leader_epoch = partition.leader_epoch + (1 if partition.leader != change.leader else 0)
    updated = Partition.objects.filter(
        pk=partition.pk, leader_epoch=partition.leader_epoch, partition_epoch=partition.partition_epoch,
    ).update(leader=change.leader, isr=list(change.isr), leader_epoch=leader_epoch,
             partition_epoch=partition.partition_epoch + 1)
    if updated:
        partition.leader, partition.isr = change.leader, list(change.isr)
        partition.leader_epoch, partition.partition_epoch = leader_epoch, partition.partition_epoch + 1
    return bool(updated)


def apply_changes(changes: Iterable[tuple[Partition, PartitionState]]) -> list[Partition]:
    """Write many elections at once; returns the partitions that changed (updated in memory too).

    Partitions with the same outcome (new leader, new ISR, whether the leader moves) share one UPDATE that
    increments their epochs in the database (`F`), in chunks of `CHANGE_CHUNK` ids: a broker failure costs a
    handful of statements, not one round trip per partition. Unlike `apply_change` the rows are not
    re-checked against the epochs they were read at: the caller's `locked_state()` is the guarantee (every
    writer of partitions takes it first).
    """
    groups: dict[tuple[int, tuple[int, ...], bool], list[Partition]] = {}
    for partition, change in changes:
        if partition.leader == change.leader and tuple(partition.isr) == change.isr:
            continue
        groups.setdefault((change.leader, change.isr, partition.leader != change.leader), []).append(partition)
    changed = []
    for (leader, isr, leader_moves), partitions in groups.items():
        for start in range(0, len(partitions), CHANGE_CHUNK):
            chunk = partitions[start:start + CHANGE_CHUNK]
            Partition.objects.filter(pk__in=[p.pk for p in chunk]).update(
                leader=leader, isr=list(isr), leader_epoch=F("leader_epoch") + (1 if leader_moves else 0),
                partition_epoch=F("partition_epoch") + 1)
        for partition in partitions:
            partition.leader, partition.isr = leader, list(isr)
            partition.leader_epoch += 1 if leader_moves else 0
            partition.partition_epoch += 1
        changed += partitions
    return changed


@dataclass(frozen=True)
class ElectionResult:
    topic: str
    partition: int
    error: str | None
    leader_before: int | None = None
    """The leader when the election started (None for an unknown partition); NO_LEADER if it had none."""
    leader_after: int | None = None


def election_action(election_type: str) -> Action:
    """The action an election of this type is checked and audited as."""
    return actions.ELECT_UNCLEAN_LEADERS if election_type == UNCLEAN else actions.ELECT_PREFERRED_LEADERS


def topic_targets(topic: str) -> list[tuple[str, int]]:
    """Every partition of `topic` as election targets (partition 0 of an unknown topic, which then fails with
    UNKNOWN_TOPIC_OR_PARTITION as in Kafka)."""
    numbers = Partition.objects.filter(topic__name=topic).values_list("partition", flat=True)
    return [(topic, n) for n in numbers] or [(topic, 0)]


def audit_target(targets: list[tuple[str, int]] | None) -> str:
    return "partitions:" + ("all" if targets is None else ",".join(f"{t}-{p}" for t, p in targets))


def audit_states(results: list[ElectionResult]) -> tuple[dict, dict]:
    """(before, after) for the audit log: leaders by "topic-partition", and the errors of those not elected."""
    return ({"leaders": {f"{r.topic}-{r.partition}": r.leader_before for r in results}},
            {"leaders": {f"{r.topic}-{r.partition}": r.leader_after for r in results},
             "errors": {f"{r.topic}-{r.partition}": r.error for r in results if r.error}})


def elect_leaders(election_type: str, targets: list[tuple[str, int]] | None) -> list[ElectionResult]:
    """Kafka's ElectLeaders, in one transaction. `targets` None means every partition; then, as in Kafka,
    partitions that need no election are left out of the results."""
    if election_type not in (PREFERRED, UNCLEAN):
        raise KafkaApiError("INVALID_REQUEST", f"Unknown election type {election_type!r}")
    with transaction.atomic():
        state = metadata.locked_state()
        live = live_broker_ids()
        partitions = Partition.objects.select_related("topic").order_by("topic__name", "partition")
        if targets is None:
            chosen = [(p.topic.name, p.partition, p) for p in partitions]
        else:
            by_key = {(p.topic.name, p.partition): p for p in partitions}
            chosen = [(t, n, by_key.get((t, n))) for t, n in targets]
        elected: list[tuple[Partition, PartitionState]] = []
        decided: list[tuple[str, int, str | None, Partition | None]] = []  # (topic, partition, error, row)
        for topic, number, partition in chosen:
            if partition is None:
                decided.append((topic, number, "UNKNOWN_TOPIC_OR_PARTITION", None))
                continue
            if election_type == PREFERRED:
                outcome = choose_preferred(partition.replicas, partition.isr, partition.leader, live)
            elif partition.leader != NO_LEADER and partition.leader in live:
                outcome = "ELECTION_NOT_NEEDED"
            else:
                outcome = choose_leader_for_offline(partition.replicas, partition.isr, live, unclean=True) \
                    or "ELIGIBLE_LEADERS_NOT_AVAILABLE"
            if isinstance(outcome, PartitionState):
                elected.append((partition, outcome))
                outcome = None
            if targets is not None or outcome != "ELECTION_NOT_NEEDED":
                decided.append((topic, number, outcome, partition))
        leaders_before = {p.pk: p.leader for p, _ in elected}
        if apply_changes(elected):
            metadata.bump(state)
    return [ElectionResult(topic, number, error) if row is None else
            ElectionResult(topic, number, error, leaders_before.get(row.pk, row.leader), row.leader)
            for topic, number, error, row in decided]


def _unclean_by_topic() -> dict[int, bool]:
    """`unclean_allowed` of every topic that overrides it (the others use the broker default)."""
    return {topic.pk: unclean_allowed(topic)
            for topic in Topic.objects.filter(configs__has_key=UNCLEAN_CONFIG).only("id", "configs")}


Decide = Callable[[list[int], list[int], int, bool], PartitionState | None]
"""An election rule: (replicas, ISR, leader, unclean allowed) → the partition's next state, None for none."""
Outcome = tuple[int, tuple[int, ...], bool]
"""What an UPDATE writes: the new leader, the new ISR, whether the leader moves (its epoch is incremented)."""
State = tuple[str, str, int]
"""(replicas, ISR, leader) as the database holds them: the JSON columns as text."""


def _with_state(partitions: QuerySet[Partition]) -> QuerySet[Partition]:
    return partitions.annotate(replicas_text=Cast("replicas", TextField()), isr_text=Cast("isr", TextField()))


def _in_states(partitions: QuerySet[Partition], states: Iterable[State]) -> QuerySet[Partition]:
    condition = Q()
    for replicas, isr, leader in states:
        condition |= Q(replicas_text=replicas, isr_text=isr, leader=leader)
    return _with_state(partitions).filter(condition)


def _write(partitions: QuerySet[Partition], outcome: Outcome) -> int:
    leader, isr, leader_moves = outcome
    return partitions.update(leader=leader, isr=list(isr), leader_epoch=F("leader_epoch") + int(leader_moves),
                             partition_epoch=F("partition_epoch") + 1)


def _outcome(decided: PartitionState | None, isr: list[int], leader: int) -> Outcome | None:
    if decided is None or (decided.leader == leader and decided.isr == tuple(isr)):
        return None
    return decided.leader, decided.isr, decided.leader != leader


def _states(partitions: QuerySet[Partition]) -> list[tuple[str, str, int, int]]:
    """The distinct states of `partitions` and how many partitions are in each: (replicas, ISR, leader,
    count), the JSON columns as the database's text; one GROUP BY."""
    return list(_with_state(partitions).order_by().values_list("replicas_text", "isr_text", "leader")
                .annotate(count=Count("id")))


def _elect(partitions: QuerySet[Partition], decide: Decide, states: list[tuple[str, str, int, int]] | None = None
           ) -> int:
    """Apply `decide` to every partition of `partitions` in a few set-based statements; returns how many
    partitions changed.

    An election depends only on a partition's state (replicas, ISR, leader) and its topic's
    `unclean.leader.election.enable`, and a cluster holds few distinct states (3 brokers, RF 3: a dozen
    or so, whatever the number of partitions). So the distinct states are read with GROUP BY, each is
    decided once, and each distinct outcome is one UPDATE whose WHERE matches the states leading to it,
    epochs incremented in SQL: no partition is read into Python. Two cases fall back to updating by id (in
    chunks of `CHANGE_CHUNK`), still reading only (id, topic, state) tuples: states whose outcome depends on
    the topic's unclean setting (a topic overrides it, and the whole ISR is gone), and more than
    `MAX_STATES_BY_CONDITION` changing states (large clusters), where one condition per state would scan
    the table once per state. `states`: `_states(partitions)` when the caller read them already.

    The rows are not re-checked against the epochs they were read at: the caller's `locked_state()` is the
    guarantee (every writer of partitions takes it first). The metadata log's triggers note every row an
    UPDATE changes, as for any other write.
    """
    flags, default = _unclean_by_topic(), unclean_allowed(Topic(configs={}))
    deviating = any(flag != default for flag in flags.values())
    outcomes: dict[State, Outcome] = {}
    by_flag: dict[State, dict[bool, Outcome | None]] = {}
    for replicas_text, isr_text, leader, _ in _states(partitions) if states is None else states:
        replicas, isr = json.loads(replicas_text), json.loads(isr_text)
        outcome = _outcome(decide(replicas, isr, leader, default), isr, leader)
        other = _outcome(decide(replicas, isr, leader, not default), isr, leader) if deviating else outcome
        if outcome != other:
            by_flag[replicas_text, isr_text, leader] = {default: outcome, not default: other}
        elif outcome is not None:
            outcomes[replicas_text, isr_text, leader] = outcome
    changed = 0
    if len(outcomes) <= MAX_STATES_BY_CONDITION:
        grouped: dict[Outcome, list[State]] = {}
        for state, outcome in outcomes.items():
            grouped.setdefault(outcome, []).append(state)
        for outcome, same in grouped.items():
            changed += _write(_in_states(partitions, same), outcome)
    else:
        by_flag.update((state, {False: outcome, True: outcome}) for state, outcome in outcomes.items())
    if by_flag:
        rows = _in_states(partitions, by_flag) if len(by_flag) <= MAX_STATES_BY_CONDITION else \
            _with_state(partitions)
        ids: dict[Outcome, list[int]] = {}
        for pk, topic, *state in rows.order_by().values_list("id", "topic_id", "replicas_text", "isr_text",
                                                             "leader").iterator(chunk_size=10_000):
            outcome = by_flag.get(tuple(state), {}).get(flags.get(topic, default))
            if outcome is not None:
                ids.setdefault(outcome, []).append(pk)
        for outcome, pks in ids.items():
            for start in range(0, len(pks), CHANGE_CHUNK):
                changed += _write(Partition.objects.filter(pk__in=pks[start:start + CHANGE_CHUNK]), outcome)
    return changed


def rebalance_preferred_leaders(live: Collection[int], threshold_percent: int) -> int:
    """Kafka's auto leader rebalance; returns how many partitions moved back to their preferred leader.

    A broker's imbalance is the share of the partitions it prefers to lead (it is their first replica) that
    it does not lead. Live brokers whose imbalance exceeds `threshold_percent` get those partitions back
    wherever they are in sync (`choose_preferred`). Counted and written per partition state (`_elect`): no
    partition is read into Python. Caller holds `metadata.locked_state()`.
    """
    partitions = Partition.objects.all()
    states = _states(partitions)
    preferred: Counter[int] = Counter()
    not_leading: Counter[int] = Counter()
    for replicas_text, _, leader, count in states:
        replicas = json.loads(replicas_text)
        if replicas:
            preferred[replicas[0]] += count
            not_leading[replicas[0]] += count if leader != replicas[0] else 0
    imbalanced = {b for b in preferred if b in live and not_leading[b] * 100 > threshold_percent * preferred[b]}

    def decide(replicas: list[int], isr: list[int], leader: int, _: bool) -> PartitionState | None:
        if not replicas or replicas[0] not in imbalanced:
            return None
        outcome = choose_preferred(replicas, isr, leader, live)
        return outcome if isinstance(outcome, PartitionState) else None

    return _elect(partitions, decide, states)


def on_broker_gone(broker_id: int, live: Collection[int]) -> bool:
    """`broker_id` was fenced or is shutting down: move its leaderships and drop it from ISRs, in a few
    set-based statements (`_elect`).

    Caller holds `metadata.locked_state()`; returns whether any partition changed.
    """
    def decide(replicas: list[int], isr: list[int], leader: int, unclean: bool) -> PartitionState | None:
        if broker_id not in replicas:
            return None
        return choose_after_fencing(replicas, isr, leader, broker_id, live, unclean)

    return bool(_elect(Partition.objects.all(), decide))


def elect_offline_partitions(live: Collection[int]) -> bool:
    """Give every partition without a leader the first live ISR member (or, where the topic allows unclean
    election, any live replica). Caller holds `metadata.locked_state()`; returns whether anything changed."""
    return bool(_elect(Partition.objects.filter(leader=NO_LEADER),
                       lambda replicas, isr, _, unclean: choose_leader_for_offline(replicas, isr, live, unclean)))
