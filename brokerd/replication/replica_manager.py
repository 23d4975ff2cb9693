"""`ReplicaManager`: every partition replica on this broker, kept in the role the metadata image gives it,
and the one entry point for appends (Kafka's `ReplicaManager`).

On every image (and at start) each partition this broker is a replica of gets a `Partition` (its log is
opened or created; the new logs of an image are created in one batch on a worker thread — in place only at start,
before anything is served, when few, see `CREATE_OFF_LOOP_MIN_LOGS` — their replicas then taking their roles a
slice per loop step,
`ROLE_SLICE_REPLICAS`) and becomes leader or follower at the image's leader epoch (a change to many replicas,
e.g. a broker's fence, a slice of topics per loop step: `_apply`): a new leader stops
fetching and wakes its acks=all waiters; a new follower joins the `ReplicaFetcher` of its leader's
broker (truncating first). Topics that leave the image lose their logs. ISR health is checked every
`ISR_CHECK_INTERVAL_MS`: ISR followers not caught up for `replica.lag.time.max.ms`, or whose broker the
controller fenced, are proposed out; followers that caught up are proposed in as soon as their fetch
shows it (`isr.IsrManager`). The check visits only the led partitions due by then (`isr_schedule`), at most
`ISR_CHECK_SLICE` per loop step.

What callers use (handlers, the group coordinator):
- `append_records` / `append`: an append with its acks semantics (Kafka's `appendRecords`), see there;
- `leader_partition` (the led `Partition`, or NOT_LEADER_OR_FOLLOWER / UNKNOWN_TOPIC_OR_PARTITION) for
  reads, `replica` for any role;
- `record_follower_fetch` (replica Fetch) and `wait_for_appends` (fetch long polls).

Reassignment: the role changes (`_apply`, `_become_leader`, `_become_follower`) add a replica this broker
newly hosts as a follower and delete the log of one reassigned away; the fetchers (`fetcher.ReplicaFetcher`,
one per source broker) apply the follower replication throttle and the Fetch handler the leader one
(`throttle.ReplicationQuota`s, configured from the image). `_wait_for_replication` and
`purgatory.ProducePurgatory` are the acks=all latency path. Event loop only.
"""

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from brokerd.clock import Clock, SystemClock
from brokerd.counters import BrokerTopicMetrics
from brokerd.errors import BrokerError
from brokerd.metadata.image import BrokerEndpoint, ClusterImage, PartitionAssignment, TopicMetadata
from brokerd.metadata.store import MetadataStore
from brokerd.replication.config import ReplicationConfig
from brokerd.replication.errors import (
    NotEnoughReplicasAfterAppendError,
    NotLeaderOrFollowerError,
    RequestTimedOutError,
    UnknownTopicOrPartitionError,
)
from brokerd.replication.fetcher import ReplicaFetcher
from brokerd.replication.isr import IsrManager
from brokerd.replication.isr_schedule import IsrCheckSchedule
from brokerd.replication.partition import AppendResult, Partition
from brokerd.replication.purgatory import FetchPurgatory, ProducePurgatory
from brokerd.replication.session_cache import FetchSession, FetchSessionCache
from brokerd.replication.throttle import ReplicationQuota
from brokerd.storage import Log, LogManager, NewLog
from brokerd.storage.log_dir import LogDirectory
from brokerd.types import BrokerId, LeaderEpoch, Offset, TopicPartition
from brokerd.waits import wait_resolved
from kafkaspec import replication_throttles as throttles
from kafkaspec import topic_config

log = logging.getLogger(__name__)

ISR_CHECK_INTERVAL_MS = 250
ISR_CHECK_SLICE = 512
"""Led partitions the ISR check looks at per event-loop step (`maybe_shrink_isr`): partitions led since the same
moment come due together (33,334 after a 100,000-partition cluster starts), and each visit may ask a fetch session."""
SESSION_SWEEP_INTERVAL_MS = 30_000
"""Every fetch session looks at all its partitions again within this time (`FetchSessionCache.sweep_slice`, a slice at
each ISR check): a safety net only, since every change a follower must hear of is an event that marks the partition
(appends, high-watermark moves, role and ISR changes, and log start moves, `LogManager.add_log_start_listener`). At
100,000 partitions a 2 s sweep was most of an idle broker's event-loop work (a fetch looking at ~33,000 partitions per
follower every 2 s)."""
ACKS_ALL = -1
CREATE_OFF_LOOP_MIN_LOGS = 8
"""At start (`start`: nothing served yet) an image bringing fewer new replicas here has their logs created in place,
one batch; more, and every new log while serving, are created on a worker thread (their `Partition`s appear once the
logs are durable): a creation's fsyncs held every broker's loop 5-75 ms each time a small topic was created (issue
18). The requests that create topics or partitions (CreateTopics, CreatePartitions, Metadata's auto-creation,
FindCoordinator's offsets topic) answer once this broker's are created (`created`), so a client of a new topic still
finds it here at once."""
ROLE_SLICE_REPLICAS = 256
"""Replicas whose logs were created off the loop take their roles at most this many per event-loop step
(`_create_off_loop`): measured 6-9 ms a step on a loaded 2-core machine, so 10,000 new replicas (40 steps) never
hold the loop, and with it the broker's heartbeat, for seconds (one pass over them all held it 1-5 s). A change to
replicas already here goes by whole topics of about this many partitions per step (`_apply`)."""

