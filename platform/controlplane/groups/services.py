"""Consumer-group administration as `kafka-consumer-groups` does it: list, describe (lag per partition), plan or
execute an offset reset, delete. Used by the REST API, the console and `manage.py consumer_groups`.

The cluster is reached through a `KafkaGroupAdmin` (`kafka_client`). Partition lists come from the metadata
store, or from the cluster's Metadata for topics the store does not know (a standalone broker). Errors are
`KafkaApiError`s; a reset is executed only while the group is inactive (Empty or Dead), as Kafka's tool insists.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass

from controlplane.core.errors import KafkaApiError
from controlplane.topics.models import Partition

from . import kafka_client
from .kafka_client import EARLIEST, LATEST, GroupDescription, KafkaGroupAdmin, Member, TopicPartition
from .reset import PartitionOffsets, ResetSpec, Scope, new_offset

__all__ = ("INACTIVE_STATES", "GroupDetail", "GroupService", "GroupSummary", "PartitionLag", "ResetPlan",
           "ResetRow")

INACTIVE_STATES = frozenset({"Empty", "Dead"})


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


def _not_found(group_id: str) -> KafkaApiError:
    return KafkaApiError("GROUP_ID_NOT_FOUND", f"Consumer group '{group_id}' does not exist.", 404)


@dataclass(frozen=True)
class GroupSummary:
    group_id: str
    state: str
    protocol_type: str
    members: int


@dataclass(frozen=True)
class PartitionLag:
    """One row of `--describe`: a partition the group has an offset for or a member assigned. Unknown values
    (no committed offset, no owner, log end unavailable) are None."""

    topic: str
    partition: int
    current_offset: int | None
    log_end_offset: int | None
    consumer_id: str | None
    host: str | None
    client_id: str | None

    @property
    def lag(self) -> int | None:
        """Log end minus committed offset, never negative; None without a committed offset."""
        if self.current_offset is None or self.log_end_offset is None:
            return None
        return max(0, self.log_end_offset - self.current_offset)


@dataclass(frozen=True)
class GroupDetail:
    group_id: str
    state: str
    protocol_type: str
    assignor: str
    coordinator_id: int | None
    members: tuple[Member, ...]
    partitions: tuple[PartitionLag, ...]

    @property
    def total_lag(self) -> int:
        return sum(p.lag for p in self.partitions if p.lag is not None)

    @property
    def is_active(self) -> bool:
        return self.state not in INACTIVE_STATES


@dataclass(frozen=True)
class ResetRow:
    topic: str
    partition: int
    current_offset: int | None
    new_offset: int
    log_start_offset: int
    log_end_offset: int

    @property
    def lag_after(self) -> int:
        return self.log_end_offset - self.new_offset


@dataclass(frozen=True)
class ResetPlan:
    """New offsets per partition; `executed` says whether they were committed. `warnings` are Kafka's
    (clamped offsets, timestamps past the last record)."""

    group_id: str
    state: str
    spec: ResetSpec
    executed: bool
    rows: tuple[ResetRow, ...]
    warnings: tuple[str, ...]

    def audit_states(self) -> tuple[dict, dict]:
        """(before, after) for the audit log: committed offsets by "topic-partition" (null: none)."""
        return ({"offsets": {f"{r.topic}-{r.partition}": r.current_offset for r in self.rows}},
                {"offsets": {f"{r.topic}-{r.partition}": r.new_offset for r in self.rows}})


class GroupService:
    def __init__(self, admin: KafkaGroupAdmin, now_ms: Callable[[], int] = _wall_clock_ms):
        self.admin = admin
        self.now_ms = now_ms

    @classmethod
    def connected(cls) -> "GroupService":
        """The service for the cluster this control plane manages (see `kafka_client.bootstrap_servers`)."""
        return cls(kafka_client.connect())

    def list_groups(self) -> list[GroupSummary]:
        listings = {g.group_id: g for g in self.admin.list_groups()}
        descriptions = self.admin.describe_groups(sorted(listings))
        return [GroupSummary(group_id, d.state, d.protocol_type or listings[group_id].protocol_type, len(d.members))
                for group_id, d in sorted(descriptions.items())]

    def describe_group(self, group_id: str) -> GroupDetail:
        description = self._describe(group_id)
        committed = self.admin.committed_offsets(group_id)
        if description.state == "Dead" and not committed:
            raise _not_found(group_id)
        owners = {tp: member for member in description.members for tp in member.assignment}
        partitions = sorted(committed.keys() | owners.keys())
        log_ends, _ = self.admin.list_offsets(partitions, LATEST)
        rows = []
        for tp in partitions:
            owner = owners.get(tp)
            rows.append(PartitionLag(tp.topic, tp.partition, committed.get(tp), log_ends.get(tp),
                                     owner.member_id if owner else None, owner.host if owner else None,
                                     owner.client_id if owner else None))
        return GroupDetail(group_id, description.state, description.protocol_type, description.assignor,
                           description.coordinator_id, description.members, tuple(rows))

    def reset_offsets(self, group_id: str, scope: Scope, spec: ResetSpec, *, execute: bool) -> ResetPlan:
        """Plan the reset (a dry run), and with `execute` commit it — only while the group is inactive."""
        description = self._describe(group_id)
        if execute and description.state not in INACTIVE_STATES:
            raise KafkaApiError("NON_EMPTY_GROUP", f"Assignments can only be reset if the group '{group_id}' is "
                                                   f"inactive, but the current state is {description.state}.", 409)
        committed = self.admin.committed_offsets(group_id)
        if scope.all_topics:
            if description.state == "Dead" and not committed:
                raise _not_found(group_id)
            partitions = sorted(committed)
        else:
            partitions = self._partitions_in(scope)
        starts = self._offsets(partitions, EARLIEST)
        ends = self._offsets(partitions, LATEST)
        timestamp = spec.timestamp_ms(self.now_ms())
        by_timestamp = self._offsets(partitions, timestamp) if timestamp is not None else {}
        rows, warnings = [], []
        for tp in partitions:
            offsets = PartitionOffsets(committed.get(tp), starts[tp], ends[tp], by_timestamp.get(tp))
            offset, warning = new_offset(spec, offsets, str(tp))
            rows.append(ResetRow(tp.topic, tp.partition, offsets.current, offset, offsets.log_start, offsets.log_end))
            if warning:
                warnings.append(warning)
        if execute and rows:
            self.admin.alter_offsets(group_id, {TopicPartition(r.topic, r.partition): r.new_offset for r in rows})
        return ResetPlan(group_id, description.state, spec, execute, tuple(rows), tuple(warnings))

    def delete_group(self, group_id: str) -> dict[str, int]:
        """Delete an inactive group; returns the committed offsets it had, by "topic-partition" (for the audit)."""
        committed = self.admin.committed_offsets(group_id)
        self.admin.delete_group(group_id)
        return {str(tp): offset for tp, offset in sorted(committed.items())}

    def _describe(self, group_id: str) -> GroupDescription:
        if not group_id:
            raise KafkaApiError("INVALID_GROUP_ID", "The group id must not be empty.", 400)
        return self.admin.describe_groups([group_id])[group_id]

    def _partitions_in(self, scope: Scope) -> list[TopicPartition]:
        names = [name for name, _ in scope.topics]
        available: dict[str, list[int]] = {}
        for name, partition in Partition.objects.filter(topic__name__in=names).values_list("topic__name",
                                                                                             "partition"):
            available.setdefault(name, []).append(partition)
        if unknown_to_store := [name for name in names if name not in available]:
            available.update(self.admin.topic_partitions(unknown_to_store))
        partitions = []
        for name, wanted in scope.topics:
            if name not in available:
                raise KafkaApiError("UNKNOWN_TOPIC_OR_PARTITION", f"Topic '{name}' does not exist.", 400)
            if missing := sorted(set(wanted or ()) - set(available[name])):
                raise KafkaApiError("UNKNOWN_TOPIC_OR_PARTITION",
                                    f"Topic '{name}' has no partition {', '.join(map(str, missing))} "
                                    f"(it has {len(available[name])}).", 400)
            partitions += [TopicPartition(name, p) for p in (wanted or sorted(available[name]))]
        return sorted(set(partitions))

    def _offsets(self, partitions: list[TopicPartition], query: str | int) -> dict[TopicPartition, int]:
        offsets, errors = self.admin.list_offsets(partitions, query)
        if errors:
            tp, error = min(errors.items())
            if error == "UNKNOWN_TOPIC_OR_PARTITION":
                raise KafkaApiError(error, f"Partition {tp} does not exist.", 400)
            raise KafkaApiError(error, f"Could not list the offsets of {tp}: {error}.", 503)
        return offsets
