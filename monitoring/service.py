"""The lag monitor's composition root: the whole pipeline in one process (Burrow's `core/burrow.go`).

Lifecycle, as Burrow's: `LagMonitor(config, …)` builds everything without I/O (bad settings raise
`ConfigError` there); `start()` connects and starts the receivers before the senders — the saved state
and incidents are restored, storage gets its first heads, the samples topic exists, and only then does the
collector start sending commits and the scheduler start evaluating; `stop()` stops in reverse (scheduler,
then collector), saves the state and flushes the samples.

Threads: the collector thread consumes `__consumer_offsets` into storage; the scheduler thread refreshes
topics (`topic-refresh`) and heads (`offset-refresh`), evaluates every group (`evaluation-interval`),
writes lag samples, decides announcements and saves the state (`state-save-interval`); the record-time
thread fetches the records at the committed offsets each round asks for. Storage is only touched under
one lock; network calls happen outside it.

An evaluation round (`evaluate`): expire groups and topics; take every group's partition inputs; look up
the append time of the record at each lagging committed offset (cached answers; the record-time thread
fetches the missing ones for the next round); evaluate each partition (Burrow's rules + Strom's), mark
threshold breaches, aggregate per group; publish the results; write the samples; decide and persist
incidents; hand announcements to the sink.
"""

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence

from monitoring.collector.broker_offsets import BrokerOffsetsReader
from monitoring.collector.offsets_topic import OffsetsTopicReader, store_events
from monitoring.collector.record_times import Position, RecordTimeReader
from monitoring.config import OFFSETS_TOPIC, MonitorConfig, Threshold
from monitoring.evaluator import evaluate_partition, group_result, not_found
from monitoring.history import LagSampleWriter
from monitoring.model import GroupResult, PartitionInput
from monitoring.notifier.incidents import EVERYONE, Incident, Notification, NotifyPolicy, Silence, decide
from monitoring.notifier.sinks import LoggingSink, NotificationSink
from monitoring.persistence import MemoryStore, MonitorStore, decode_state, encode_state
from monitoring.prometheus import MetricsSnapshot, MonitorStats
from monitoring.storage import NameFilter, OffsetStorage
from monitoring.thresholds import mark_breaches