ROLE_STEP_MS = 40
"""A loop step of `_apply_queued` applies slices for up to this many milliseconds of wall time: one slice per step
made a failover's 100,000 role changes take ~17 s on a broker whose loop steps were long with other work (a slice
costs ~1-4 ms; the replicas a leadership moved to stayed followers, and producers unanswered, that long)."""

LEADERLESS_NAMED = 5
"""Partitions named in the one line an image's leaderless followers get (`_log_roles`); the rest are counted."""

AppendOutcome = AppendResult | BrokerError
"""Per entry of `append_records`: where the batch landed, or the error (carrying its Kafka error) that
answers it."""


@dataclass(frozen=True, slots=True)
class _AwaitingReplication:
    """An acks=all append (entry `position` of its request) waiting for the high watermark."""

    position: int
    partition: Partition
    min_insync_replicas: int


class ReplicaManager:
    def __init__(self, log_manager: LogManager, metadata: MetadataStore, node_id: BrokerId,
                 config: ReplicationConfig | None = None, clock: Clock | None = None,
                 broker_properties: Mapping[str, str] | None = None, metrics_enabled: bool = True) -> None:
        self._log_manager = log_manager
        self._metadata = metadata
        self.node_id = node_id
        self.config = config or ReplicationConfig()
        self._clock = clock or SystemClock()
        self._partitions: dict[TopicPartition, Partition] = {}
        self._topic_ids: dict[str, str] = {}
        self._fetchers: dict[BrokerId, ReplicaFetcher] = {}
        self._fenced: frozenset[BrokerId] = frozenset()
        self._fenced_checked: frozenset[BrokerId] = frozenset()
        """The fenced brokers the ISR check last looked for (`_schedule_newly_fenced`)."""
        self._isr_due = IsrCheckSchedule()
        """When each led partition is next due for the ISR check (`maybe_shrink_isr`)."""
        self._min_isr: dict[str, int] = {}
        self._topic_configs: dict[str, dict[str, str]] = {}
        self._defaults = topic_config.broker_defaults(broker_properties or {})
        self.topic_metrics = BrokerTopicMetrics(enabled=metrics_enabled)
        """Per-topic byte/message/request counters; each Partition bumps its topic's."""
        self.fetch_purgatory = FetchPurgatory()
        self.fetch_sessions = FetchSessionCache(self.config.fetch_session_cache_slots)
        """The fetch sessions (KIP-227) of the followers fetching from this broker as leader."""
        self.produce_purgatory = ProducePurgatory()
        self.isr = IsrManager(metadata)
        self.follower_quota = ReplicationQuota()
        """`follower.replication.throttled.rate` over the throttled replicas here; shared by every fetcher."""
        self.leader_quota = ReplicationQuota()
        """`leader.replication.throttled.rate` over what this broker, as leader, sends to out-of-sync followers of
        the throttled replicas it leads (the Fetch handler asks it)."""
        self._isr_task: asyncio.Task | None = None
        self._log_start_listener: Callable[[TopicPartition], None] | None = None
        """Registered with the log manager while started (`_on_log_start_moved`)."""
        self._creating: set[TopicPartition] = set()
        """Replicas whose logs a worker thread is creating (`_create_off_loop`): no `Partition` yet."""
        self._creations: set[asyncio.Task] = set()
        self._apply_incomplete = False
        """An application of an image (or a slice of one) raised: the next one visits every replica, not only the
        changed topics'."""
        self._queued: dict[str, int] = {}
        """Topics whose replicas `_apply_queued` is to give their roles (see `_apply`), with how many partitions
        each had in the images applied before."""
        self._role_slicer: asyncio.Task | None = None
        self._created_slices = asyncio.Lock()
        """Held by a `_create_off_loop` while its replicas take their roles: batches take turns."""
        self._queued_roles = (0, 0)
        """Leaderships and followerships taken by the slices of the queue so far (logged in one line)."""
        self._started = False
        self._role_listeners: list[Callable[[], None]] = []
        self._leaderless: list[TopicPartition] = []
        """Followers left without a leader since the last `_log_roles` (one line for them all)."""
        metadata.add_listener(self._on_metadata_change)

    # --- lifecycle -------------------------------------------------------------------------------------

    def start(self) -> None:
        self._started = True
        image = self._metadata.image
        # Topics deleted while this broker was down: their logs go before anything serves them.
        self._log_manager.delete_stray_logs(image.cluster_id, self.node_id,
                                            {name: topic.uuid for name, topic in image.topics.items()})
        # Replicas reassigned away while this broker was down: not ours any more (Kafka's StopReplica).
        for (topic, index), _ in self._log_manager.logs():
            assignment = image.partition(topic, index)
            if assignment is not None and self.node_id not in assignment.replicas:
                log.info("%s-%d: no longer a replica here; deleting its log", topic, index)
                self._log_manager.delete_log(topic, index)
        self._apply(image)
        loop = asyncio.get_running_loop()
        self._isr_task = loop.create_task(self._isr_loop(), name="isr-check")
        self._log_start_listener = lambda key: self._on_log_start_moved(loop, key)
        self._log_manager.add_log_start_listener(self._log_start_listener)

    def _on_log_start_moved(self, loop: asyncio.AbstractEventLoop, key: TopicPartition) -> None:
        """A log's start offset moved (retention on the maintenance thread, DeleteRecords, truncation): the sessions
        holding the partition look at it again, so its followers hear of it with the next fetch."""
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: the broker is stopping
            loop.call_soon_threadsafe(self.fetch_sessions.mark_changed, key)

    async def created(self) -> None:
        """Return once the logs being created when called are durable and their replicas have their roles (the
        requests that create topics or partitions wait for it). Cancelling the wait leaves the creations running."""
        if self._creations:
            await asyncio.wait(set(self._creations))

    async def stop(self) -> None:
        self._started = False
        if self._log_start_listener is not None:
            self._log_manager.remove_log_start_listener(self._log_start_listener)
            self._log_start_listener = None
        await asyncio.gather(*self._creations, return_exceptions=True)  # the logs stay, for the next start
        if self._role_slicer is not None:  # it ends at its next step; the next start applies the image in full
            await asyncio.gather(self._role_slicer, return_exceptions=True)
        self._queued.clear()
        if self._isr_task is not None:
            self._isr_task.cancel()
            await asyncio.gather(self._isr_task, return_exceptions=True)
        for fetcher in list(self._fetchers.values()):
            await fetcher.stop()
        self._fetchers.clear()
        await self.isr.stop()
        for key in list(self._partitions):
            self.produce_purgatory.abort(key)

    # --- lookups ---------------------------------------------------------------------------------------

    def leader_partition(self, topic: str, index: int) -> Partition:
        """The partition if this broker leads it; raises UnknownTopicOrPartitionError or
        NotLeaderOrFollowerError."""
        partition = self._partitions.get((topic, index))
        if partition is not None and partition.is_leader:
            return partition
        if self._metadata.image.partition(topic, index) is None:
            raise UnknownTopicOrPartitionError(f"{topic}-{index} does not exist")
        raise NotLeaderOrFollowerError(f"broker {self.node_id} does not lead {topic}-{index}")

    def replica(self, topic: str, index: int) -> Partition | None:
        """This broker's replica of the partition, in whatever role; None if it holds none."""
        return self._partitions.get((topic, index))

    def partitions(self) -> list[Partition]:
        """Every replica on this broker."""
        return list(self._partitions.values())

    def log_dirs(self) -> list[LogDirectory]:
        """Every log dir of this broker, online or not, in `log.dirs` order."""
        return list(self._log_manager.log_dirs)

    def min_insync_replicas(self, topic: str) -> int:
        return self._min_isr.get(topic, 1)

    def add_role_listener(self, listener: Callable[[], None]) -> None:
        """`listener()` runs after every application of the metadata image (at start and on each change),
        once every replica is in its new role (the group coordinators follow `__consumer_offsets` leadership)."""
        self._role_listeners.append(listener)

    # --- PartitionListener -----------------------------------------------------------------------------

    def on_append(self, partition: Partition) -> None:
        self.fetch_purgatory.notify(partition.key)
        self.fetch_sessions.mark_changed(partition.key)

    def on_high_watermark(self, partition: Partition) -> None:
        """The acks=all produces it completes run first (the loop runs woken tasks in the order they were woken).
        Consumers read up to the high watermark, so their parked fetches wake. A follower reads to the log end
        and asks for at least a byte: a new high watermark alone never completes its fetch (nor does it in Kafka's
        `DelayedFetch`), so its session only notes it for the next answer — woken, its fetch would read its
        partitions again and go back to waiting, between this move and the produce answers it allows."""
        self.produce_purgatory.complete(partition.key, partition.high_watermark)
        self.fetch_purgatory.notify(partition.key)
        self.fetch_sessions.mark_changed(partition.key, wake=False)

    def on_leader_state(self, partition: Partition) -> None:
        """A new leadership, ISR or replica set: the ISR check visits the partition by its new due time (at once
        if a fenced broker is in its ISR)."""
        self.fetch_sessions.mark_changed(partition.key)  # a follower's ISR membership decides whether it is quiet
        due = partition.isr_check_due_ms(self.config.replica_lag_time_max_ms)
        if due is not None:
            self._isr_due.schedule_by(partition.key, 0 if not self._fenced.isdisjoint(partition.isr) else due)

    # --- appends ---------------------------------------------------------------------------------------

    async def append_records(self, entries: Sequence[tuple[str, int, bytes | bytearray]], required_acks: int,
                             timeout_ms: int, leader_epoch: LeaderEpoch | None = None,
                             on_appended: Callable[[], None] | None = None) -> list[AppendOutcome]:
        """Append one producer batch per (topic, partition, batch) entry as leader, with Kafka's acks
        semantics; one outcome per entry, in order. Never raises for an entry: its error is its outcome.

        Per entry: the partition must be led here (UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER; at
        `leader_epoch` when one is given, as the group coordinator writes within one leadership), the batch
        header is read and checked once (`Partition.append_as_leader`: INVALID_RECORD, CORRUPT_MESSAGE, ...),
        acks=all needs an ISR of at least `min.insync.replicas` (NOT_ENOUGH_REPLICAS, nothing appended), a
        retried idempotent batch gets its original offsets (OUT_OF_ORDER_SEQUENCE_NUMBER,
        INVALID_PRODUCER_EPOCH when it is no retry and out of order), then storage appends it.
        acks 0 and 1 return after the local append. acks=all (-1) then waits, all entries within one
        `timeout_ms`, until the high watermark passes each batch: NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR
        shrank below the minimum meanwhile, REQUEST_TIMED_OUT at the deadline, NOT_LEADER_OR_FOLLOWER if
        leadership moved (the batch may be lost then). `on_appended()` is called once every entry is appended
        (or refused) and only that wait is left, before it starts (the produce handler lets its connection
        start the next request then).
        """
        outcomes: list[AppendOutcome] = []
        awaiting: list[_AwaitingReplication] = []
        for topic, index, records in entries:
            try:
                partition = self.leader_partition(topic, index)
                if leader_epoch is not None and partition.leader_epoch != leader_epoch:
                    raise NotLeaderOrFollowerError(f"{topic}-{index} is led at epoch {partition.leader_epoch}, "
                                                   f"not {leader_epoch}")
                min_isr = self._min_isr.get(topic, 1)
                outcomes.append(partition.append_as_leader(records, required_acks, min_isr))
                if required_acks == ACKS_ALL:
                    awaiting.append(_AwaitingReplication(len(outcomes) - 1, partition, min_isr))
            except BrokerError as exc:
                outcomes.append(exc)
            except Exception as exc:  # noqa: BLE001 - a bug answers this entry alone
                log.exception("append to %s-%d failed", topic, index)
                outcomes.append(BrokerError(f"append failed: {exc!r}"))
        if awaiting:
            if on_appended is not None:
                on_appended()
            await self._wait_for_replication(outcomes, awaiting, timeout_ms)
        return outcomes

    async def append(self, topic: str, index: int, records: bytes | bytearray, required_acks: int, timeout_ms: int,
                     leader_epoch: LeaderEpoch | None = None) -> AppendResult:
        """`append_records` for one batch: its result, or its error raised."""
        [outcome] = await self.append_records(((topic, index, records),), required_acks, timeout_ms, leader_epoch)
        if isinstance(outcome, BrokerError):
            raise outcome
        return outcome

    async def _wait_for_replication(self, outcomes: list[AppendOutcome], awaiting: list[_AwaitingReplication],
                                    timeout_ms: int) -> None:
        """acks=all: park each appended entry in the produce purgatory until the HW passes its last offset;
        replace its outcome with the error when it does not get there (see `append_records`)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout_ms, 0) / 1000
        for entry in awaiting:
            partition = entry.partition
            result = outcomes[entry.position]
            assert isinstance(result, AppendResult)
            while True:
                if not partition.is_leader or partition.leader_epoch != result.leader_epoch:
                    outcomes[entry.position] = NotLeaderOrFollowerError(
                        f"{partition.key} changed leadership before offset {result.last_offset} was replicated")
                    break
                if partition.high_watermark > result.last_offset:
                    if len(partition.isr) < entry.min_insync_replicas:
                        outcomes[entry.position] = NotEnoughReplicasAfterAppendError(
                            f"{partition.key}: ISR {list(partition.isr)} shrank below "
                            f"min.insync.replicas={entry.min_insync_replicas}")
                    break
                remaining = deadline - loop.time()
                if remaining <= 0:
                    outcomes[entry.position] = RequestTimedOutError(
                        f"{partition.key}: offset {result.last_offset} not replicated within {timeout_ms} ms")
                    break
                await wait_resolved(self.produce_purgatory.watch(partition.key, result.last_offset + 1), remaining)

    async def wait_for_appends(self, keys: Iterable[TopicPartition], timeout_s: float) -> bool:
        """A fetch long poll: until an append to one of `keys` (True) or `timeout_s` (False)."""
        return await self.fetch_purgatory.wait(keys, timeout_s)

    # --- leader side of replication --------------------------------------------------------------------

    def record_session_fetch(self, session: FetchSession) -> None:
        """A fetch in `session`: each of its partitions counts as fetched now at its cached offset."""
        session.last_fetch_ms = self._clock.monotonic_ms()

    def record_follower_fetch(self, partition: Partition, replica_id: BrokerId, fetch_offset: Offset) -> None:
        """A replica Fetch from `replica_id` at `fetch_offset` (its LEO): may move the HW or expand the ISR."""
        partition.update_follower_fetch(replica_id, fetch_offset, self._clock.monotonic_ms())
        if partition.isr_expansion_candidate(replica_id, self._fenced):
            self.isr.propose(partition, partition.isr + (replica_id,))

    async def _isr_loop(self) -> None:
        while True:
            await asyncio.sleep(ISR_CHECK_INTERVAL_MS / 1000)
            self.fetch_sessions.sweep_slice(SESSION_SWEEP_INTERVAL_MS // ISR_CHECK_INTERVAL_MS)
            more = True
            while more:
                try:
                    more = self.maybe_shrink_isr()
                except Exception:  # noqa: BLE001 - the check must keep running
                    log.exception("ISR check failed")
                    more = False
                if more:
                    await asyncio.sleep(0)  # the loop serves between slices

    def maybe_shrink_isr(self, limit: int = ISR_CHECK_SLICE) -> bool:
        """One slice of the ISR check: up to `limit` led partitions due now, each proposing its lagging or fenced
        ISR followers out (Kafka's `maybeShrinkIsr`) and scheduled again — by its followers' caught-up times, or
        for the next check while a proposal is in flight or was just made. True if more are due now.

        Equivalent to a pass over every led partition at each check (the tests' oracle): a partition not visited
        cannot have a follower out of sync yet (`Partition.isr_check_due_ms`; its changes reach the schedule
        through `on_leader_state`, newly fenced brokers through `_schedule_newly_fenced`)."""
        now = self._clock.monotonic_ms()
        self._schedule_newly_fenced()
        max_lag_ms = self.config.replica_lag_time_max_ms
        for key in self._isr_due.pop_due(now, limit):
            partition = self._partitions.get(key)
            if partition is None or not partition.is_leader:
                continue  # scheduled again when it leads again
            if partition.pending_isr is None:
                lagging = partition.out_of_sync_replicas(now, max_lag_ms, self._fenced, self._caught_up_in_session)
                if not lagging:
                    due = partition.isr_check_due_ms(max_lag_ms)
                    if due is not None:
                        self._isr_due.schedule(key, due)
                    continue
                shrunk = tuple(r for r in partition.isr if r not in lagging)
                log.info("%s-%d: shrinking ISR %s -> %s (lagging or fenced: %s)", partition.topic,
                         partition.index, list(partition.isr), list(shrunk), lagging)
                self.isr.propose(partition, shrunk)
            self._isr_due.schedule(key, now + 1)  # looked at by every check until the proposal settled
        next_due = self._isr_due.next_due_ms()
        return next_due is not None and next_due <= now

    def _schedule_newly_fenced(self) -> None:
        """The led partitions with a broker in their ISR that the image fenced since the last check are due now
        (a pass over the replicas here, once per fence)."""
        fenced = self._fenced
        if fenced is self._fenced_checked:
            return
        newly, self._fenced_checked = fenced - self._fenced_checked, fenced
        if newly:
            for partition in self._partitions.values():
                if partition.is_leader and not newly.isdisjoint(partition.isr):
                    self._isr_due.schedule_by(partition.key, 0)

    def _caught_up_in_session(self, replica_id: BrokerId, partition: Partition) -> int:
        return self.fetch_sessions.caught_up_ms(replica_id, partition.key, partition.leader_epoch,
                                                partition.log_end_offset)

    # --- metadata --------------------------------------------------------------------------------------

    def _on_metadata_change(self, old: ClusterImage, new: ClusterImage) -> None:
        if self._started:
            self._apply(new, None if self._apply_incomplete else old, sliced=True)

    def _changed_topics(self, previous: ClusterImage | None, image: ClusterImage) -> list[str] | None:
        """The topics whose replicas `image` may give another state than `previous` (the image applied before):
        those whose metadata differs (a delta from `previous` names them: O(changed); else O(topics) identity checks,
        a delta sharing the untouched ones), and the topics of the followers here whose leader's endpoint appeared,
        left or moved (all a replica takes from the broker list: a fence or unfence alone changes no replica). None
        (every topic) without a previous image or when the broker configs changed."""
        if previous is None or previous.broker_configs != image.broker_configs:
            return None
        derived = image.changed_topics_since(previous)  # a delta from `previous` names what it replaced
        changed = set(derived) if derived is not None else {
            name for name in image.topics.keys() | previous.topics.keys()
            if image.topics.get(name) is not previous.topics.get(name)}
        if previous.brokers != image.brokers:
            endpoints = {b.node_id: (b.host, b.port) for b in previous.brokers}
            moved = {b.node_id for b in image.brokers if endpoints.pop(b.node_id, None) != (b.host, b.port)}
            moved.update(endpoints)  # gone from the image
            if moved:
                changed.update(p.topic for p in self._partitions.values()
                               if not p.is_leader and p.leader_id in moved)
        return sorted(changed)

    def _apply(self, image: ClusterImage, previous: ClusterImage | None = None, sliced: bool = False) -> None:
        """Every replica in the role `image` gives it; with `previous` (the image applied before), only the
        replicas of the topics that changed are visited: a one-partition change costs O(topics), not
        O(partitions). `sliced` (an image arriving while serving): the topics held here are visited about
        `ROLE_SLICE_REPLICAS` partitions at a time, the first slice now, the others one per loop step
        (`_apply_queued`), each in the image current at its step — a failover changing every partition never
        holds the loop for the whole pass (100,000 replicas: seconds); new topics all now, in one batch of logs
        to create (their replicas take their roles in `_create_off_loop`'s slices).

        Invariants: a queued topic's replicas keep the role they had until its slice gives them the newest
        image's (never an older one: every slice reads the current image), as a broker the image has not
        reached yet would; an image arriving meanwhile queues its changed topics behind them and applies its
        own first slice at once, so a small change is never held up by a large one. The brokers the ISR check
        takes as fenced follow only once nothing is queued: a queued leader's ISR still holds the broker its fence
        removed, and proposing it out would be refused (a stale partition epoch) for thousands of partitions."""
        fenced = frozenset(b.node_id for b in image.brokers if b.fenced)
        changed = self._changed_topics(previous, image)
        self._configure_quotas(image, changed)
        if changed is None:  # every topic of the image, and every one held here
            visits = {name: 0 for name in (*image.topics, *self._topic_ids)}
            for key in self._partitions:
                visits[key.topic] = max(visits.get(key.topic, 0), key.partition + 1)
        else:  # the replicas of a changed topic, as `previous` had them
            visits = {name: len(previous.topics[name].partitions) if name in previous.topics else 0  # type: ignore[union-attr]
                      for name in changed}
        self._apply_incomplete = True  # until applied: an application cut short by an error is redone in full
        if not sliced:
            visits.update((name, max(count, visits.get(name, 0))) for name, count in self._queued.items())
            self._queued.clear()
            led, followed = self._apply_topics(image, visits, in_place=True)
        else:  # topics new here at once: visiting them only registers their logs for `_create_off_loop`
            first = {name: visits.pop(name) for name in [name for name in visits if name not in self._topic_ids]}
            first.update(self._next_slice(visits, image))
            for name, count in visits.items():
                self._queued[name] = max(count, self._queued.get(name, 0))
            for name in first:
                first[name] = max(first[name], self._queued.pop(name, 0))
            led, followed = self._apply_topics(image, first)
            if self._queued and (self._role_slicer is None or self._role_slicer.done()):
                self._role_slicer = asyncio.get_running_loop().create_task(self._apply_queued(), name="apply-roles")
        self._apply_incomplete = False
        if not self._queued:
            self._fenced = fenced
        if self._role_slicer is not None and not self._role_slicer.done():
            self._queued_roles = (self._queued_roles[0] + led, self._queued_roles[1] + followed)
        else:
            self._log_roles(image, led, followed)

    def _configure_quotas(self, image: ClusterImage, changed: Sequence[str] | None) -> None:
        """The replication quotas' rates and throttled replicas as `image` sets them; with `changed` (the topics
        whose metadata may differ from the image configured before, whose broker configs are the same), only those
        topics' throttled replicas are read again."""
        own, default = image.broker_configs.get(str(self.node_id), {}), image.broker_configs.get("default", {})
        for quota, rate, replicas in ((self.follower_quota, throttles.FOLLOWER_RATE, throttles.FOLLOWER_REPLICAS),
                                      (self.leader_quota, throttles.LEADER_RATE, throttles.LEADER_REPLICAS)):
            names = image.topics if changed is None else changed
            throttled = {} if changed is None else dict(quota.throttled)
            for name in names:
                topic = image.topics.get(name)
                if topic is not None and topic.configs.get(replicas):
                    throttled[name] = throttles.throttled_partitions(topic.configs[replicas], self.node_id)
                else:
                    throttled.pop(name, None)
            quota.configure(throttles.rate(rate, own, default), throttled)

    def _next_slice(self, visits: dict[str, int], image: ClusterImage) -> dict[str, int]:
        """Take topics out of `visits` (in order) until they hold `ROLE_SLICE_REPLICAS` partitions (at least one
        topic)."""
        taken: dict[str, int] = {}
        size = 0
        for name in visits:
            if taken and size >= ROLE_SLICE_REPLICAS:
                break
            topic = image.topics.get(name)
            taken[name] = visits[name]
            size += max(visits[name], len(topic.partitions) if topic is not None else 0) + 1
        for name in taken:
            del visits[name]
        return taken

    async def _apply_queued(self) -> None:
        """`_apply`'s queued topics, slices per loop step for at most `ROLE_STEP_MS` (at least one slice), each in
        the image current then; one log line for them all. Once the queue is empty, every object alive is frozen out
        of garbage collection (`gc.freeze`, as `_create_off_loop` does): a fence's role changes at 100,000 partitions
        left ~170,000 new tracked objects (each new leader's follower states), which every full collection walked —
        the survivors logged 158-223 ms collections right after a failover's roles."""
        while self._queued:
            await asyncio.sleep(0)  # the loop serves (heartbeats, requests, images) between steps
            if not self._started:
                return
            image = self._metadata.image
            deadline = time.perf_counter() + ROLE_STEP_MS / 1000
            while self._queued:
                visits = self._next_slice(self._queued, image)
                try:
                    led, followed = self._apply_topics(image, visits)
                    self._queued_roles = (self._queued_roles[0] + led, self._queued_roles[1] + followed)
                except Exception:  # noqa: BLE001 - the next image visits every replica again, in full
                    log.exception("giving the replicas of %d topics their roles failed", len(visits))
                    self._apply_incomplete = True
                if time.perf_counter() >= deadline:
                    break
        self._fenced = frozenset(b.node_id for b in self._metadata.image.brokers if b.fenced)
        gc.freeze()  # the new roles' state (each new leader's followers): out of every full collection, as new replicas
        self._log_roles(self._metadata.image, *self._queued_roles)
        self._queued_roles = (0, 0)

    def _apply_topics(self, image: ClusterImage, visits: Mapping[str, int], in_place: bool = False
                      ) -> tuple[int, int]:
        """The replicas of the topics `visits` names in the role `image` gives them, `visits[name]` saying how
        many partitions the topic had in the images applied before (those of a topic gone from `image`, or
        re-created under a new id, are dropped). Replicas still in `_creating` are left to `_create_off_loop`.
        Returns how many became leaders and followers."""
        for name, count in visits.items():
            topic = image.topics.get(name)
            if topic is None or topic.topic_id != self._topic_ids.get(name):
                for index in range(count):
                    if TopicPartition(name, index) in self._partitions:
                        self._drop(TopicPartition(name, index), delete_log=True)
        topics = {name: image.topics[name] for name in visits if name in image.topics}
        new_logs = self._open_logs(topics, in_place)
        led = followed = 0
        for name, topic in topics.items():
            if name in self._topic_configs and self._topic_configs[name] != dict(topic.configs):
                self._log_manager.update_topic_config(name, dict(topic.configs))
            self._topic_configs[name] = dict(topic.configs)
            self._topic_ids[name] = topic.topic_id
            try:
                self._min_isr[name] = int(topic_config.resolve(topic.configs, self._defaults)["min.insync.replicas"])
            except (topic_config.InvalidConfigError, ValueError, KeyError):
                self._min_isr[name] = 1
            for assignment in topic.partitions:
                key = TopicPartition(name, assignment.partition)
                if self.node_id not in assignment.replicas:  # reassigned away: stop and delete (StopReplica)
                    if key in self._partitions:
                        log.info("%s-%d: no longer a replica here; deleting its log", name, assignment.partition)
                        self._drop(key, delete_log=True)
                    continue
                partition = self._partitions.get(key)
                if partition is None:
                    log_ = new_logs.get(key)
                    if log_ is None:  # its log dir failed: offline here
                        continue
                    partition = self._partitions[key] = Partition(name, assignment.partition, self.node_id, log_,
                                                                  self, self.topic_metrics.topic(name))
                if assignment.leader_id == self.node_id:
                    led += self._become_leader(partition, assignment)
                else:
                    followed += self._become_follower(partition, assignment, image.broker(assignment.leader_id))
        for name in visits:
            if name not in image.topics and name in self._topic_ids:
                del self._topic_ids[name]
                self.topic_metrics.retire(name)
                self._topic_configs.pop(name, None)
                self._min_isr.pop(name, None)
        self._stop_idle_fetchers()
        for listener in self._role_listeners:
            listener()
        return led, followed

    def _log_roles(self, image: ClusterImage, led: int, followed: int) -> None:
        """One line for an application of `image`, whatever the number of replicas it moved (a failover makes a
        broker leader of thousands at once, a leaderless broker leaves as many without a leader)."""
        if led or followed:
            log.info("metadata version %d: leader of %d more partition(s), following a new leader in %d "
                     "(%d replicas here)", image.metadata_version, led, followed, len(self._partitions))
        if self._leaderless:
            named = ", ".join(f"{topic}-{index}" for topic, index in self._leaderless[:LEADERLESS_NAMED])
            log.info("metadata version %d: %d partition(s) without a leader; not fetching them (%s%s)",
                     image.metadata_version, len(self._leaderless), named,
                     ", ..." if len(self._leaderless) > LEADERLESS_NAMED else "")
            self._leaderless.clear()

    def _open_logs(self, topics: Mapping[str, TopicMetadata], in_place: bool) -> dict[TopicPartition, Log]:
        """The logs of the replicas of `topics` on this broker that have no `Partition` yet: existing ones, and
        new ones created in one batch (`LogManager.create_logs`: durable on return, their fsyncs in parallel) on a
        worker thread (`_create_off_loop`), left out here until done; `in_place` (at start) fewer than
        `CREATE_OFF_LOOP_MIN_LOGS` are created here."""
        logs: dict[TopicPartition, Log] = {}
        missing: list[NewLog] = []
        for name, topic in topics.items():
            configured = False
            for assignment in topic.partitions:
                key = TopicPartition(name, assignment.partition)
                if key in self._partitions or key in self._creating or self.node_id not in assignment.replicas:
                    continue
                if not configured:
                    self._log_manager.update_topic_config(name, dict(topic.configs))
                    configured = True
                existing = self._log_manager.existing_log(name, assignment.partition, topic.uuid)
                if existing is not None:
                    logs[key] = existing
                else:
                    missing.append(NewLog(name, assignment.partition, topic.uuid))
        if missing and not (in_place and len(missing) < CREATE_OFF_LOOP_MIN_LOGS):
            self._creating.update(TopicPartition(new.topic, new.partition) for new in missing)
            task = asyncio.get_running_loop().create_task(self._create_off_loop(missing), name="create-logs")
            self._creations.add(task)
            task.add_done_callback(self._creations.discard)
        elif missing:
            created = self._log_manager.create_logs(missing)
            logs.update((TopicPartition(*tp), log_) for tp, log_ in created.items())
        return logs

    async def _create_off_loop(self, missing: list[NewLog]) -> None:
        """Create `missing` on a worker thread, then give the new replicas their roles in the image current at
        that moment, `ROLE_SLICE_REPLICAS` per loop step (`_apply_created`): the work on the loop is proportional
        to what was created, never a pass over the whole image.

        Invariants: a replica is served (in `_partitions`) only once its role is set, in the same step. Until its
        slice, a replica stays in `_creating`, so every image applied meanwhile leaves it alone and its slice
        reads the newest image: the end state is the one-shot application of the final image (a topic deleted,
        re-created or reassigned away meanwhile loses the log created for it). `stop()` ends the slicing between
        two steps; the logs not yet given a role stay on disk for the next start. Once every slice is done, every
        object alive is frozen out of garbage collection (`gc.freeze`, as `Broker.start` does once): thousands of
        new replicas (`Partition`, `Log`, segments) would otherwise be walked by every full collection, ~150 ms
        on the loop at 10,000; they are still freed when their last reference goes (a cycle among frozen
        objects is not reclaimed)."""
        try:
            created = await asyncio.to_thread(self._log_manager.create_logs, missing)
        except Exception:  # noqa: BLE001 - every dir offline, or a bug: the next image tries again, in full
            log.exception("creating %d logs failed", len(missing))
            self._creating.difference_update(TopicPartition(new.topic, new.partition) for new in missing)
            self._apply_incomplete = True
            return
        led = followed = 0
        try:
            async with self._created_slices:  # one batch's slices at a time: never two slices in one loop step
                for start in range(0, len(missing), ROLE_SLICE_REPLICAS):
                    if start:
                        await asyncio.sleep(0)  # the loop serves (heartbeats, requests, images) between slices
                    if not self._started:
                        return
                    batch = missing[start:start + ROLE_SLICE_REPLICAS]
                    self._creating.difference_update(TopicPartition(new.topic, new.partition) for new in batch)
                    try:
                        roles = self._apply_created(batch, created)
                        led, followed = led + roles[0], followed + roles[1]
                    except Exception:  # noqa: BLE001 - the next image visits every replica again, in full
                        log.exception("giving %d new replicas their roles failed", len(batch))
                        self._apply_incomplete = True
            gc.freeze()  # the batch's replicas live as long as their topics: out of every full collection
        finally:
            self._creating.difference_update(TopicPartition(new.topic, new.partition) for new in missing)
            self._log_roles(self._metadata.image, led, followed)  # one line for the batch, not one per slice

    def _apply_created(self, batch: Sequence[NewLog], created: Mapping[TopicPartition, Log]) -> tuple[int, int]:
        """One slice of `_create_off_loop`: each replica of `batch` in the role the current image gives it. A log
        whose replica left the image (topic deleted, re-created under a new id, reassigned away) is deleted; a
        replica the image still places here without a log of its id (re-created topic, a failed dir) goes
        through `_apply_topics` as a change of its topic would. Returns how many became leaders and followers
        (the caller logs the sum)."""
        image = self._metadata.image
        led = followed = 0
        redo: set[str] = set()
        for new in batch:
            key = TopicPartition(new.topic, new.partition)
            log_ = created.get(key)
            topic, assignment = image.topics.get(new.topic), image.partition(new.topic, new.partition)
            here = topic is not None and assignment is not None and self.node_id in assignment.replicas
            if log_ is not None and not (here and topic.uuid == new.topic_id):  # type: ignore[union-attr]
                self._log_manager.delete_log(new.topic, new.partition)
                log_ = None
            if not here or key in self._partitions:
                continue
            if log_ is None:
                redo.add(new.topic)
                continue
            partition = self._partitions[key] = Partition(new.topic, new.partition, self.node_id, log_, self,
                                                          self.topic_metrics.topic(new.topic))
            if assignment.leader_id == self.node_id:  # type: ignore[union-attr]
                led += self._become_leader(partition, assignment)  # type: ignore[arg-type]
            else:
                followed += self._become_follower(partition, assignment,  # type: ignore[arg-type]
                                                  image.broker(assignment.leader_id))  # type: ignore[union-attr]
        if redo:
            roles = self._apply_topics(image, {name: len(image.topics[name].partitions) for name in sorted(redo)})
            return led + roles[0], followed + roles[1]  # `_apply_topics` stopped the idle fetchers, told the listeners
        self._stop_idle_fetchers()
        for listener in self._role_listeners:
            listener()
        return led, followed

    def _become_leader(self, partition: Partition, assignment: PartitionAssignment) -> bool:
        """True if this is a new leadership (one line per partition at DEBUG; `_apply` sums them up at INFO:
        a failover makes a broker leader of thousands at once)."""
        was_leader, old_epoch = partition.is_leader, partition.leader_epoch
        self._remove_from_fetchers(partition.key)
        self.fetch_sessions.mark_changed(partition.key)  # a new epoch or ISR: its followers' sessions look again
        if not partition.make_leader(assignment, self._clock.monotonic_ms()):
            return False
        log.debug("%s-%d: leader at epoch %d (ISR %s, LEO %d, HW %d)", partition.topic, partition.index,
                  partition.leader_epoch, list(partition.isr), partition.log_end_offset, partition.high_watermark)
        if was_leader and old_epoch != partition.leader_epoch:
            self.produce_purgatory.abort(partition.key)
        return True

    def _become_follower(self, partition: Partition, assignment: PartitionAssignment,
                         leader: BrokerEndpoint | None) -> bool:
        """True if the partition now fetches from a new leader (at DEBUG per partition, as `_become_leader`)."""
        was_leader = partition.is_leader
        changed = partition.make_follower(assignment)
        if was_leader:
            self.produce_purgatory.abort(partition.key)
            self.fetch_purgatory.notify(partition.key)
            self.fetch_sessions.mark_changed(partition.key)
        fetcher = self._fetchers.get(leader.node_id) if leader is not None else None
        if fetcher is not None and leader is not None and (fetcher.source.host, fetcher.source.port) != (
                leader.host, leader.port):
            # the leader's broker restarted on another address: a new fetcher, everyone re-truncates
            self._fetchers.pop(leader.node_id)
            asyncio.get_running_loop().create_task(fetcher.stop())
            fetcher = None
            changed = True
        if not changed and (leader is None or partition.key in self._fetchers.get(leader.node_id, ())):
            return False
        self._remove_from_fetchers(partition.key)
        if leader is None or assignment.leader_id < 0:
            log.debug("%s-%d: no leader (epoch %d); not fetching", partition.topic, partition.index,
                      assignment.leader_epoch)
            self._leaderless.append(partition.key)  # summed up at INFO by `_log_roles`
            return False
        if fetcher is None:
            fetcher = self._fetchers[leader.node_id] = ReplicaFetcher(leader, self.node_id, self.config,
                                                                      quota=self.follower_quota)
            fetcher.start()
        log.debug("%s-%d: follower of %d at epoch %d (LEO %d)", partition.topic, partition.index,
                  leader.node_id, partition.leader_epoch, partition.log_end_offset)
        fetcher.add(partition)
        return True

    def _remove_from_fetchers(self, key: TopicPartition) -> None:
        for fetcher in self._fetchers.values():
            fetcher.remove(key)

    def _stop_idle_fetchers(self) -> None:
        for broker_id, fetcher in list(self._fetchers.items()):
            if not len(fetcher):
                del self._fetchers[broker_id]
                asyncio.get_running_loop().create_task(fetcher.stop())

    def _drop(self, key: TopicPartition, delete_log: bool) -> None:
        partition = self._partitions.pop(key, None)
        if partition is not None:
            partition.stop()  # before the purgatory wakes its waiters: they answer NOT_LEADER_OR_FOLLOWER
        self._remove_from_fetchers(key)
        self.produce_purgatory.abort(key)
        self.fetch_purgatory.notify(key)
        self.fetch_sessions.mark_changed(key)
        if delete_log:
            self._log_manager.delete_log(*key)
