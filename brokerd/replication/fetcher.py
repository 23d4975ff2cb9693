"""`ReplicaFetcher`: one per source broker; keeps every partition this broker follows from that leader
up to date (Kafka's `ReplicaFetcherThread`, as an asyncio task over one connection).

Per partition the fetcher is first **truncating**: it asks the leader OffsetForLeaderEpoch (v3) for
its latest local epoch and truncates to where that epoch ends on the leader (KIP-101/279; repeated
while the leader does not know our epoch), so the replicas never diverge. Then it is **fetching**:
replica Fetch v11 (`replica_id` = this broker) at its log end offset, appending the returned batches
verbatim (`Partition.append_as_follower`; the response is parsed by hand so records stay a slice of
the received frame and are never decoded), then fetching again at once: that next fetch carries the new log
end offset, from which the leader moves the high watermark and answers its acks=all produces. The request is
laid out by hand too (`brokerd.protocol.fetch_request`), as it is on that latency path. The fetches go in a
fetch session with the leader (KIP-227, `FetchSessionHandler`): after the first, full one, a request names only
the partitions whose position changed and the answer only those with records or a new high watermark, log
start offset or error, so an idle follower of thousands of partitions sends and handles almost nothing. The round
itself follows what changed too: the fetcher keeps what it asks for (`_wanted`) and each round looks only at the
partitions touched since the last one — appended to, truncated, backing off or back, added or removed
(`_update`) — and at a few more, checked against their logs in turn (`_check_positions`). Requests
go over one `brokerd.client.BrokerClient` (framing, correlation ids, timeouts); the Fetch response is laid
out by `brokerd.protocol.fetch_response`.

Errors: a fenced/unknown leader epoch or NOT_LEADER_OR_FOLLOWER parks the partition for
`replica.fetch.backoff.ms` (the metadata will move it to the right fetcher); OFFSET_OUT_OF_RANGE
re-truncates, or restarts the log at the leader's log start offset if ours ended before it. Connection
failures reconnect with a backoff. Event loop only.
"""

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

from kio.schema.errors import ErrorCode
from kio.schema.list_offsets.v2.request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kio.schema.offset_for_leader_epoch.v3.request import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from kio.schema.types import BrokerId as KioBrokerId
from kio.schema.types import TopicName
from kio.static.primitive import i8, i32, i64

from brokerd.client import TRANSPORT_ERRORS, BrokerClient
from brokerd.errors import BrokerError
from brokerd.metadata.image import BrokerEndpoint
from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.fetch_request import REPLICA_FETCH_VERSION, FetchPosition, encode_replica_fetch_request
from brokerd.protocol.fetch_response import decode_fetch_response
from brokerd.records.batch import whole_batches_length
from brokerd.replication.config import ReplicationConfig
from brokerd.replication.fetch_session import FetchSessionHandler
from brokerd.replication.partition import Partition
from brokerd.replication.throttle import ReplicationQuota
from brokerd.types import BrokerId, LeaderEpoch, TopicPartition

log = logging.getLogger(__name__)

_RETRIABLE = {ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch, ErrorCode.unknown_leader_epoch,
              ErrorCode.unknown_topic_or_partition, ErrorCode.kafka_storage_error, ErrorCode.leader_not_available}
UNDEFINED = -1
PARTITIONS_PER_SLICE = 256
"""Partitions of a fetch response applied between two turns of the event loop: a follower of thousands of
partitions would otherwise hold every other request of the broker up while it goes through each response."""
EARLIEST_TIMESTAMP = -2


POSITION_CHECK_S = 2.0
"""Each cached fetch position is checked against its log about this often: a follower's log start offset may move
by retention, which no event here reports."""
POSITION_CHECKS_PER_ROUND = 512
"""At most this many positions are checked in one round, so a round stays short however many partitions the
fetcher has (checking all 10,000 at once held the loop ~25 ms); with many partitions and idle rounds a position
is then checked less often than every `POSITION_CHECK_S`."""


@dataclass(slots=True)
class FetchState:
    partition: Partition
    leader_epoch: LeaderEpoch
    truncating: bool = True
    delayed_until: float = 0.0
    position: FetchPosition | None = None
    """What the next fetch asks for this partition, None until read from the log again: cleared whenever this
    fetcher appends or truncates (the log end moves), or when `ReplicaFetcher._check_positions` finds it out of
    date. Building the position of each of thousands of idle partitions every round was most of an idle follower's
    time."""
    fetching: bool = False
    """The fetch in flight (the last `ReplicaFetcher._update`) names this state's position in `_wanted`; False for
    a state added since."""


