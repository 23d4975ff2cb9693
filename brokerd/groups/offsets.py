"""Committed offsets of one coordinator's groups (Kafka's `GroupMetadataManager` offset side): OffsetCommit,
OffsetFetch, OffsetDelete, DeleteGroups, and offset expiry (`offsets.retention.minutes`), with the tombstones
that make deletions durable.

A commit is validated against the group's membership (a member of the current generation, or a "simple"
commit while the group is Empty), stored through `GroupLog.store_offsets` and applied in memory only once
stored; while a partition's commit is in flight its offset never expires. Deletions are applied in memory
at once and their tombstones written afterwards (a failed tombstone write is logged, as in Kafka). An Empty
group left without offsets dies. Errors of one item (a partition, a group) are Kafka error names in the
result; group-level refusals raise `GroupError`s. Event loop only.
"""

from brokerd.clock import Clock
from brokerd.config import GroupSettings
from brokerd.groups import errors
from brokerd.groups.api import GroupState, OffsetCommitRequest
from brokerd.groups.membership import Membership
from brokerd.groups.persistence import GroupLog, Record, group_tombstone, offset_tombstone
from brokerd.groups.state import CONSUMER_PROTOCOL_TYPE, Group, GroupTable
from brokerd.types import TopicPartition
from kafkaspec.consumer_offsets import NO_EXPIRE_TIMESTAMP, OffsetCommitValue


