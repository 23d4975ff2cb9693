"""`LogManager`: every partition log of this broker across `log.dirs`; the entry point of storage.

Owns log creation, lookup and deletion (also of stray logs: topics deleted while the broker was down, or
deleted and re-created under the same name: each log's `partition.metadata` names its topic id),
the per-directory checkpoints (`recovery-point-offset-checkpoint`,
`log-start-offset-checkpoint`, `cleaner-offset-checkpoint`, and `replication-offset-checkpoint`: the high
watermarks, so that a restarted replica serves what it had acknowledged at once instead of nothing until
its followers catch up; see `checkpoints`), the clean-shutdown
marker `.kafka_cleanshutdown`, the shared bounded `FileHandleCache`, and maintenance: retention,
`flush.ms`, flushes after a roll, delayed file deletion and compaction (`LogCleaner`).

Maintenance (`run_maintenance`, a pass every `maintenance_interval_ms`): retention (`Log.delete_old_segments`)
visits every log once per `retention_check_interval_ms` (Kafka's `log.retention.check.interval.ms`, 5 min by
default; the first pass always); flushes (after a roll, `flush.ms`) and delayed file deletions visit only the logs
that asked for them (`LogContext.maintenance_due`), each until `Log.maintenance_pending` says it has nothing
left; the cleaner looks at the compacted logs; the checkpoints are brought up to date every pass from the logs whose
checkpointed offsets changed, were added or removed since the last one (`LogContext.checkpoint_changes`), and only
files whose content changed are written. An idle log thus costs a pass nothing. Durability is unchanged: the
recovery point still moves only by a flush, and a rolled segment is still flushed by the next pass.

Creating logs (`create_logs`, a batch: what one metadata image brings): a created log is durable before it
is returned — its directory, first segment and `partition.metadata` survive a crash from then on, so nothing
is served, fetched or acknowledged for a partition whose log a crash could lose. The fsyncs this takes (the
topic id file and each partition directory, then each log directory once for the whole batch) run on up to
`CREATE_WORKERS` threads at once: a journaling file system commits concurrent fsyncs together, so a batch
costs about one fsync per `CREATE_WORKERS` logs instead of three per log. A crash during creation leaves a
partition directory absent, or present with or without its `partition.metadata` (a `.tmp` one is removed on
load); either way the next image adopts or creates it.

A log lives in the directory chosen at creation (the online one holding the fewest logs). A failing
directory is marked offline by its `LogDirectory` I/O funnel; only that directory's logs fail (with
`KafkaStorageError`), the others carry on.

Lifecycle: `LogManager(...)` does no I/O; `startup()` loads (and after an unclean shutdown, recovers)
every log; `start()` spawns the maintenance thread; `shutdown()` stops it, flushes, writes checkpoints
and the clean-shutdown marker.

Concurrency contract: public methods are called from one thread (the broker's event loop), except that
`create_logs` may run on a worker thread meanwhile, for partitions no other call touches until it returned. The
maintenance thread (`start()`) works through `run_maintenance`, which only uses the logs' thread-safe
maintenance methods; the log map is guarded by a lock.
"""

import logging
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from brokerd.clock import Clock, SystemClock
from brokerd.storage import checkpoints, topic_id_file
from brokerd.storage.cleaner import CHECKPOINT_FILE as CLEANER_CHECKPOINT_FILE
from brokerd.storage.cleaner import LogCleaner
from brokerd.storage.config import LogConfig
from brokerd.storage.errors import KafkaStorageError
from brokerd.storage.file_handles import FileHandleCache
from brokerd.storage.log import CheckpointChanges, Log, LogContext, LogState
from brokerd.storage.log_dir import LogDirectory

logger = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
META_PROPERTIES_FILE = "meta.properties"
RECOVERY_POINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_FILE = "log-start-offset-checkpoint"
HIGH_WATERMARK_FILE = "replication-offset-checkpoint"
_OFFSET_FILES = {RECOVERY_POINT_FILE: "recovery_point", LOG_START_OFFSET_FILE: "log_start_offset",
                 HIGH_WATERMARK_FILE: "high_watermark"}
