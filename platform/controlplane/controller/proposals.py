"""Balance proposals for the cluster as the metadata store has it (`balance` does the planning, pure).

Partition sizes come from the brokers' latest metric samples (`metrics.TopicReplicaSize`: a topic's bytes on
a broker over its replicas there), estimated per partition as the largest per-replica average of its
topic over the brokers (0 before any sample arrived). Replica lists are the partitions' original replicas
when a reassignment is in progress. A proposal is a plan for `plans.execute` (Kafka's JSON via
`plans.format_plan`); proposing changes nothing.
"""

from collections.abc import Sequence
from dataclasses import replace

from controlplane.cluster.models import Broker, BrokerState
from controlplane.core.errors import KafkaApiError
from controlplane.metrics.models import TopicReplicaSize
from controlplane.topics.models import Partition

from . import balance, plans
from .balance import Proposal, Replicas
from .plans import PlanEntry
from .reassignment import Assignment

__all__ = ("GOALS", "describe", "generated", "placement", "plan_entries", "propose")

GOALS = ("replicas", "disk", "leaders", "racks", "decommission", "replication-factor")
"""replica count per broker (also: spread onto new brokers), bytes per broker, preferred leaders per broker,
rack-awareness violations, moving everything off brokers, changing a topic's replication factor."""


def placement() -> tuple[list[Replicas], dict[int, str | None]]:
    """Every partition with its estimated size, and the running brokers with their racks."""
    per_replica: dict[str, int] = {}
    for s in TopicReplicaSize.objects.filter(partitions__gt=0):
        per_replica[s.topic] = max(per_replica.get(s.topic, 0), s.size_bytes // s.partitions)
    partitions = [Replicas(p.topic.name, p.partition, Assignment.of(p).original, per_replica.get(p.topic.name, 0))
                  for p in Partition.objects.select_related("topic").order_by("topic__name", "partition")]
    racks = {b: r or None for b, r in Broker.objects.filter(state=BrokerState.RUNNING).values_list("broker_id", "rack")}
    return partitions, racks


def propose(goal: str, brokers: Sequence[int] = (), topic: str | None = None,
            replication_factor: int | None = None) -> Proposal:
    """The proposal for `goal`; `brokers` are those to decommission (goal "decommission"), `topic` and
    `replication_factor` the change of "replication-factor". INVALID_REQUEST for a bad combination."""
    partitions, racks = placement()
    try:
        if goal == "replicas":
            after = balance.replica_distribution(partitions, racks)
        elif goal == "disk":
            after = balance.disk_distribution(partitions, racks)
        elif goal == "leaders":
            after = balance.leader_distribution(partitions, racks)
        elif goal == "racks":
            after = balance.rack_awareness(partitions, racks)
        elif goal == "decommission":
            if not brokers or not set(brokers) <= set(racks):
                raise KafkaApiError("INVALID_REQUEST", f"decommission needs running brokers to move off, "
                                                        f"not {list(brokers)} (running: {sorted(racks)})")
            after = balance.decommission(partitions, racks, brokers)
        elif goal == "replication-factor":
            if topic is None or replication_factor is None or not any(p.topic == topic for p in partitions):
                raise KafkaApiError("INVALID_REQUEST", "replication-factor needs an existing topic and the new "
                                                        "replication factor")
            after = balance.replication_factor(partitions, racks, topic, replication_factor)
        else:
            raise KafkaApiError("INVALID_REQUEST", f"Unknown goal {goal!r}; goals: {', '.join(GOALS)}")
    except ValueError as e:
        raise KafkaApiError("INVALID_REPLICATION_FACTOR", str(e)) from None
    return balance.proposal(partitions, after, racks)


def generated(topics: Sequence[str], brokers: Sequence[int]) -> Proposal:
    """Kafka's `--generate` plan for `topics` onto `brokers` (`plans.generate`, rack-aware) as a proposal: its
    moves, bytes and per-broker before/after over the whole cluster."""
    partitions, racks = placement()
    _, proposed = plans.generate(topics, brokers)
    targets = {(e.topic, e.partition): e.replicas for e in proposed}
    after = [replace(p, replicas=targets.get((p.topic, p.partition), p.replicas)) for p in partitions]
    return balance.proposal(partitions, after, racks)


def plan_entries(proposal: Proposal) -> list[PlanEntry]:
    return [PlanEntry(new.topic, new.partition, new.replicas) for _, new in proposal.moves]


def describe(goal: str, brokers: Sequence[int] = (), topic: str | None = None,
             replication_factor: int | None = None) -> str:
    """A proposal's goal in words, e.g. "decommission broker 2" (an execution's description)."""
    if goal == "decommission":
        return f"decommission broker{'s' if len(brokers) > 1 else ''} {', '.join(map(str, brokers))}"
    if goal == "replication-factor":
        return f"replication factor of {topic} to {replication_factor}"
    return f"balance {goal}"
