"""`Partition`: one replica of a partition on this broker, in the role the metadata gives it (Kafka's
`kafka.cluster.Partition`), over a `brokerd.storage` log.

Glossary (as in storage): LEO = log end offset; HW = high watermark, the offset below which every
record is on every in-sync replica; ISR = in-sync replicas (the leader included); leader epoch = the
leadership generation; partition epoch = the control plane's version of (leader, ISR, replicas).

As **leader** it stamps its leader epoch on appended batches, keeps the idempotent-producer table,
tracks each follower's LEO (from the offsets followers fetch at) and last caught-up time, and moves
the HW to the minimum LEO over the ISR. While an ISR expansion is being proposed the new member already
counts (Kafka's "maximal ISR"), while a shrink is proposed the old ISR still does, so the HW is always
computed over a superset of the ISR the control plane has committed: a replica elected from that ISR
holds every record below any HW this leader ever acknowledged.

As **follower** it appends fetched batches verbatim (`append_as_follower`), learns the HW from the
leader (never above its own LEO), keeps the producer table from batch headers, and truncates when a
new leader's epoch boundary says so.

Invariant (asserted in `_set_high_watermark`, the only place the HW changes):
log_start_offset <= high_watermark <= log_end_offset; the HW never decreases except by truncation.
Every change is written through to `log.high_watermark`, which the log manager checkpoints
(`replication-offset-checkpoint`); a partition over a reopened log starts from it, so a restarted
replica exposes what it had acknowledged before (never more than its log holds), not nothing.

Concurrency: event loop only; storage calls are synchronous and short. Changes of HW and appends are
reported to a `PartitionListener` (the replica manager: it wakes the fetch and produce purgatories). A
`Partition` never sees the replica manager, fetchers or purgatories (import contract `replication`).
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from brokerd.counters import TopicCounters
from brokerd.errors import BrokerError
from brokerd.metadata.image import PartitionAssignment
from brokerd.records.batch import NO_PRODUCER_ID, iter_batches, read_produced_batch
from brokerd.replication.errors import (
    FencedLeaderEpochError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    UnknownLeaderEpochError,
)
from brokerd.replication.producer_state import BatchOffsets, ProducerStateTable, last_sequence
from brokerd.storage import FileRegion, Log
from brokerd.storage.errors import OffsetOutOfRangeError
from brokerd.types import BrokerId, LeaderEpoch, Offset, PartitionEpoch, TopicPartition

PRODUCER_STATE_SCAN_BYTES = 64 * 1024 * 1024
"""How much of the log tail is scanned (headers only) to rebuild producer state."""


class PartitionListener(Protocol):
    def on_append(self, partition: "Partition") -> None:
        """New data in the log (follower fetches may return it)."""

    def on_high_watermark(self, partition: "Partition") -> None:
        """The HW moved (consumers may read more; acks=all produce may complete)."""

    def on_leader_state(self, partition: "Partition") -> None:
        """The partition became leader here, or its ISR or replicas changed while it leads: when a follower can
        fall out of sync may have changed (`isr_check_due_ms`)."""


@dataclass(slots=True)
class FollowerState:
    """The leader's view of one follower (Kafka's `Replica` state)."""

    log_end_offset: Offset = Offset(-1)
    """-1 until the follower's first fetch to this leader."""
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    last_fetch_leader_log_end_offset: Offset = Offset(-1)


@dataclass(frozen=True, slots=True)
class AppendResult:
    """Where a leader append landed (or, for a retried idempotent batch, where it had landed before)."""

    base_offset: Offset
    last_offset: Offset
    log_append_time_ms: int
    """-1 unless the topic uses LogAppendTime."""
    log_start_offset: Offset
    leader_epoch: LeaderEpoch