"""The checkpoints of the logs' own offsets (file name → `Log` attribute), kept up to date from the logs whose offset
changed (`_write_checkpoints`)."""
DELETE_DIR_SUFFIX = "-delete"
CREATE_WORKERS = 32
"""Threads making a batch of new logs durable at once (see "Creating logs")."""
DEFAULT_RETENTION_CHECK_INTERVAL_MS = 300_000
"""`log.retention.check.interval.ms`: Kafka's default, 5 min."""

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class NewLog:
    """A log to create: its partition, and the id of its topic (written to `partition.metadata`) if known."""

    topic: str
    partition: int
    topic_id: uuid.UUID | None = None


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def parse_partition_dir(name: str) -> TopicPartition | None:
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not partition.isdecimal():
        return None
    return topic, int(partition)


class LogManager:
    def __init__(self, log_dirs: Iterable[Path], cluster_defaults: Mapping[str, object] | None = None,
                 clock: Clock | None = None, max_open_files: int = 1024,
                 maintenance_interval_ms: int = 1000,
                 retention_check_interval_ms: int = DEFAULT_RETENTION_CHECK_INTERVAL_MS) -> None:
        self.log_dirs = [LogDirectory(Path(path)) for path in log_dirs]
        if not self.log_dirs:
            raise ValueError("at least one log dir is needed")
        self.cluster_defaults = dict(cluster_defaults or {})
        self.clock = clock or SystemClock()
        self.handles = FileHandleCache(max_open_files)
        self.maintenance_interval_ms = maintenance_interval_ms
        self.retention_check_interval_ms = retention_check_interval_ms
        self._next_retention_check_ms: int | None = None
        """Monotonic ms from which the next pass checks retention (None: the first pass does)."""
        self._due: set[Log] = set()
        """The logs with work for maintenance (`LogContext.maintenance_due`), guarded by `_due_lock`; a log
        leaves it only under its own lock, once `Log.maintenance_pending` is False."""
        self._due_lock = threading.Lock()
        self.cleaner = LogCleaner(self.clock)
        self._logs: dict[TopicPartition, Log] = {}
        self._stored_topic_ids: dict[TopicPartition, uuid.UUID | None] = {}
        """What each log's `partition.metadata` holds, once read or written (so it is read once per log)."""
        self._topic_overrides: dict[str, dict[str, object]] = {}
        self._topic_configs: dict[str, LogConfig] = {}
        """Each topic's resolved config, one object shared by its logs."""
        self._checkpoint_files = {
            id(d): {name: checkpoints.OffsetCheckpointFile(d.path / name) for name in
                    (RECOVERY_POINT_FILE, LOG_START_OFFSET_FILE, HIGH_WATERMARK_FILE, CLEANER_CHECKPOINT_FILE)}
            for d in self.log_dirs}
        """Each log dir's offset checkpoint files, by file name (written by `write_checkpoints`)."""
        self._checkpoint_changes = CheckpointChanges()
        """The logs added, removed, or with a checkpointed offset changed since the last checkpoint pass."""
        self._log_start_listeners: list[Callable[[TopicPartition], None]] = []
        self._lock = threading.Lock()
        self._maintenance_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------------------------

    def startup(self) -> None:
        """Load every log on disk. A directory without the clean-shutdown marker is recovered from its
        recovery-point checkpoint. The marker is removed, so a crash from now on counts as unclean."""
        for log_dir in self.log_dirs:
            try:
                with log_dir.io_guard():
                    self._load_dir(log_dir)
            except KafkaStorageError:
                logger.exception("log dir %s failed to load; its partitions are offline", log_dir.path)

    def _load_dir(self, log_dir: LogDirectory) -> None:
        log_dir.path.mkdir(parents=True, exist_ok=True)
        marker = log_dir.path / CLEAN_SHUTDOWN_FILE
        clean = marker.exists()
        recovery_points = checkpoints.read_offsets(log_dir.path / RECOVERY_POINT_FILE)
        start_offsets = checkpoints.read_offsets(log_dir.path / LOG_START_OFFSET_FILE)
        high_watermarks = checkpoints.read_offsets(log_dir.path / HIGH_WATERMARK_FILE)
        self.cleaner.load_checkpoint(log_dir.path)
        for entry in sorted(os.scandir(log_dir.path), key=lambda e: e.name):
            if not entry.is_dir():
                continue
            child = log_dir.path / entry.name
            if child.name.endswith(DELETE_DIR_SUFFIX):
                shutil.rmtree(child)
                continue
            tp = parse_partition_dir(child.name)
            if tp is None:
                continue
            state = LogState(start_offsets.get(tp, 0), recovery_points.get(tp, 0), clean, high_watermarks.get(tp, 0))
            log = Log.open(child, tp[0], tp[1], self._config_for(tp[0]), self._context(log_dir), state)
            with self._lock:
                self._logs[tp] = log
            self._checkpoint_changes.add(log)
        marker.unlink(missing_ok=True)
        if clean:
            checkpoints.fsync_dir(log_dir.path)

    def start(self) -> None:
        """Run maintenance every `maintenance_interval_ms` on a daemon thread."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._maintenance_loop, name="log-maintenance", daemon=True)
        self._thread.start()

    def _maintenance_loop(self) -> None:
        while not self._stop.wait(self.maintenance_interval_ms / 1000):
            try:
                self.run_maintenance(self.clock.now_ms())
            except Exception:
                logger.exception("log maintenance failed")

    def shutdown(self) -> None:
        """Stop maintenance, flush every log, write checkpoints and the clean-shutdown marker of each
        online directory."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        for log in self._snapshot():
            try:
                log.flush()
                log.close()
            except KafkaStorageError:
                logger.warning("%r could not be flushed: its log dir is offline", log)
        self.write_checkpoints()
        for log_dir in self.log_dirs:
            if log_dir.online:
                try:
                    with log_dir.io_guard():
                        checkpoints.write_atomically(log_dir.path / CLEAN_SHUTDOWN_FILE, b"")
                except KafkaStorageError:
                    logger.warning("no clean-shutdown marker in %s", log_dir.path)
        self.handles.clear()

    # --- logs ------------------------------------------------------------------------------------------

    def _context(self, log_dir: LogDirectory) -> LogContext:
        return LogContext(self.clock, self.handles, log_dir, self._maintenance_due, self._checkpoint_changes,
                          self._log_start_moved)

    def _maintenance_due(self, log: Log) -> None:
        with self._due_lock:
            self._due.add(log)

    def add_log_start_listener(self, listener: Callable[[TopicPartition], None]) -> None:
        """`listener(topic_partition)` runs whenever a log's start offset moves, on the thread that moved it (the
        maintenance thread for retention): it must only hand the news on, thread-safely."""
        self._log_start_listeners = [*self._log_start_listeners, listener]

    def remove_log_start_listener(self, listener: Callable[[TopicPartition], None]) -> None:
        self._log_start_listeners = [known for known in self._log_start_listeners if known is not listener]

    def _log_start_moved(self, log: Log) -> None:
        for listener in self._log_start_listeners:  # replaced whole on change: safe to iterate from any thread
            listener((log.topic, log.partition))

    def _config_for(self, topic: str) -> LogConfig:
        config = self._topic_configs.get(topic)
        if config is None:
            config = self._topic_configs[topic] = LogConfig.resolve(self._topic_overrides.get(topic, {}),
                                                                    self.cluster_defaults)
        return config

    def _snapshot(self) -> list[Log]:
        with self._lock:
            return list(self._logs.values())

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    def logs(self) -> list[tuple[TopicPartition, Log]]:
        with self._lock:
            return list(self._logs.items())

    def get_or_create_log(self, topic: str, partition: int, overrides: Mapping[str, object] | None = None,
                          topic_id: uuid.UUID | None = None) -> Log:
        """The partition's log, created (`create_logs`) if missing. `overrides` (topic configs; validated,
        InvalidConfigError) replace the topic's overrides when given. With `topic_id`, an existing log whose
        `partition.metadata` names another topic id belongs to a deleted topic of the same name: it is deleted
        and a new log created; a log without one is adopted (the file written)."""
        if overrides is not None:
            self.update_topic_config(topic, overrides)
        existing = self.existing_log(topic, partition, topic_id)
        if existing is not None:
            return existing
        created = self.create_logs([NewLog(topic, partition, topic_id)])
        if (topic, partition) not in created:
            raise KafkaStorageError(f"the log of {topic}-{partition} could not be created: a log dir failed")
        return created[(topic, partition)]

    def existing_log(self, topic: str, partition: int, topic_id: uuid.UUID | None = None) -> Log | None:
        """The partition's log if this broker has one of the topic with `topic_id` (any, without): a log of
        another id (an earlier topic of that name) is deleted, a log without one adopted. None if none."""
        key = (topic, partition)
        existing = self._logs.get(key)
        if existing is None:
            return None
        stored = self._stored_topic_id(key, existing)
        if topic_id is None or stored == topic_id:
            return existing
        if stored is None:
            with existing.log_dir.io_guard():
                topic_id_file.write(existing.dir, topic_id)
            self._stored_topic_ids[key] = topic_id
            return existing
        logger.warning("deleting the log of %s-%d: it belongs to an earlier topic of that name (id %s, now %s)",
                       topic, partition, stored, topic_id)
        self.delete_log(topic, partition)
        return None

    def _stored_topic_id(self, key: TopicPartition, log: Log) -> uuid.UUID | None:
        if key not in self._stored_topic_ids:
            with log.log_dir.io_guard():
                self._stored_topic_ids[key] = topic_id_file.read(log.dir)
        return self._stored_topic_ids[key]

    def create_logs(self, new: Sequence[NewLog]) -> dict[TopicPartition, Log]:
        """Create the logs of `new` (partitions without a log here), each durable on return (see "Creating
        logs"), spread over the online dirs by load. Returns them by partition; a log whose dir failed meanwhile
        is left out (its dir is offline, logged). KafkaStorageError if every dir is offline."""
        online = [d for d in self.log_dirs if d.online]
        if not online:
            raise KafkaStorageError("every log dir is offline")
        with self._lock:
            load = {id(d): 0 for d in online}
            for log in self._logs.values():
                if id(log.log_dir) in load:
                    load[id(log.log_dir)] += 1
        placed = []
        for spec in new:
            log_dir = min(online, key=lambda d: load[id(d)])
            load[id(log_dir)] += 1
            placed.append((spec, log_dir))

        if len(placed) == 1:
            logs = [self._create_durably(*placed[0])]
        else:
            with ThreadPoolExecutor(min(CREATE_WORKERS, len(placed)), thread_name_prefix="log-create") as pool:
                logs = list(pool.map(lambda item: self._create_durably(*item), placed))
        for log_dir in {id(d): d for _, d in placed}.values():
            try:
                with log_dir.io_guard():
                    checkpoints.fsync_dir(log_dir.path)
            except KafkaStorageError:
                logger.exception("log dir %s failed while logs were created in it", log_dir.path)
        created = {}
        with self._lock:
            for (spec, _), log in zip(placed, logs, strict=True):
                if log is None or not log.log_dir.online:
                    continue
                key = (spec.topic, spec.partition)
                log.config = self._config_for(spec.topic)  # a config change while it was created
                self._logs[key] = created[key] = log
                self._stored_topic_ids[key] = spec.topic_id
        for log in created.values():
            self._checkpoint_changes.add(log)
        return created

    def _create_durably(self, new: NewLog, log_dir: LogDirectory) -> Log | None:
        """One log of `create_logs`, its partition directory fsynced (the log dir is the caller's); None if
        its dir failed."""
        directory = log_dir.path / partition_dir_name(new.topic, new.partition)
        try:
            log = Log.open(directory, new.topic, new.partition, self._config_for(new.topic),
                           self._context(log_dir), LogState(clean_shutdown=True))
            if new.topic_id is not None:
                with log_dir.io_guard():
                    topic_id_file.write(directory, new.topic_id, sync_directory=False)
            log.flush()  # fsyncs the partition directory: the first segment and partition.metadata
        except KafkaStorageError:
            logger.exception("the log of %s-%d could not be created", new.topic, new.partition)
            return None
        return log

    def update_topic_config(self, topic: str, overrides: Mapping[str, object]) -> None:
        """Replace the topic's overrides; every log of the topic gets the new LogConfig (a no-op when they are
        unchanged: the logs of a topic without overrides already have the defaults)."""
        if dict(overrides) == self._topic_overrides.get(topic, {}):
            return
        config = LogConfig.resolve(overrides, self.cluster_defaults)
        self._topic_overrides[topic] = dict(overrides)
        self._topic_configs[topic] = config
        for (log_topic, _), log in self.logs():
            if log_topic == topic:
                with log.lock:
                    log.config = config
                self._maintenance_due(log)  # a finite `flush.ms` now: its unflushed messages count

    def delete_log(self, topic: str, partition: int) -> None:
        """Remove the partition's log: its directory is renamed `<name>.<uuid>-delete` and removed.
        FileRegions handed out earlier stay readable (their files stay open)."""
        with self._lock:
            log = self._logs.pop((topic, partition), None)
            self._stored_topic_ids.pop((topic, partition), None)
        if log is None:
            return
        with self._due_lock:
            self._due.discard(log)
        self._checkpoint_changes.add(log)
        with log.lock, log.log_dir.io_guard():
            log.close()
            doomed = log.dir.with_name(f"{log.dir.name}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}")
            os.replace(log.dir, doomed)
            checkpoints.fsync_dir(log.dir.parent)
            shutil.rmtree(doomed)
        self.cleaner.forget(log)

    def delete_stray_logs(self, cluster_id: str, node_id: int, topic_ids: Mapping[str, uuid.UUID]
                          ) -> list[TopicPartition]:
        """Delete the logs of topics the cluster no longer has (deleted while this broker was down, perhaps
        re-created since under the same name: `partition.metadata` names another id); returns their
        partitions. Only in log dirs known to belong to `cluster_id` (their `meta.properties`, Kafka's
        file): a dir without one is claimed for the cluster and left alone this time, and a dir of another
        cluster is left alone (logged), so a control plane whose database was reset never wipes a broker."""
        owned = {id(d) for d in self.log_dirs if d.online and self._claim(d, cluster_id, node_id)}
        stray = [(tp, log) for tp, log in self.logs()
                 if id(log.log_dir) in owned and not self._belongs_to(log, topic_ids.get(tp[0]))]
        for (topic, partition), _ in stray:
            logger.warning("deleting the log of %s-%d: the topic no longer exists", topic, partition)
            self.delete_log(topic, partition)
        return [tp for tp, _ in stray]

    def _belongs_to(self, log: Log, topic_id: uuid.UUID | None) -> bool:
        """Whether `log` is of the live topic with `topic_id` (None: no topic of its name exists)."""
        if topic_id is None:
            return False
        try:
            stored = self._stored_topic_id((log.topic, log.partition), log)
        except KafkaStorageError:
            return True  # an unreadable dir is the I/O funnel's business, not a reason to delete
        return stored is None or stored == topic_id

    def _claim(self, log_dir: LogDirectory, cluster_id: str, node_id: int) -> bool:
        """True if `log_dir` already belonged to `cluster_id`; records the cluster in it when it named none."""
        path = log_dir.path / META_PROPERTIES_FILE
        try:
            with log_dir.io_guard():
                lines = path.read_text().splitlines() if path.exists() else []
                known = dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))
                if "cluster.id" not in known:
                    checkpoints.write_atomically(path, f"version=1\ncluster.id={cluster_id}\nnode.id={node_id}\n"
                                                 .encode())
                    return False
        except KafkaStorageError:
            return False
        if known["cluster.id"] != cluster_id:
            logger.error("log dir %s belongs to cluster %s, not %s: its logs are left alone", log_dir.path,
                         known["cluster.id"], cluster_id)
            return False
        return True

    def offline_dirs(self) -> list[Path]:
        return [d.path for d in self.log_dirs if not d.online]

    # --- maintenance -----------------------------------------------------------------------------------

    def run_maintenance(self, now_ms: int) -> None:
        """One pass (see "Maintenance" above): retention when its interval is up, the flushes and delayed
        deletions of the logs that asked for them, compaction, checkpoints. Safe to call from the maintenance
        thread while the event loop appends and reads."""
        with self._maintenance_lock:
            monotonic_ms = self.clock.monotonic_ms()
            logs = self._snapshot()
            if self._next_retention_check_ms is None or monotonic_ms >= self._next_retention_check_ms:
                self._next_retention_check_ms = monotonic_ms + self.retention_check_interval_ms
                for log in logs:
                    self._maintain(log, lambda log: log.delete_old_segments(now_ms))
            with self._due_lock:
                due = list(self._due)
            for log in due:
                if self._maintain(log, lambda log: (log.maybe_flush(monotonic_ms),
                                                    log.delete_expired_files(monotonic_ms))):
                    self._retire_if_idle(log)
                else:
                    with self._due_lock:
                        self._due.discard(log)  # closed, or its dir offline: nothing more to do for it
            for log in logs:
                if log.config.compact:
                    self._maintain(log, lambda log: self.cleaner.maybe_clean(log, now_ms))
            self._write_checkpoints()

    @staticmethod
    def _maintain(log: Log, work: Callable[[Log], object]) -> bool:
        """`work(log)` unless the log is closed or its dir offline (False then, or if the dir failed now)."""
        if not log.log_dir.online or log.closed:
            return False
        try:
            work(log)
        except KafkaStorageError:
            logger.warning("maintenance of %r skipped: its log dir is offline", log)
            return False
        return True

    def _retire_if_idle(self, log: Log) -> None:
        """Stop visiting `log` if it has no maintenance work left, atomically with the events that give it some
        (they call `_maintenance_due` under the log's lock, which this holds)."""
        with log.lock:
            if not log.maintenance_pending():
                with self._due_lock:
                    self._due.discard(log)

    def write_checkpoints(self) -> None:
        """Recovery points, log start offsets, high watermarks and cleaner offsets of each online dir,
        atomically (every maintenance pass and at shutdown). A file whose content did not change since it was
        last written durably is not rewritten (`checkpoints.OffsetCheckpointFile`: never skipped when a value
        changed or a log was added or removed, and rewritten after a failed write)."""
        with self._maintenance_lock:
            self._write_checkpoints()

    def _write_checkpoints(self) -> None:
        """Bring each dir's offset mappings up to date from the logs that changed since the last pass (work
        proportional to them: an idle broker's pass costs nothing per log), then write the files whose mapping
        differs from what they durably hold."""
        changes = self._checkpoint_changes
        for name, attribute in _OFFSET_FILES.items():
            logs = changes.take(getattr(changes, attribute))
            with self._lock:
                now_held = [(log, self._logs.get((log.topic, log.partition))) for log in logs]
            for log, current in now_held:
                tp = (log.topic, log.partition)
                if current is log:
                    self._checkpoint_files[id(log.log_dir)][name].set(tp, getattr(log, attribute))
                elif current is None or current.log_dir is not log.log_dir:
                    # deleted, or re-created in another dir (which has its own change)
                    self._checkpoint_files[id(log.log_dir)][name].discard(tp)
        cleaner_offsets = self.cleaner.checkpoint_offsets()
        for log_dir in self.log_dirs:
            if not log_dir.online:
                continue
            files = self._checkpoint_files[id(log_dir)]
            with self._lock:
                cleaned = {tp: offset for tp, offset in cleaner_offsets.items()
                           if (log := self._logs.get(tp)) is not None and log.log_dir is log_dir}
            try:
                with log_dir.io_guard():
                    for name in _OFFSET_FILES:
                        files[name].write_if_changed()
                    files[CLEANER_CHECKPOINT_FILE].write(cleaned)
            except KafkaStorageError:
                logger.warning("checkpoints of %s not written: the dir is offline", log_dir.path)
