"""`ReplicaManager`: every partition replica on this broker, kept in the role the metadata image gives it.

On every image (and at start) each partition this broker is a replica of gets a `Partition` (its log is
opened or created) and becomes leader or follower at the image's leader epoch: a new leader stops
fetching and wakes its acks=all waiters; a new follower joins the `ReplicaFetcher` of its leader's
broker (truncating first). Topics that leave the image lose their logs. ISR health is checked every
`ISR_CHECK_INTERVAL_MS`: ISR followers not caught up for `replica.lag.time.max.ms`, or whose broker the
controller fenced, are proposed out; followers that caught up are proposed in as soon as their fetch
shows it (`isr.IsrManager`).

Handlers use `get` (the led partition, or NOT_LEADER_OR_FOLLOWER), `record_follower_fetch` (replica
Fetch), `wait_for_acks` (acks=all through `purgatory.DelayedProduce`) and `waiters` (fetch long polls).
Event loop only.
"""

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from brokerd.clock import Clock, SystemClock
from brokerd.errors import UnknownTopicOrPartitionError
from brokerd.metadata.image import BrokerEndpoint, ClusterImage
from brokerd.metadata.store import MetadataStore
from brokerd.metrics.counters import BrokerTopicMetrics
from brokerd.partition.errors import NotLeaderOrFollowerError
from brokerd.partition.partition import AppendResult, Partition
from brokerd.partition.waiters import AppendWaiters
from brokerd.replication.config import ReplicationConfig
from brokerd.replication.fetcher import ReplicaFetcher
from brokerd.replication.isr import IsrManager
from brokerd.replication.purgatory import DelayedProduce
from brokerd.storage import LogManager
from brokerd.storage.log_dir import LogDirectory
from kafkaspec import topic_config

log = logging.getLogger(__name__)

ISR_CHECK_INTERVAL_MS = 250
TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class PendingAck:
    """An acks=all append waiting for the high watermark to pass `result.last_offset`."""

    partition: Partition
    result: AppendResult
    min_insync_replicas: int