class Partition:
    """One replica on this broker. Not thread-safe; called only from the event loop."""

    def __init__(self, topic: str, index: int, node_id: BrokerId, log: Log, listener: PartitionListener,
                 counters: TopicCounters | None = None) -> None:
        self.topic = topic
        self.index = index
        self.key = TopicPartition(topic, index)
        self.node_id = node_id
        self.log = log
        self._listener = listener
        self.is_leader = False
        self.leader_id = BrokerId(-1)
        self.leader_epoch = LeaderEpoch(-1)
        self.partition_epoch = PartitionEpoch(-1)
        self.replicas: tuple[BrokerId, ...] = ()
        self.isr: tuple[BrokerId, ...] = ()
        """The ISR as last committed by the control plane."""
        self.pending_isr: tuple[BrokerId, ...] | None = None
        """An ISR this leader proposed and the control plane has not answered yet."""
        self.followers: dict[BrokerId, FollowerState] = {}
        self.counters = counters
        """The topic's counters on this broker (shared by its partitions): bumped once per batch; None when
        metrics are disabled."""
        self._high_watermark = min(max(log.high_watermark, log.log_start_offset), log.log_end_offset)
        self._producers = ProducerStateTable()
        self.rebuild_producer_state()

    def __repr__(self) -> str:
        role = "leader" if self.is_leader else f"follower of {self.leader_id}"
        return f"Partition({self.topic}-{self.index}, {role}, epoch {self.leader_epoch}, HW {self.high_watermark})"

    @property
    def log_start_offset(self) -> Offset:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> Offset:
        return self.log.log_end_offset

    @property
    def high_watermark(self) -> Offset:
        return self._high_watermark

    @property
    def maximal_isr(self) -> tuple[BrokerId, ...]:
        """The ISR the HW is computed over: the committed one, plus members a pending expansion adds."""
        if self.pending_isr is None:
            return self.isr
        return self.isr + tuple(r for r in self.pending_isr if r not in self.isr)

    # --- roles -----------------------------------------------------------------------------------------

    def make_leader(self, state: PartitionAssignment, now_ms: int) -> bool:
        """Lead at `state.leader_epoch`. True if this is a new leadership (role or epoch changed)."""
        new = not self.is_leader or state.leader_epoch != self.leader_epoch
        self.is_leader = True
        self.leader_id = self.node_id
        self.replicas = state.replicas
        if new:
            self.leader_epoch = state.leader_epoch
            self.partition_epoch = state.partition_epoch
            self.isr = state.isr
            self.pending_isr = None
            self.followers = {r: FollowerState(last_caught_up_ms=now_ms) for r in state.replicas
                              if r != self.node_id}
            # Kafka `makeLeader`: the new epoch starts at the LEO, so followers asking OffsetForLeaderEpoch
            # for an older epoch are told where it ended here.
            self.log.leader_epoch_cache.assign(self.leader_epoch, self.log_end_offset)
            self._clamp_high_watermark()
        else:
            self.apply_isr(state)
            for replica in state.replicas:
                if replica != self.node_id and replica not in self.followers:
                    self.followers[replica] = FollowerState(last_caught_up_ms=now_ms)
        self.maybe_increment_high_watermark()
        self._listener.on_leader_state(self)
        return new

    def make_follower(self, state: PartitionAssignment) -> bool:
        """Follow `state.leader_id` at `state.leader_epoch`. True if leader or epoch changed."""
        new = self.is_leader or state.leader_epoch != self.leader_epoch or state.leader_id != self.leader_id
        self.is_leader = False
        self.leader_id = state.leader_id
        self.leader_epoch = state.leader_epoch
        self.partition_epoch = state.partition_epoch
        self.replicas = state.replicas
        self.isr = state.isr
        self.pending_isr = None
        self.followers = {}
        return new

    def stop(self) -> None:
        """This broker no longer hosts the replica (reassigned away, or its topic deleted): it neither leads nor
        follows, so acks=all appends waiting for the HW end with NOT_LEADER_OR_FOLLOWER when woken instead of
        waiting out their timeout."""
        self.is_leader = False
        self.leader_id = BrokerId(-1)
        self.pending_isr = None
        self.followers = {}

    def apply_isr(self, state: PartitionAssignment) -> None:
        """Adopt the ISR the control plane committed, if it is newer than ours (same leader epoch)."""
        if state.leader_epoch != self.leader_epoch or state.partition_epoch < self.partition_epoch:
            return
        if state.partition_epoch > self.partition_epoch or state.isr != self.isr:
            self.partition_epoch = state.partition_epoch
            self.isr = state.isr
            self.pending_isr = None
            self.replicas = state.replicas or self.replicas
            self.maybe_increment_high_watermark()
            if self.is_leader:
                self._listener.on_leader_state(self)

    def check_leader_epoch(self, current_leader_epoch: LeaderEpoch) -> None:
        """Kafka's epoch validation for requests carrying `current_leader_epoch` (-1: none)."""
        if current_leader_epoch < 0 or current_leader_epoch == self.leader_epoch:
            return
        if current_leader_epoch < self.leader_epoch:
            raise FencedLeaderEpochError(f"{self.topic}-{self.index}: epoch {current_leader_epoch} is fenced "
                                         f"(current {self.leader_epoch})")
        raise UnknownLeaderEpochError(f"{self.topic}-{self.index}: epoch {current_leader_epoch} is newer than "
                                      f"{self.leader_epoch}")

    def _require_leader(self) -> None:
        if not self.is_leader:
            raise NotLeaderOrFollowerError(f"broker {self.node_id} does not lead {self.topic}-{self.index}")

    # --- leader ----------------------------------------------------------------------------------------

    def append_as_leader(self, records: bytes | bytearray, required_acks: int = 1, min_insync_replicas: int = 1
                         ) -> AppendResult:
        """Append one producer batch as leader (Kafka's `appendRecordsToLeader`). Its header is read and
        checked once, here (`read_produced_batch`); CRC, magic, codec and max.message.bytes in storage. A
        duplicate of a retained idempotent batch returns its original offsets without touching the log.
        acks=all (`required_acks` -1) with an ISR below `min_insync_replicas` is refused before appending.
        Counted in `counters` (per batch: bytes, records, and whether it was rejected)."""
        self._require_leader()
        counters = self.counters
        if counters is None:
            return self._append_produced(records, required_acks, min_insync_replicas)
        counters.produce_requests += 1
        try:
            result = self._append_produced(records, required_acks, min_insync_replicas)
        except BrokerError:
            counters.failed_produce_requests += 1
            counters.bytes_rejected += len(records)
            raise
        counters.bytes_in += len(records)
        counters.messages_in += result.last_offset - result.base_offset + 1
        return result

    def _append_produced(self, records: bytes | bytearray, required_acks: int, min_insync_replicas: int
                         ) -> AppendResult:
        batch = read_produced_batch(records)
        if required_acks == -1 and len(self.isr) < min_insync_replicas:
            raise NotEnoughReplicasError(f"{self.topic}-{self.index}: ISR {list(self.isr)} is smaller than "
                                         f"min.insync.replicas={min_insync_replicas}")
        if batch.producer_id == NO_PRODUCER_ID:
            return self._append(records)
        duplicate = self._producers.check(batch)
        if duplicate is not None:
            return AppendResult(duplicate.first_offset, duplicate.last_offset, duplicate.log_append_time_ms,
                                self.log_start_offset, self.leader_epoch)
        result = self._append(records)
        self._producers.record(batch, BatchOffsets(batch.base_sequence, last_sequence(batch), result.base_offset,
                                                   result.last_offset, result.log_append_time_ms))
        return result

    def _append(self, records: bytes | bytearray) -> AppendResult:
        info = self.log.append_as_leader(records if isinstance(records, bytearray) else bytearray(records),
                                         self.leader_epoch)
        self._listener.on_append(self)
        self.maybe_increment_high_watermark()
        return AppendResult(info.first_offset, info.last_offset, info.log_append_time_ms, info.log_start_offset,
                            self.leader_epoch)

    def update_follower_fetch(self, replica_id: BrokerId, fetch_offset: Offset, now_ms: int) -> None:
        """A follower fetched at `fetch_offset`: its LEO is that offset (Kafka `updateFollowerFetchState`)."""
        follower = self.followers.get(replica_id)
        if follower is None or not self.is_leader:
            return
        leader_end = self.log_end_offset
        if fetch_offset >= leader_end:
            follower.last_caught_up_ms = max(follower.last_caught_up_ms, now_ms)
        elif fetch_offset >= follower.last_fetch_leader_log_end_offset >= 0:
            follower.last_caught_up_ms = max(follower.last_caught_up_ms, follower.last_fetch_ms)
        follower.log_end_offset = fetch_offset
        follower.last_fetch_leader_log_end_offset = leader_end
        follower.last_fetch_ms = now_ms
        self.maybe_increment_high_watermark()

    def maybe_increment_high_watermark(self) -> bool:
        """Move the HW to the minimum LEO over the (maximal) ISR; True if it moved."""
        if not self.is_leader:
            return False
        candidate = self.log_end_offset
        for replica in self.maximal_isr:
            if replica == self.node_id:
                continue
            follower = self.followers.get(replica)
            if follower is None or follower.log_end_offset < 0:
                return False  # an ISR member not heard from in this epoch holds the HW where it is
            candidate = min(candidate, follower.log_end_offset)
        if candidate > self._high_watermark:
            self._set_high_watermark(candidate)
            return True
        return False

    def isr_expansion_candidate(self, replica_id: BrokerId, fenced: Iterable[BrokerId] = ()) -> bool:
        """Kafka `isFollowerInSync` for a non-ISR replica: caught up to the HW and into this epoch."""
        follower = self.followers.get(replica_id)
        if (not self.is_leader or follower is None or replica_id in self.maximal_isr
                or replica_id in fenced or self.pending_isr is not None):
            return False
        epoch_start = self._epoch_start_offset()
        return follower.log_end_offset >= self._high_watermark and follower.log_end_offset >= epoch_start

    def _epoch_start_offset(self) -> int:
        for epoch, start in reversed(self.log.leader_epoch_cache.entries()):
            if epoch == self.leader_epoch:
                return start
        return self.log_end_offset

    def out_of_sync_replicas(self, now_ms: int, max_lag_ms: int, fenced: Iterable[BrokerId] = (),
                             caught_up_elsewhere: Callable[[BrokerId, "Partition"], int] | None = None
                             ) -> list[BrokerId]:
        """ISR followers that have not caught up for `max_lag_ms`, or whose broker is fenced.
        `caught_up_elsewhere(replica, self)` is when a replica was last caught up by another record (its fetch
        session, which does not record a quiet partition fetch by fetch), -1 if unknown; asked only before
        declaring a replica lagging."""
        if not self.is_leader:
            return []
        fenced = set(fenced)
        lagging = []
        for replica in self.isr:
            if replica == self.node_id:
                continue
            follower = self.followers.get(replica)
            if replica in fenced or follower is None:
                lagging.append(replica)
                continue
            if now_ms - follower.last_caught_up_ms > max_lag_ms and caught_up_elsewhere is not None:
                follower.last_caught_up_ms = max(follower.last_caught_up_ms, caught_up_elsewhere(replica, self))
            if now_ms - follower.last_caught_up_ms > max_lag_ms:
                lagging.append(replica)
        return lagging

    def isr_check_due_ms(self, max_lag_ms: int) -> int | None:
        """The earliest monotonic ms at which `out_of_sync_replicas` can find an ISR follower lagging by time: one
        ms past `max_lag_ms` after the earliest last caught-up time among them (0 for a member without follower
        state: at once); None when the ISR has no follower or this replica does not lead. Only fencing (the
        caller's to watch) or a change reported by `on_leader_state` makes a follower out of sync earlier: a
        caught-up time only grows."""
        if not self.is_leader:
            return None
        due = None
        for replica in self.isr:
            if replica == self.node_id:
                continue
            follower = self.followers.get(replica)
            if follower is None:
                return 0
            at = follower.last_caught_up_ms + max_lag_ms + 1
            if due is None or at < due:
                due = at
        return due

    # --- follower --------------------------------------------------------------------------------------

    def append_as_follower(self, records: memoryview, leader_high_watermark: Offset, leader_log_start_offset: Offset
                           ) -> None:
        """Append fetched batches verbatim; learn the HW (never above our LEO) and the log start offset."""
        if self.is_leader:
            raise NotLeaderOrFollowerError(f"{self.topic}-{self.index} is led here; not appending as follower")
        if len(records):
            self.log.append_as_follower(records)
            if self.counters is not None:
                self.counters.replication_bytes_in += len(records)
            for _, header in iter_batches(records):
                self._producers.record_replicated(header)
            self._listener.on_append(self)
        self.update_from_leader(leader_high_watermark, leader_log_start_offset)

    def update_from_leader(self, leader_high_watermark: Offset, leader_log_start_offset: Offset) -> None:
        if self.log_start_offset < leader_log_start_offset <= self.log_end_offset:
            self.log.delete_records_before(leader_log_start_offset)
        target = min(leader_high_watermark, self.log_end_offset)
        if target > self._high_watermark:
            self._set_high_watermark(target)
        elif self._high_watermark < self.log_start_offset:
            self._set_high_watermark(self.log_start_offset)

    def truncate_to(self, offset: Offset) -> None:
        """Drop everything at or after `offset` (a new leader's epoch boundary) and the producer state
        that described it."""
        if offset >= self.log_end_offset:
            return
        self.log.truncate_to(offset)
        self._clamp_high_watermark(allow_decrease=True)
        self.rebuild_producer_state()

    def truncate_fully_and_start_at(self, offset: Offset) -> None:
        """The leader no longer has our offsets (its log start is past our LEO): restart empty at `offset`."""
        self.log.truncate_fully_and_start_at(offset)
        self._set_high_watermark(offset, allow_decrease=True)
        self._producers.clear()

    # --- reads and shared state ------------------------------------------------------------------------

    def read(self, fetch_offset: Offset, max_bytes: int, up_to_log_end: bool = False) -> FileRegion | None:
        """Whole batches from the one containing `fetch_offset`, up to the HW (consumers) or the LEO
        (followers); at least one batch even if larger than `max_bytes` (KIP-74). None when nothing is
        there. Raises OffsetOutOfRangeError outside [log_start_offset, LEO]."""
        bound = self.log_end_offset if up_to_log_end else self._high_watermark
        if fetch_offset == bound:
            return None
        if fetch_offset > self.log_end_offset or fetch_offset < self.log_start_offset:
            raise OffsetOutOfRangeError(f"offset {fetch_offset} is outside [{self.log_start_offset}, "
                                        f"{self.log_end_offset}] of {self.topic}-{self.index}")
        if fetch_offset > bound:
            return None
        region = self.log.read(fetch_offset, max_bytes, bound)
        return region if region.length else None

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        found = self.log.offset_for_timestamp(timestamp_ms)
        if found is not None and found[0] >= self._high_watermark:
            return None
        return found

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the record with the largest timestamp, below the high watermark."""
        found = self.log.max_timestamp_offset()
        return found if found is not None and found[0] < self._high_watermark else None

    def legacy_offsets_before(self, timestamp_ms: int, max_count: int) -> list[int]:
        """ListOffsets v0's offsets (see `Log.legacy_offsets_before`), those above the high watermark
        replaced by it, as Kafka answers consumers."""
        offsets = self.log.legacy_offsets_before(timestamp_ms, max_count)
        if any(offset > self._high_watermark for offset in offsets):
            return [self._high_watermark, *(o for o in offsets if o <= self._high_watermark)]
        return offsets

    def delete_records_before(self, offset: Offset) -> Offset:
        self._require_leader()
        if offset > self._high_watermark:
            raise OffsetOutOfRangeError(f"offset {offset} is above the high watermark {self._high_watermark}")
        return self.log.delete_records_before(offset)

    def end_offset_for_epoch(self, epoch: LeaderEpoch) -> tuple[LeaderEpoch, Offset]:
        """OffsetForLeaderEpoch: (largest epoch <= `epoch`, where it ends here); (-1, -1) if unknown."""
        return self.log.leader_epoch_cache.end_offset_for(epoch)

    @property
    def latest_epoch(self) -> LeaderEpoch:
        return self.log.leader_epoch_cache.latest_epoch

    def rebuild_producer_state(self) -> None:
        self._producers.clear()
        for header in self.log.tail_batch_headers(PRODUCER_STATE_SCAN_BYTES):
            self._producers.record_replicated(header)

    def _clamp_high_watermark(self, allow_decrease: bool = False) -> None:
        """Back inside [log_start_offset, LEO] after retention moved the start or truncation the end."""
        target = min(max(self._high_watermark, self.log_start_offset), self.log_end_offset)
        if target != self._high_watermark:
            self._set_high_watermark(target, allow_decrease=True)

    def _set_high_watermark(self, offset: Offset, allow_decrease: bool = False) -> None:
        assert self.log_start_offset <= offset <= self.log_end_offset, (
            f"HW {offset} outside [{self.log_start_offset}, {self.log_end_offset}] of {self.topic}-{self.index}")
        assert allow_decrease or offset >= self._high_watermark, "the high watermark never decreases"
        self._high_watermark = offset
        self.log.high_watermark = offset
        self._listener.on_high_watermark(self)
