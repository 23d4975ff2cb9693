"""`BrokerSample`: everything the broker reports at one instant, read from the running broker.

Counters (cumulative since `started_ms`) come from `counters`; gauges are computed from the replica
manager's partitions, their logs and the metadata image at `take()` time. Prometheus scrapes and the
`__strom_metrics` publisher render the same sample, so both always agree.

Gauge definitions (Kafka's): under-replicated = partitions led here whose ISR is smaller than their replica
set; under/at min ISR = led here with ISR below / equal to `min.insync.replicas`; offline replicas =
replicas here whose log dir is offline; active controller = 1 on the broker the image names controller;
offline partitions (reported by the controller only, else 0) = partitions without a live leader.
Event loop only (`take` reads the replica manager's state without awaiting).
"""

import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from brokerd.counters import COUNTER_NAMES, RequestMetrics
from brokerd.metadata.store import MetadataStore
from brokerd.replication.replica_manager import ReplicaManager
from brokerd.storage import LogManager

LATENCY_WINDOW_S = 300.0
"""Request-latency quantiles describe the last five minutes (Kafka's reservoirs are similarly recent)."""


@dataclass(frozen=True, slots=True)
class PartitionSample:
    topic: str
    partition: int
    size_bytes: int
    log_start_offset: int
    log_end_offset: int
    log_dir: str
    leader: bool
    """This broker leads the partition."""
    in_sync_replicas: int
    replicas: int


@dataclass(frozen=True, slots=True)
class LogDirSample:
    path: str
    online: bool
    size_bytes: int
    """Bytes of the partition logs in this dir."""
    total_bytes: int
    """Capacity of the file system holding the dir (0 when offline)."""
    free_bytes: int
    """Bytes still available to the broker on that file system."""


@dataclass(frozen=True, slots=True)
class ApiLatency:
    requests: int
    """Requests answered since start."""
    requests_by_version: dict[int, int]
    failures: int
    latency_sum_s: float
    bucket_counts: tuple[int, ...]
    """Cumulative histogram over `LATENCY_BUCKETS_S` (+ the open bucket) since start."""
    recent_bucket_counts: tuple[int, ...]
    """The same over the last `LATENCY_WINDOW_S` (for quantiles)."""


@dataclass(frozen=True, slots=True)
class BrokerSample:
    broker_id: int
    cluster_id: str
    started_ms: int
    """When this broker process started (ms since epoch): every counter was 0 then."""
    ts_ms: int
    totals: dict[str, int]
    """All-topics counters (`COUNTER_NAMES`), including topics deleted since start."""
    topics: dict[str, dict[str, int]]
    """Per-topic counters of the topics with replicas (or traffic) on this broker."""
    requests: dict[str, ApiLatency]
    partitions: list[PartitionSample]
    log_dirs: list[LogDirSample]
    partition_count: int
    leader_count: int
    under_replicated: int
    under_min_isr: int
    at_min_isr: int
    offline_replicas: int
    connections: int
    isr_shrinks: int
    isr_expands: int
    active_controller: int
    offline_partitions: int
    global_topics: int
    global_partitions: int


def disk_usage(path: str) -> tuple[int, int]:
    """(total, free-to-us) bytes of the file system holding `path`; (0, 0) when it cannot be read."""
    try:
        stats = os.statvfs(path)
    except OSError:
        return 0, 0
    return stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize


class Sampler:
    """Takes `BrokerSample`s; `tick()` (every publisher round) also advances the latency window."""

    def __init__(self, node_id: int, replicas: ReplicaManager, log_manager: LogManager, metadata: MetadataStore,
                 requests: RequestMetrics, connection_count: Callable[[], int],
                 clock_ms: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        self.node_id = node_id
        self._replicas = replicas
        self._log_manager = log_manager
        self._metadata = metadata
        self._requests = requests
        self._connection_count = connection_count
        self._clock_ms = clock_ms
        self.started_ms = clock_ms()
        self._latency_marks: deque[tuple[float, dict[str, tuple[int, ...]]]] = deque()

    def tick(self) -> None:
        """Remember the latency histograms now, forgetting marks older than the window."""
        now = time.monotonic()
        self._latency_marks.append((now, {api: tuple(s.bucket_counts) for api, s in self._requests.apis.items()}))
        while len(self._latency_marks) > 1 and now - self._latency_marks[1][0] >= LATENCY_WINDOW_S:
            self._latency_marks.popleft()

    def _recent(self, api: str, counts: list[int]) -> tuple[int, ...]:
        if not self._latency_marks:
            return tuple(counts)
        base = self._latency_marks[0][1].get(api)
        return tuple(counts) if base is None else tuple(c - b for c, b in zip(counts, base, strict=True))

    def take(self) -> BrokerSample:
        image = self._metadata.image
        replicas = self._replicas
        partitions: list[PartitionSample] = []
        dir_sizes: dict[str, int] = {}
        leaders = under_replicated = under_min_isr = at_min_isr = offline = 0
        for partition in replicas.partitions():
            log = partition.log
            log_dir = str(log.log_dir.path)
            if not log.log_dir.online:
                offline += 1
                continue
            size = log.size_in_bytes()
            dir_sizes[log_dir] = dir_sizes.get(log_dir, 0) + size
            partitions.append(PartitionSample(partition.topic, partition.index, size, log.log_start_offset,
                                              log.log_end_offset, log_dir, partition.is_leader,
                                              len(partition.isr), len(partition.replicas)))
            if partition.is_leader:
                leaders += 1
                isr = len(partition.isr)
                under_replicated += isr < len(partition.replicas)
                min_isr = replicas.min_insync_replicas(partition.topic)
                under_min_isr += isr < min_isr
                at_min_isr += isr == min_isr
        log_dirs = []
        for directory in self._log_manager.log_dirs:
            path = str(directory.path)
            total, free = disk_usage(path) if directory.online else (0, 0)
            log_dirs.append(LogDirSample(path, directory.online, dir_sizes.get(path, 0), total, free))
        controller = image.controller_id == self.node_id
        live = {b.node_id for b in image.brokers if not b.fenced}
        offline_partitions = sum(1 for topic in image.topics.values() for p in topic.partitions
                                 if p.leader_id not in live) if controller else 0
        requests = {}
        for api, stats in self._requests.apis.items():
            counts = list(stats.bucket_counts)
            requests[api] = ApiLatency(sum(counts), dict(stats.by_version), stats.failures, stats.latency_sum_s,
                                       tuple(counts), self._recent(api, counts))
        topic_metrics = replicas.topic_metrics
        return BrokerSample(
            broker_id=self.node_id, cluster_id=image.cluster_id, started_ms=self.started_ms, ts_ms=self._clock_ms(),
            totals=dict(zip(COUNTER_NAMES, topic_metrics.totals().values(), strict=True)),
            topics={name: dict(zip(COUNTER_NAMES, c.values(), strict=True))
                    for name, c in topic_metrics.topics().items()},
            requests=requests, partitions=partitions, log_dirs=log_dirs,
            partition_count=len(partitions) + offline, leader_count=leaders, under_replicated=under_replicated,
            under_min_isr=under_min_isr, at_min_isr=at_min_isr, offline_replicas=offline,
            connections=self._connection_count(), isr_shrinks=replicas.isr.shrinks,
            isr_expands=replicas.isr.expands, active_controller=int(controller),
            offline_partitions=offline_partitions, global_topics=len(image.topics),
            global_partitions=sum(len(t.partitions) for t in image.topics.values()),
        )