class CommittedOffsets:
    """The committed offsets of every group of one coordinator (`groups`, shared with the membership)."""

    def __init__(self, clock: Clock, config: GroupSettings, groups: GroupTable, log: GroupLog,
                 membership: Membership) -> None:
        self._clock = clock
        self._config = config
        self._groups = groups
        self._log = log
        self._membership = membership

    async def commit(self, request: OffsetCommitRequest) -> dict[TopicPartition, str | None]:
        """Validate and store offsets; one error name (or None) per partition. Group-level failures raise."""
        group = self._groups.get(request.group_id)
        if group is None:
            if request.generation_id >= 0:
                raise errors.IllegalGenerationError()  # a member of a group that no longer exists
            group = Group(request.group_id, GroupState.EMPTY, self._clock.now_ms())
            self._groups[request.group_id] = group
        self._validate_commit(group, request)
        if group.state is GroupState.COMPLETING_REBALANCE:
            raise errors.RebalanceInProgressError()
        if group.is_in(GroupState.STABLE, GroupState.PREPARING_REBALANCE):
            self._membership.schedule_heartbeat(group, group.members[request.member_id])
        now = self._clock.now_ms()
        expire = NO_EXPIRE_TIMESTAMP if request.retention_time_ms == -1 else now + request.retention_time_ms
        results: dict[TopicPartition, str | None] = {}
        accepted: dict[TopicPartition, OffsetCommitValue] = {}
        for tp, commit in request.offsets.items():
            if len(commit.metadata.encode()) > self._config.offset_metadata_max_bytes:
                results[tp] = "OFFSET_METADATA_TOO_LARGE"
            else:
                accepted[tp] = OffsetCommitValue(commit.offset, commit.metadata, now, commit.leader_epoch, expire)
                results[tp] = None
        if not accepted:
            return results
        for tp in accepted:
            group.pending_offset_commits[tp] = group.pending_offset_commits.get(tp, 0) + 1
        try:
            await self._log.store_offsets(group.group_id, accepted)
            error = None
        except errors.AppendFailedError as exc:
            error = exc.kafka_error
        finally:
            for tp in accepted:
                group.pending_offset_commits[tp] -= 1
                if not group.pending_offset_commits[tp]:
                    del group.pending_offset_commits[tp]
        if error is not None:
            return {tp: error if tp in accepted else result for tp, result in results.items()}
        if self._groups.is_current(group):
            group.offsets.update(accepted)
        return results

    @staticmethod
    def _validate_commit(group: Group, request: OffsetCommitRequest) -> None:
        """Kafka's validateOffsetCommit: members must match the generation; anonymous commits only while Empty."""
        if group.state is GroupState.DEAD:
            raise errors.CoordinatorNotAvailableError()
        if request.generation_id >= 0 or request.member_id or request.group_instance_id is not None:
            group.validate_current_member(request.member_id, request.group_instance_id)
            if request.generation_id != group.generation_id:
                raise errors.IllegalGenerationError()
        elif group.state is not GroupState.EMPTY:
            raise errors.UnknownMemberIdError()

    def fetch(self, group_id: str,
              partitions: list[TopicPartition] | None) -> dict[TopicPartition, OffsetCommitValue | None]:
        """Committed offsets of `partitions` (None: every committed partition); None where nothing is
        committed (the handler answers offset -1, metadata "")."""
        group = self._groups.get(group_id)
        offsets = {} if group is None or group.state is GroupState.DEAD else group.offsets
        if partitions is None:
            return dict(offsets)
        return {tp: offsets.get(tp) for tp in partitions}

    async def delete(self, group_id: str, partitions: list[TopicPartition]) -> dict[TopicPartition, str | None]:
        """OffsetDelete: allowed for an Empty group, or for topics a consumer group does not subscribe to."""
        group = self._groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            raise errors.GroupIdNotFoundError()
        results: dict[TopicPartition, str | None] = {}
        if group.state is GroupState.EMPTY:
            eligible = list(partitions)
        elif group.protocol_type == CONSUMER_PROTOCOL_TYPE:
            eligible = [tp for tp in partitions if not group.is_subscribed_to(tp[0])]
            results.update({tp: "GROUP_SUBSCRIBED_TO_TOPIC" for tp in partitions if group.is_subscribed_to(tp[0])})
        else:
            raise errors.NonEmptyGroupError()
        records = self._remove(group, eligible) + self._maybe_remove_dead_group(group)
        results.update({tp: None for tp in eligible})
        await self._log.store_tombstones(records)
        return results

    async def delete_groups(self, group_ids: list[str]) -> dict[str, str | None]:
        """Delete Empty groups with their offsets (tombstones); NON_EMPTY_GROUP for groups with members."""
        results: dict[str, str | None] = {}
        deleted = []
        for group_id in group_ids:
            group = self._groups.get(group_id)
            if group is None or group.state is GroupState.DEAD:
                results[group_id] = "GROUP_ID_NOT_FOUND"
            elif group.state is not GroupState.EMPTY:
                results[group_id] = "NON_EMPTY_GROUP"
            else:
                group.transition_to(GroupState.DEAD, self._clock.now_ms())
                deleted.append(group)
                results[group_id] = None
        records: list[Record] = []
        for group in deleted:
            records += self._remove(group, list(group.offsets))
            records += self._maybe_remove_dead_group(group)
        await self._log.store_tombstones(records)
        return results

    async def remove_expired(self) -> int:
        """Apply `offsets.retention.minutes` (see `Group.expired_offsets`); Empty groups left without offsets
        are deleted. Returns the number of offsets removed."""
        now = self._clock.now_ms()
        records: list[Record] = []
        removed = 0
        for group in list(self._groups.values()):
            expired = group.expired_offsets(now, self._config.offsets_retention_ms)
            removed += len(expired)
            records += self._remove(group, expired)
            records += self._maybe_remove_dead_group(group)
        await self._log.store_tombstones(records)
        return removed

    @staticmethod
    def _remove(group: Group, partitions: list[TopicPartition]) -> list[Record]:
        return [offset_tombstone(group.group_id, tp) for tp in partitions if group.offsets.pop(tp, None) is not None]

    def _maybe_remove_dead_group(self, group: Group) -> list[Record]:
        """Kafka's cleanupGroupMetadata tail: an Empty group without offsets dies; its metadata gets a
        tombstone unless it never had a generation (offsets-only groups store no metadata)."""
        if group.state is GroupState.EMPTY and not group.offsets:
            group.transition_to(GroupState.DEAD, self._clock.now_ms())
        if group.state is not GroupState.DEAD or not self._groups.is_current(group):
            return []
        del self._groups[group.group_id]
        return [group_tombstone(group.group_id)] if group.generation_id > 0 else []