class ReplicaManager:
    def __init__(self, log_manager: LogManager, metadata: MetadataStore, node_id: int,
                 config: ReplicationConfig | None = None, clock: Clock | None = None,
                 broker_properties: Mapping[str, str] | None = None, metrics_enabled: bool = True) -> None:
        self._log_manager = log_manager
        self._metadata = metadata
        self.node_id = node_id
        self.config = config or ReplicationConfig()
        self._clock = clock or SystemClock()
        self._partitions: dict[TopicPartition, Partition] = {}
        self._topic_ids: dict[str, str] = {}
        self._fetchers: dict[int, ReplicaFetcher] = {}
        self._fenced: frozenset[int] = frozenset()
        self._min_isr: dict[str, int] = {}
        self._topic_configs: dict[str, dict[str, str]] = {}
        self._defaults = topic_config.broker_defaults(broker_properties or {})
        self.topic_metrics = BrokerTopicMetrics(enabled=metrics_enabled)
        """Per-topic byte/message/request counters; each Partition bumps its topic's."""
        self.waiters = AppendWaiters()
        self.purgatory = DelayedProduce()
        self.isr = IsrManager(metadata)
        self._isr_task: asyncio.Task | None = None
        self._started = False
        self._role_listeners: list[Callable[[], None]] = []
        metadata.add_listener(self._on_metadata_change)

    # --- lifecycle -------------------------------------------------------------------------------------

    def start(self) -> None:
        self._started = True
        image = self._metadata.image
        # Topics deleted while this broker was down: their logs go before anything serves them.
        self._log_manager.delete_stray_logs(image.cluster_id, self.node_id,
                                            {name: topic.uuid for name, topic in image.topics.items()})
        self._apply(image)
        self._isr_task = asyncio.get_running_loop().create_task(self._isr_loop(), name="isr-check")

    async def stop(self) -> None:
        self._started = False
        if self._isr_task is not None:
            self._isr_task.cancel()
            await asyncio.gather(self._isr_task, return_exceptions=True)
        for fetcher in list(self._fetchers.values()):
            await fetcher.stop()
        self._fetchers.clear()
        await self.isr.stop()
        for key in list(self._partitions):
            self.purgatory.abort(key)

    # --- lookups ---------------------------------------------------------------------------------------

    def get(self, topic: str, index: int) -> Partition:
        """The partition if this broker leads it; raises UnknownTopicOrPartitionError or
        NotLeaderOrFollowerError."""
        partition = self._partitions.get((topic, index))
        if partition is not None and partition.is_leader:
            return partition
        if self._metadata.image.partition(topic, index) is None:
            raise UnknownTopicOrPartitionError(f"{topic}-{index} does not exist")
        raise NotLeaderOrFollowerError(f"broker {self.node_id} does not lead {topic}-{index}")

    def get_replica(self, topic: str, index: int) -> Partition | None:
        return self._partitions.get((topic, index))

    def partitions(self) -> list[Partition]:
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
        self.waiters.notify(partition.key)

    def on_high_watermark(self, partition: Partition) -> None:
        self.waiters.notify(partition.key)
        self.purgatory.complete(partition.key, partition.high_watermark)

    # --- leader side of replication --------------------------------------------------------------------

    def record_follower_fetch(self, partition: Partition, replica_id: int, fetch_offset: int) -> None:
        """A replica Fetch from `replica_id` at `fetch_offset` (its LEO): may move the HW or expand the ISR."""
        partition.update_follower_fetch(replica_id, fetch_offset, self._clock.monotonic_ms())
        if partition.isr_expansion_candidate(replica_id, self._fenced):
            self.isr.propose(partition, partition.isr + (replica_id,))

    async def wait_for_acks(self, pending: list[PendingAck], timeout_ms: int) -> list[str | None]:
        """acks=all: per entry, None once the HW passed its last offset with the ISR at least
        min.insync.replicas, else the Kafka error name (NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        NOT_LEADER_OR_FOLLOWER when leadership moved, REQUEST_TIMED_OUT at the deadline)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout_ms, 0) / 1000
        outcomes: list[str | None] = []
        for entry in pending:
            partition, result = entry.partition, entry.result
            while True:
                if not partition.is_leader or partition.leader_epoch != result.leader_epoch:
                    outcome: str | None = "NOT_LEADER_OR_FOLLOWER"
                    break
                if partition.high_watermark > result.last_offset:
                    outcome = ("NOT_ENOUGH_REPLICAS_AFTER_APPEND"
                               if len(partition.isr) < entry.min_insync_replicas else None)
                    break
                remaining = deadline - loop.time()
                if remaining <= 0:
                    outcome = "REQUEST_TIMED_OUT"
                    break
                future = self.purgatory.watch(partition.key, result.last_offset + 1)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(remaining):
                        await future
            outcomes.append(outcome)
        return outcomes

    async def _isr_loop(self) -> None:
        while True:
            await asyncio.sleep(ISR_CHECK_INTERVAL_MS / 1000)
            try:
                self.maybe_shrink_isr()
            except Exception:  # noqa: BLE001 - the check must keep running
                log.exception("ISR check failed")

    def maybe_shrink_isr(self) -> None:
        now = self._clock.monotonic_ms()
        for partition in self._partitions.values():
            if not partition.is_leader or partition.pending_isr is not None:
                continue
            lagging = partition.out_of_sync_replicas(now, self.config.replica_lag_time_max_ms, self._fenced)
            if lagging:
                shrunk = tuple(r for r in partition.isr if r not in lagging)
                log.info("%s-%d: shrinking ISR %s -> %s (lagging or fenced: %s)", partition.topic,
                         partition.index, list(partition.isr), list(shrunk), lagging)
                self.isr.propose(partition, shrunk)

    # --- metadata --------------------------------------------------------------------------------------

    def _on_metadata_change(self, old: ClusterImage, new: ClusterImage) -> None:
        if self._started:
            self._apply(new)

    def _apply(self, image: ClusterImage) -> None:
        self._fenced = frozenset(b.node_id for b in image.brokers if b.fenced)
        for key in list(self._partitions):
            topic = image.topics.get(key[0])
            if topic is None or topic.topic_id != self._topic_ids.get(key[0]):
                self._drop(key, delete_log=True)
        for name, topic in image.topics.items():
            if name in self._topic_configs and self._topic_configs[name] != dict(topic.configs):
                self._log_manager.update_topic_config(name, dict(topic.configs))
            self._topic_configs[name] = dict(topic.configs)
            self._topic_ids[name] = topic.topic_id
            try:
                self._min_isr[name] = int(topic_config.resolve(topic.configs, self._defaults)["min.insync.replicas"])
            except (topic_config.InvalidConfigError, ValueError, KeyError):
                self._min_isr[name] = 1
            for assignment in topic.partitions:
                key = (name, assignment.partition)
                if self.node_id not in assignment.replicas:  # moved away: stop, keep the data
                    if key in self._partitions:
                        self._drop(key, delete_log=False)
                    continue
                partition = self._partitions.get(key)
                if partition is None:
                    log_ = self._log_manager.get_or_create_log(name, assignment.partition, dict(topic.configs),
                                                               topic.uuid)
                    partition = self._partitions[key] = Partition(name, assignment.partition, self.node_id, log_,
                                                                  self, self.topic_metrics.topic(name))
                if assignment.leader_id == self.node_id:
                    self._become_leader(partition, assignment)
                else:
                    self._become_follower(partition, assignment, image.broker(assignment.leader_id))
        for topic_name in [t for t in self._topic_ids if t not in image.topics]:
            del self._topic_ids[topic_name]
            self.topic_metrics.retire(topic_name)
            self._topic_configs.pop(topic_name, None)
            self._min_isr.pop(topic_name, None)
        self._stop_idle_fetchers()
        for listener in self._role_listeners:
            listener()

    def _become_leader(self, partition: Partition, assignment) -> None:
        was_leader, old_epoch = partition.is_leader, partition.leader_epoch
        self._remove_from_fetchers(partition.key)
        if partition.make_leader(assignment, self._clock.monotonic_ms()):
            log.info("%s-%d: leader at epoch %d (ISR %s, LEO %d, HW %d)", partition.topic, partition.index,
                     partition.leader_epoch, list(partition.isr), partition.log_end_offset,
                     partition.high_watermark)
            if was_leader and old_epoch != partition.leader_epoch:
                self.purgatory.abort(partition.key)

    def _become_follower(self, partition: Partition, assignment, leader: BrokerEndpoint | None) -> None:
        was_leader = partition.is_leader
        changed = partition.make_follower(assignment)
        if was_leader:
            self.purgatory.abort(partition.key)
            self.waiters.notify(partition.key)
        fetcher = self._fetchers.get(leader.node_id) if leader is not None else None
        if fetcher is not None and leader is not None and (fetcher.source.host, fetcher.source.port) != (
                leader.host, leader.port):
            # the leader's broker restarted on another address: a new fetcher, everyone re-truncates
            self._fetchers.pop(leader.node_id)
            asyncio.get_running_loop().create_task(fetcher.stop())
            fetcher = None
            changed = True
        if not changed and (leader is None or partition.key in self._fetchers.get(leader.node_id, ())):
            return
        self._remove_from_fetchers(partition.key)
        if leader is None or assignment.leader_id < 0:
            log.info("%s-%d: no leader (epoch %d); not fetching", partition.topic, partition.index,
                     assignment.leader_epoch)
            return
        if fetcher is None:
            fetcher = self._fetchers[leader.node_id] = ReplicaFetcher(leader, self.node_id, self.config)
            fetcher.start()
        log.info("%s-%d: follower of %d at epoch %d (LEO %d)", partition.topic, partition.index,
                 leader.node_id, partition.leader_epoch, partition.log_end_offset)
        fetcher.add(partition)

    def _remove_from_fetchers(self, key: TopicPartition) -> None:
        for fetcher in self._fetchers.values():
            fetcher.remove(key)

    def _stop_idle_fetchers(self) -> None:
        for broker_id, fetcher in list(self._fetchers.items()):
            if not len(fetcher):
                del self._fetchers[broker_id]
                asyncio.get_running_loop().create_task(fetcher.stop())

    def _drop(self, key: TopicPartition, delete_log: bool) -> None:
        self._partitions.pop(key, None)
        self._remove_from_fetchers(key)
        self.purgatory.abort(key)
        self.waiters.notify(key)
        if delete_log:
            self._log_manager.delete_log(*key)

    def fenced_brokers(self) -> Iterable[int]:
        return self._fenced