logger = logging.getLogger(__name__)


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class LagMonitor:
    def __init__(self, config: MonitorConfig, store: MonitorStore | None = None, sink: NotificationSink | None = None,
                 policies: Callable[[], Mapping[str, NotifyPolicy]] = lambda: {EVERYONE: NotifyPolicy()},
                 silences: Callable[[], Sequence[Silence]] = tuple,
                 thresholds: Callable[[], Sequence[Threshold]] | None = None,
                 clock_ms: Callable[[], int] = wall_clock_ms) -> None:
        """`policies` (each subscriber's notification rules, by subscriber key), `silences` and `thresholds`
        are asked once per evaluation round (so rules an operator edits apply from the next round);
        `thresholds` defaults to the configuration's."""
        self.config = config
        self.store = store if store is not None else MemoryStore()
        self.sink = sink if sink is not None else LoggingSink()
        self.policies = policies
        self.silences = silences
        self.thresholds = thresholds if thresholds is not None else (lambda: config.thresholds)
        self.clock_ms = clock_ms
        self.storage = OffsetStorage(
            intervals=config.intervals, min_distance_ms=int(config.min_distance_s * 1000),
            expire_group_ms=int(config.expire_group_s * 1000),
            groups=NameFilter(config.group_allowlist, config.group_denylist),
            topics=NameFilter(config.topic_allowlist, config.topic_denylist))
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._results: dict[str, GroupResult] = {}
        self._incidents: dict[str, Incident] = {}
        self._partition_counts: dict[str, int] = {}
        self._offsets_topic_heads: dict[int, int] = {}
        self._stats = MonitorStats()
        self._commits_stored = 0
        self._offsets_reader: OffsetsTopicReader | None = None
        self._broker_reader: BrokerOffsetsReader | None = None
        self._record_times: RecordTimeReader | None = None
        self._samples: LagSampleWriter | None = None
        self._saved_positions: dict[int, int] = {}
        self._wanted_positions: set[Position] = set()
        self._lookups_due = threading.Event()
        self._record_times_seconds = 0.0

    #
    # Lifecycle
    #

    def start(self) -> None:
        """Connect and start; returns once storage knows the topics and their heads."""
        config = self.config
        self._restore()
        self._broker_reader = BrokerOffsetsReader(config.bootstrap_servers, config.client_config)
        self._refresh_topics()
        self._refresh_heads()
        if config.lag_seconds:
            self._record_times = RecordTimeReader(config.bootstrap_servers, config.client_config)
        if config.samples_topic:
            self._samples = LagSampleWriter(config.bootstrap_servers, config.samples_topic,
                                            config.samples_retention_ms, config.samples_partitions,
                                            config.client_config)
            self._samples.ensure_topic()
        self._offsets_reader = OffsetsTopicReader(config.bootstrap_servers, config.client_config)
        self._assign_offsets_topic()
        self._stopping.clear()
        self._threads = [threading.Thread(target=self._collect_loop, name="lag-collector", daemon=True),
                         threading.Thread(target=self._schedule_loop, name="lag-scheduler", daemon=True)]
        if self._record_times is not None:
            self._threads.append(threading.Thread(target=self._record_time_loop, name="lag-record-times",
                                                  daemon=True))
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        """Stop the scheduler and the collector, save the state, flush samples, close the clients."""
        self._stopping.set()
        self._lookups_due.set()
        for thread in reversed(self._threads):
            thread.join()
        self._threads = []
        if self._offsets_reader is not None:
            self.save_state()
            self._offsets_reader.close()
        if self._samples is not None:
            self._samples.flush()
        if self._record_times is not None:
            self._record_times.close()
        self._offsets_reader = self._record_times = self._samples = self._broker_reader = None

    def _restore(self) -> None:
        blob = self.store.load_state()
        if blob is not None:
            try:
                snapshot, positions = decode_state(blob)
            except ValueError as exc:
                logger.warning("starting without the saved state: %s", exc)
            else:
                with self._lock:
                    self.storage.restore(snapshot)
                self._saved_positions = positions
        self._incidents = {i.group: i for i in self.store.open_incidents() if i.cluster == self.config.cluster}

    def save_state(self) -> None:
        """Persist storage and the collector's positions together (one consistent snapshot)."""
        if self._offsets_reader is None:
            return
        with self._lock:
            blob = encode_state(self.storage.to_snapshot(), self._offsets_reader.positions)
        self.store.save_state(blob)

    #
    # Collector and scheduler
    #

    def _collect_loop(self) -> None:
        reader = self._offsets_reader
        assert reader is not None
        while not self._stopping.is_set():
            events = reader.poll()
            if events:
                now_ms = self.clock_ms()
                with self._lock:
                    self._commits_stored += store_events(self.storage, events, now_ms)

    def _schedule_loop(self) -> None:
        config = self.config
        periods = {self._refresh_topics: config.topic_refresh_s, self._refresh_heads: config.offset_refresh_s,
                   self.evaluate: config.evaluation_interval_ms / 1000, self.save_state: config.state_save_interval_s}
        now = time.monotonic()
        due = {task: now + period for task, period in periods.items()}
        while not self._stopping.wait(max(0.0, min(due.values()) - time.monotonic())):
            for task, when in list(due.items()):
                if when <= time.monotonic() and not self._stopping.is_set():
                    try:
                        task()
                    except Exception:
                        logger.exception("%s failed", task.__name__)
                    due[task] = time.monotonic() + periods[task]

    def _record_time_loop(self) -> None:
        """Fetch the record times the latest round wanted (at most `lag-seconds-lookups` partitions per
        pass), one pass per round: the rounds never wait for the broker's fetches."""
        reader = self._record_times
        assert reader is not None
        while True:
            self._lookups_due.wait()
            self._lookups_due.clear()
            if self._stopping.is_set():
                return
            started = time.monotonic()
            try:
                reader.append_times(self._wanted_positions, self.config.lag_seconds_lookups)
            except Exception:
                logger.exception("reading record times failed")
            self._record_times_seconds = time.monotonic() - started

    def _refresh_topics(self) -> None:
        assert self._broker_reader is not None
        counts = self._broker_reader.partition_counts()
        self._partition_counts = counts
        with self._lock:
            gone = self.storage.retain_topics(counts)
        if gone:
            logger.info("topics deleted: %s", ", ".join(sorted(gone)))
        self._assign_offsets_topic()

    def _assign_offsets_topic(self) -> None:
        count = self._partition_counts.get(OFFSETS_TOPIC)
        if count and self._offsets_reader is not None:
            self._offsets_reader.assign(count, self._saved_positions)

    def _refresh_heads(self) -> None:
        assert self._broker_reader is not None
        heads = self._broker_reader.heads(self._partition_counts)
        offsets_topic = heads.get(OFFSETS_TOPIC, [])
        self._offsets_topic_heads = {p: h for p, h in enumerate(offsets_topic) if h is not None}
        with self._lock:
            for topic, values in heads.items():
                self.storage.add_heads(topic, values)

    #
    # Evaluation
    #

    def evaluate(self, now_ms: int | None = None) -> dict[str, GroupResult]:
        """One round over every group (see the module docstring); returns and publishes the results."""
        started = time.monotonic()
        now_ms = self.clock_ms() if now_ms is None else now_ms
        with self._lock:
            retired, _ = self.storage.expire(now_ms)
            inputs = {group: self.storage.partition_inputs(group) or [] for group in self.storage.groups()}
        if retired:
            logger.info("groups retired after expire-group: %s", ", ".join(sorted(retired)))
        times = self._append_times(inputs.values())
        config = self.config
        thresholds = tuple(self.thresholds())
        grace_ms = config.min_stop_grace_ms
        results = {}
        partitions = unknown_seconds = 0
        for group, parts in inputs.items():
            if self._stopping.is_set():
                return self._results  # stopping: a partial round is not published
            evaluated = [evaluate_partition(_with_lag_seconds(p, times, now_ms) if times is not None else p, now_ms,
                                            config.allowed_lag, config.minimum_complete, grace_ms) for p in parts]
            partitions += len(evaluated)
            unknown_seconds += sum(1 for p in evaluated if p.lag_seconds is None and p.end is not None)
            results[group] = group_result(config.cluster, group, mark_breaches(thresholds, group, evaluated),
                                          now_ms)
        self._results = results
        if self._samples is not None:
            self._samples.write(results.values())
        self._notify(results, now_ms)
        self._stats = MonitorStats(
            offsets_topic_lag=self._offsets_reader.lag(self._offsets_topic_heads) if self._offsets_reader else 0,
            commits_stored=self._commits_stored,
            records_undecodable=self._offsets_reader.undecodable if self._offsets_reader else 0,
            evaluation_seconds=time.monotonic() - started, record_times_seconds=self._record_times_seconds,
            evaluated_at_seconds=now_ms / 1000,
            groups=len(results), partitions=partitions, lag_seconds_unknown=unknown_seconds)
        return results

    def _append_times(self, inputs: Sequence[Sequence[PartitionInput]]) -> Mapping[Position, int | None] | None:
        """The known append times of the records at every lagging committed offset (None when lag seconds
        are off); the record-time thread is asked to fetch the rest."""
        if self._record_times is None:
            return None
        wanted = {(p.topic, p.partition, p.commits[-1].offset) for parts in inputs for p in parts
                  if p.commits and p.heads and p.commits[-1].offset < p.heads[-1]}
        self._wanted_positions = wanted
        self._lookups_due.set()
        return self._record_times.known(wanted)

    def _notify(self, results: Mapping[str, GroupResult], now_ms: int) -> None:
        silences, policies = self.silences(), self.policies()
        announcements: list[Notification] = []
        saved: list[Incident] = []
        closed: list[tuple[Incident, int]] = []
        for group in set(results) | set(self._incidents):
            result = results.get(group) or not_found(self.config.cluster, group, now_ms)
            previous = self._incidents.get(group)
            decision = decide(result, previous, now_ms, policies, silences)
            if decision.incident is None:
                if previous is not None:
                    del self._incidents[group]
                    closed.append((previous, now_ms))
            elif decision.incident != previous:
                self._incidents[group] = decision.incident
                saved.append(decision.incident)
            announcements.extend(decision.notifications)
        if saved or closed:
            self.store.update_incidents(saved, closed)
        if announcements:
            self.sink.deliver(announcements)

    #
    # Reads (the Burrow API, Prometheus, the console)
    #

    def results(self) -> Mapping[str, GroupResult]:
        """The latest round's result per group."""
        return self._results

    @property
    def ready(self) -> bool:
        """Whether a round has been published since start (Burrow's `/burrow/admin/ready`)."""
        return self._stats.evaluated_at_seconds > 0

    def group_result(self, group: str) -> GroupResult:
        return self._results.get(group) or not_found(self.config.cluster, group, self.clock_ms())

    def open_incidents(self) -> list[Incident]:
        return list(self._incidents.values())

    def groups(self) -> list[str]:
        with self._lock:
            return self.storage.groups()

    def topics(self) -> list[str]:
        with self._lock:
            return self.storage.topics()

    def topic_heads(self, topic: str) -> list[int] | None:
        with self._lock:
            return self.storage.topic_heads(topic)

    def consumers_of(self, topic: str) -> list[str]:
        with self._lock:
            return self.storage.consumers_of(topic)

    def partition_inputs(self, group: str) -> list[PartitionInput] | None:
        """The stored windows of a group (Burrow's consumer detail), None for an unknown group."""
        with self._lock:
            return self.storage.partition_inputs(group)

    def delete_group(self, group: str, topic: str | None = None) -> None:
        """Burrow's DELETE of a group (or of one of its topics): forgotten until it commits again."""
        with self._lock:
            if topic is None:
                self.storage.delete_group(group)
            else:
                self.storage.delete_group_topic(group, topic)

    def stats(self) -> MonitorStats:
        """The latest round's figures, with the collector's two live ones (commits stored, backlog on
        `__consumer_offsets` against the latest heads) as of now rather than as of that round."""
        reader = self._offsets_reader
        return dataclasses.replace(self._stats, commits_stored=self._commits_stored,
                                   offsets_topic_lag=reader.lag(self._offsets_topic_heads) if reader else 0)

    def metrics_snapshot(self) -> MetricsSnapshot:
        with self._lock:
            heads = {topic: self.storage.topic_heads(topic) or [] for topic in self.storage.topics()}
        return MetricsSnapshot(self.config.cluster, list(self._results.values()), heads)


def _with_lag_seconds(partition: PartitionInput, times: Mapping[Position, int | None], now_ms: int) -> PartitionInput:
    """The input with `lag_seconds`: 0.0 when caught up (committed offset at or past the head, or no
    record after it), the age of the record at the committed offset, or unknown (None: unchanged)."""
    if not partition.commits or not partition.heads:
        return partition
    committed = partition.commits[-1].offset
    if committed >= partition.heads[-1]:
        return dataclasses.replace(partition, lag_seconds=0.0)
    key = (partition.topic, partition.partition, committed)
    if key not in times:
        return partition
    appended_ms = times[key]
    seconds = 0.0 if appended_ms is None else max(0.0, (now_ms - appended_ms) / 1000)
    return dataclasses.replace(partition, lag_seconds=seconds)