class ReplicaFetcher:
    def __init__(self, source: BrokerEndpoint, node_id: BrokerId, config: ReplicationConfig,
                 on_fetched: Callable[[Partition], None] | None = None,
                 quota: ReplicationQuota | None = None) -> None:
        self.source = source
        self.node_id = node_id
        self.config = config
        self._quota = quota or ReplicationQuota()
        self._on_fetched = on_fetched
        self._states: dict[TopicPartition, FetchState] = {}
        self._changed = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._client = BrokerClient(source.host, source.port, f"strom-replica-fetcher-{node_id}")
        self._session = FetchSessionHandler()
        self._check_queue: list[FetchState] = []
        """The states whose positions `_check_positions` has still to check in this pass."""
        self._check_budget = 0.0
        """Positions `_check_positions` may check: grows with time, at `len(_states)` per `POSITION_CHECK_S`."""
        self._checked_at = 0.0
        """loop.time() of the last `_check_positions`."""
        self._touched: set[TopicPartition] = set()
        """Partitions whose state changed since `_update` last looked at them: added, removed, appended to,
        truncated, or backing off. A round looks only at these (and at the ones whose backoff ended), so its work
        follows what changed, not how many partitions the fetcher has."""
        self._wanted: dict[TopicPartition, FetchPosition] = {}
        """What the next fetch asks for: every partition neither truncating nor backing off (nor left out by the
        replication throttle), with its position. Changed only by `_update`, so during a fetch it is what was sent."""
        self._unsent: set[TopicPartition] = set()
        """Partitions whose entry in `_wanted` changed since the last request was built (the session's news)."""
        self._truncating: set[TopicPartition] = set()
        """Partitions to ask OffsetForLeaderEpoch about (truncating, not backing off)."""
        self._delayed: dict[TopicPartition, float] = {}
        """Partitions backing off, and the loop.time() their backoff ends."""
        self._throttled: set[TopicPartition] = set()
        """Partitions the replication throttle applies to this round (empty unless `ReplicationQuota.limited`)."""

    def __repr__(self) -> str:
        return f"ReplicaFetcher(broker {self.source.node_id} at {self.source.host}:{self.source.port})"

    # --- membership ------------------------------------------------------------------------------------

    def add(self, partition: Partition) -> None:
        self._states[partition.key] = FetchState(partition, partition.leader_epoch)
        self._touched.add(partition.key)
        self._changed.set()

    def remove(self, key: TopicPartition) -> None:
        state = self._states.pop(key, None)
        if state is not None:
            self._touched.add(state.partition.key)
            self._changed.set()

    def __contains__(self, key: TopicPartition) -> bool:
        return key in self._states

    def __len__(self) -> int:
        return len(self._states)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=repr(self))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        self._client.close()

    # --- loop ------------------------------------------------------------------------------------------

    async def _run(self) -> None:
        backoff = self.config.replica_fetch_backoff_ms / 1000
        while True:
            if not self._states:
                self._changed.clear()
                await self._changed.wait()
                continue
            try:
                self._update(asyncio.get_running_loop().time())
                if await self._truncate():
                    continue
                await self._fetch()
                backoff = self.config.replica_fetch_backoff_ms / 1000
            except TRANSPORT_ERRORS as exc:
                log.info("%s: %s; retrying in %.0f ms", self, exc or type(exc).__name__, backoff * 1000)
                self._client.close()  # a response that did not parse leaves the connection out of step too
                self._session.reset()
                await self._wait_changed(backoff)
                backoff = min(backoff * 2, 1.0)

    async def _wait_changed(self, timeout_s: float | None) -> None:
        self._changed.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await self._changed.wait()

    def _request_timeout_s(self, wait_ms: int = 0) -> float:
        return (wait_ms + self.config.socket_timeout_ms) / 1000

    def _delay(self, state: FetchState) -> None:
        state.delayed_until = asyncio.get_running_loop().time() + self.config.replica_fetch_backoff_ms / 1000
        self._touched.add(state.partition.key)

    def _update(self, now: float) -> None:
        """Bring `_wanted`, `_truncating` and `_delayed` up to date with the touched partitions, those whose
        backoff ended, those whose position `_check_positions` finds out of date and — every round while replication
        is throttled (a throttled position depends on the quota left) — all of them."""
        touched = self._touched
        self._check_positions(now)
        limited = self._quota.limited
        if limited:
            touched.update(self._states)
        elif self._throttled:  # the throttle was lifted: their positions ask for full size again
            touched.update(self._throttled)
        self._throttled.clear()
        for key, until in self._delayed.items():
            if until <= now:
                touched.add(key)
        if not touched:
            return
        allowance = self._quota.available() if limited else 0
        for key in touched:
            self._truncating.discard(key)
            self._delayed.pop(key, None)
            state = self._states.get(key)
            position = None
            if state is not None:
                if state.delayed_until > now:
                    self._delayed[key] = state.delayed_until
                elif state.truncating:
                    self._truncating.add(key)
                else:
                    position = self._position(state, limited, allowance)
                state.fetching = position is not None
            if position is None:
                if self._wanted.pop(key, None) is not None:
                    self._unsent.add(key)
            elif self._wanted.get(key) != position:
                self._wanted[key] = position
                self._unsent.add(key)
        touched.clear()

    def _check_positions(self, now: float) -> None:
        """Check a slice of the cached positions against their logs, in turn, about `POSITION_CHECK_S` apart each
        (at most `POSITION_CHECKS_PER_ROUND` per round): an out-of-date one is read again and its partition touched."""
        count = len(self._states)
        self._check_budget = min(self._check_budget + count * (now - self._checked_at) / POSITION_CHECK_S,
                                 POSITION_CHECKS_PER_ROUND, count)
        self._checked_at = now
        queue = self._check_queue
        while self._check_budget >= 1:
            if not queue:
                queue.extend(self._states.values())
                queue.reverse()
                if not queue:
                    return
            state = queue.pop()
            self._check_budget -= 1
            position, partition = state.position, state.partition
            if position is not None and (position.fetch_offset != partition.log_end_offset
                                         or position.log_start_offset != partition.log_start_offset):
                state.position = None
                self._touched.add(partition.key)

    def _position(self, state: FetchState, limited: bool, allowance: int) -> FetchPosition | None:
        """What a fetch names for a ready partition; None if the replication throttle leaves it out this round
        (`allowance`: the bytes a throttled partition may ask for now)."""
        max_bytes = self.config.replica_fetch_max_bytes
        position = state.position
        if position is None:
            partition = state.partition
            position = state.position = FetchPosition(partition.index, state.leader_epoch, partition.log_end_offset,
                                                      partition.log_start_offset, max_bytes)
        key = state.partition.key
        if limited and self._quota.is_throttled(key, self.node_id in state.partition.isr):
            self._throttled.add(key)
            if allowance <= 0:
                return None
            position = position._replace(partition_max_bytes=min(max_bytes, allowance))
        return position

    # --- truncation ------------------------------------------------------------------------------------

    async def _truncate(self) -> bool:
        """One OffsetForLeaderEpoch round for the partitions still truncating. True if it sent one."""
        if not self._truncating:
            return False
        asked: dict[TopicPartition, tuple[FetchState, LeaderEpoch]] = {}
        by_topic: dict[str, list[OffsetForLeaderPartition]] = {}
        for key in self._truncating:
            state = self._states[key]
            epoch = state.partition.latest_epoch
            if epoch == UNDEFINED:
                state.truncating = False  # nothing of ours carries an epoch: fetch from our LEO
                self._touched.add(key)
                continue
            asked[key] = (state, epoch)
            by_topic.setdefault(key.topic, []).append(OffsetForLeaderPartition(
                partition=i32(key.partition), current_leader_epoch=i32(state.leader_epoch), leader_epoch=i32(epoch)))
        if not asked:
            return True
        request = OffsetForLeaderEpochRequest(replica_id=KioBrokerId(self.node_id), topics=tuple(
            OffsetForLeaderTopic(topic=TopicName(t), partitions=tuple(ps)) for t, ps in by_topic.items()))
        response = await self._client.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, request, self._request_timeout_s())
        for topic in response.topics:  # type: ignore[attr-defined]
            for result in topic.partitions:
                key = TopicPartition(topic.topic, int(result.partition))
                sent = asked.get(key)
                if sent is None or self._states.get(key) is not sent[0]:
                    continue
                state, epoch = sent
                if result.error_code != ErrorCode.none:
                    log.info("%s: OffsetForLeaderEpoch %s-%d: %s", self, *key, result.error_code.name)
                    self._delay(state)
                    continue
                self._apply_epoch_end(state, epoch, int(result.leader_epoch), int(result.end_offset))
        return True

    def _apply_epoch_end(self, state: FetchState, asked_epoch: int, leader_epoch: int, end_offset: int) -> None:
        partition = state.partition
        state.position = None
        self._touched.add(partition.key)
        if end_offset == UNDEFINED or leader_epoch == UNDEFINED:
            target, done = partition.high_watermark, True  # Kafka falls back to the high watermark
        elif leader_epoch == asked_epoch:
            target, done = min(end_offset, partition.log_end_offset), True
        else:
            local_epoch, local_end = partition.end_offset_for_epoch(leader_epoch)
            target = min(end_offset, local_end if local_end != UNDEFINED else partition.log_end_offset)
            done = local_epoch == leader_epoch
        if target < partition.log_end_offset:
            log.info("%s-%d: truncating from %d to %d (leader %d epoch %d ends at %d)", partition.topic,
                     partition.index, partition.log_end_offset, target, self.source.node_id, leader_epoch, end_offset)
            partition.truncate_to(target)
        state.truncating = not done

    # --- fetch -----------------------------------------------------------------------------------------

    async def _fetch(self) -> None:
        """One fetch round: the request names what `_update` found changed (in the session) and the answer's
        partitions are appended."""
        if not self._wanted:
            now = asyncio.get_running_loop().time()
            waits = [until - now for until in self._delayed.values()]
            if self._throttled:
                waits.append(self._quota.delay_s())
            await self._wait_changed(max(min(waits), 0.0) if waits else None)
            return
        plan = self._session.build(self._wanted, self._unsent)
        self._unsent.clear()
        wait_ms = self.config.replica_fetch_wait_max_ms
        request = encode_replica_fetch_request(self.node_id, wait_ms, 1, self.config.replica_fetch_response_max_bytes,
                                               plan.topics.items(), plan.session, plan.forgotten.items())
        frame = await self._client.request_body(ApiKey.FETCH, REPLICA_FETCH_VERSION, request,
                                                self._request_timeout_s(wait_ms))
        body = decode_fetch_response(memoryview(frame))
        if not self._session.handle_response(body.error_code, body.session_id):
            log.info("%s: fetch session %d at epoch %d: %s; the next fetch is a full one", self, *plan.session,
                     ErrorCode(body.error_code).name)
            return
        for position, fetched in enumerate(body.partitions, 1):
            if position % PARTITIONS_PER_SLICE == 0:
                await asyncio.sleep(0)  # every state is checked again below: a change meanwhile is seen
            key = (fetched.topic, fetched.partition)
            state = self._states.get(key)
            if state is None or not state.fetching:
                continue  # moved to another leader or epoch while the fetch was in flight
            offset = self._wanted[key].fetch_offset  # type: ignore[index]
            partition = state.partition
            code = ErrorCode(fetched.error_code)
            if code == ErrorCode.none:
                if partition.is_leader or partition.log_end_offset != offset:
                    continue
                records = fetched.records[: whole_batches_length(fetched.records)]
                if key in self._throttled:
                    self._quota.record(len(records))
                state.position = None
                self._touched.add(partition.key)
                try:
                    partition.append_as_follower(records, fetched.high_watermark, fetched.log_start_offset)
                except BrokerError as exc:
                    log.warning("%s-%d: cannot append fetched batches at %d (%s); re-truncating",
                                partition.topic, partition.index, offset, exc)
                    state.truncating = True
                    self._delay(state)
                    continue
                if self._on_fetched is not None:
                    self._on_fetched(partition)
            elif code == ErrorCode.offset_out_of_range:
                await self._handle_out_of_range(state)
            else:
                if code not in _RETRIABLE:
                    log.warning("%s: fetch %s-%d: %s", self, *key, code.name)
                self._delay(state)

    async def _handle_out_of_range(self, state: FetchState) -> None:
        """Our LEO is outside the leader's log: restart at its log start if we are below it, otherwise
        re-run the epoch truncation (we are ahead of it)."""
        partition = state.partition
        request = ListOffsetsRequest(replica_id=KioBrokerId(self.node_id), isolation_level=i8(0), topics=(
            ListOffsetsTopic(name=TopicName(partition.topic), partitions=(
                ListOffsetsPartition(partition_index=i32(partition.index), timestamp=i64(EARLIEST_TIMESTAMP)),)),))
        response = await self._client.request(ApiKey.LIST_OFFSETS, 2, request, self._request_timeout_s())
        result = response.topics[0].partitions[0]  # type: ignore[attr-defined]
        if self._states.get(partition.key) is not state:
            return
        state.position = None
        self._touched.add(partition.key)
        if result.error_code == ErrorCode.none and int(result.offset) > partition.log_end_offset:
            log.info("%s-%d: leader log starts at %d, after our end %d; restarting there", partition.topic,
                     partition.index, int(result.offset), partition.log_end_offset)
            partition.truncate_fully_and_start_at(int(result.offset))
        else:
            state.truncating = True
            self._delay(state)
