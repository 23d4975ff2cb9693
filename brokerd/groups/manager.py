"""`GroupManager`: this broker's group coordinators, one per `__consumer_offsets` partition it leads
(Kafka's `GroupCoordinator` partition loading/unloading and its timer wheel).

How it is driven:
- **Leadership** (`ReplicaManager` role listener, after every metadata image): a partition this broker
  now leads, or leads at a new leader epoch, gets a fresh `GroupCoordinator` that answers
  COORDINATOR_LOAD_IN_PROGRESS while a task reads the partition (log start → log end offset,
  `loader.read_records`, through the `Partition`) and `load`s it; a partition no longer led is `unload`ed
  (waiting JoinGroup and SyncGroup requests fail with NOT_COORDINATOR, later requests find no coordinator
  here).
- **Writes**: a coordinator's `append(records)` becomes one uncompressed batch appended through
  `ReplicaManager.append` with acks=all (refused below `min.insync.replicas`, then parked until the high
  watermark passes it or `offsets.commit.timeout.ms` elapses), only while the partition is still led at
  the coordinator's leader epoch. A failure raises the replica manager's error, carrying its Kafka error
  (the coordinator translates it as Kafka does).
- **Time**: one timer task runs every loaded coordinator's `expire_due()` when the earliest
  `next_deadline_ms()` comes (coordinators report each deadline they arm, waking the task when it is
  earlier than planned) and `remove_expired_offsets()` every `offsets.retention.check.interval.ms`.

Event loop only.
"""

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass

from brokerd.clock import Clock
from brokerd.config import GroupSettings
from brokerd.groups import errors
from brokerd.groups.api import GroupListing
from brokerd.groups.coordinator import GroupCoordinator
from brokerd.groups.loader import read_records
from brokerd.groups.offsets_topic import OffsetsTopic, group_partition
from brokerd.groups.persistence import Record
from brokerd.metadata.image import BrokerEndpoint
from brokerd.metadata.store import MetadataStore
from brokerd.records.builder import build_batch
from brokerd.replication.partition import Partition
from brokerd.replication.replica_manager import ACKS_ALL, ReplicaManager
from kafkaspec.topic_names import CONSUMER_OFFSETS_TOPIC

log = logging.getLogger(__name__)


@dataclass(eq=False)
class _Slot:
    """The coordinator of one led `__consumer_offsets` partition, for one leadership (leader epoch)."""

    partition: Partition
    leader_epoch: int
    coordinator: GroupCoordinator
    loaded: bool = False
    load_task: asyncio.Task | None = None


class GroupManager:
    def __init__(self, metadata: MetadataStore, replicas: ReplicaManager, settings: GroupSettings,
                 clock: Clock) -> None:
        self._metadata = metadata
        self._replicas = replicas
        self._settings = settings
        self._clock = clock
        self.offsets_topic = OffsetsTopic(metadata, settings)
        self._slots: dict[int, _Slot] = {}
        self._timer: asyncio.Task | None = None
        self._wake = asyncio.Event()
        self._wake_at_ms: int | None = None
        self._retention: asyncio.Task | None = None
        self._running = False

    # --- lifecycle -------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start following leadership (call after the replica manager started) and the timer."""
        self._running = True
        self._replicas.add_role_listener(self._on_roles_changed)
        self._on_roles_changed()
        self._timer = asyncio.get_running_loop().create_task(self._run_timer(), name="group-timer")

    async def stop(self) -> None:
        """Unload every coordinator (parked JoinGroup/SyncGroup answer NOT_COORDINATOR) and stop the timer."""
        self._running = False
        for index in list(self._slots):
            self._unload(index)
        tasks = [t for t in (self._timer, self._retention) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # --- lookups (handlers) ----------------------------------------------------------------------------

    async def find_coordinator(self, group_id: str) -> BrokerEndpoint:
        """FindCoordinator: the broker leading the group's partition (the topic is created on first use: answered
        once this broker's replicas of it exist)."""
        coordinator = await self.offsets_topic.coordinator(group_id)
        await self._replicas.created()
        return coordinator

    def coordinator_for(self, group_id: str) -> GroupCoordinator:
        """This broker's coordinator of `group_id`; raises NotCoordinatorError if another broker (or none)
        coordinates it. The coordinator itself raises COORDINATOR_LOAD_IN_PROGRESS until loaded."""
        index = group_partition(self._metadata.image.topics.get(CONSUMER_OFFSETS_TOPIC), group_id)
        slot = self._slots.get(index) if index is not None else None
        if slot is None:
            raise errors.NotCoordinatorError(f"broker {self._replicas.node_id} does not coordinate group {group_id}")
        return slot.coordinator

    def list_groups(self) -> tuple[list[GroupListing], str | None]:
        """Every group of the coordinators on this broker, and COORDINATOR_LOAD_IN_PROGRESS while some
        partition is still loading (the groups listed are then incomplete, as in Kafka)."""
        groups: list[GroupListing] = []
        loading = False
        for slot in self._slots.values():
            if slot.loaded:
                groups += slot.coordinator.list_groups()
            else:
                loading = True
        return groups, "COORDINATOR_LOAD_IN_PROGRESS" if loading else None

    # --- leadership ------------------------------------------------------------------------------------

    def _on_roles_changed(self) -> None:
        if not self._running:
            return
        topic = self._metadata.image.topics.get(CONSUMER_OFFSETS_TOPIC)
        led: dict[int, Partition] = {}
        for assignment in topic.partitions if topic is not None else ():
            partition = self._replicas.replica(CONSUMER_OFFSETS_TOPIC, assignment.partition)
            if partition is not None and partition.is_leader:
                led[assignment.partition] = partition
        for index, slot in list(self._slots.items()):
            partition = led.get(index)
            if partition is not slot.partition or partition.leader_epoch != slot.leader_epoch:
                self._unload(index)
        for index, partition in led.items():
            if index not in self._slots:
                self._begin_load(index, partition)

    def _begin_load(self, index: int, partition: Partition) -> None:
        slot = _Slot(partition, partition.leader_epoch, GroupCoordinator(
            clock=self._clock, append=lambda records: self._append(slot, records),
            config=self._settings, on_deadline=self._on_deadline))
        self._slots[index] = slot
        slot.load_task = asyncio.get_running_loop().create_task(self._load(index, slot),
                                                                name=f"load-{CONSUMER_OFFSETS_TOPIC}-{index}")

    async def _load(self, index: int, slot: _Slot) -> None:
        started = time.monotonic()
        try:
            records = await read_records(slot.partition, slot.partition.log_end_offset,
                                         self._settings.offsets_load_buffer_size)
        except Exception:  # noqa: BLE001 - an unreadable log leaves the partition unserved, loudly
            log.exception("%s-%d: loading failed; its groups stay unavailable", CONSUMER_OFFSETS_TOPIC, index)
            return
        if self._slots.get(index) is not slot:
            return
        slot.coordinator.load(records)
        slot.loaded = True
        log.log(logging.INFO if records else logging.DEBUG, "%s-%d: loaded %d records at leader epoch %d in %.0f ms",
                CONSUMER_OFFSETS_TOPIC, index, len(records), slot.leader_epoch, (time.monotonic() - started) * 1000)

    def _unload(self, index: int) -> None:
        slot = self._slots.pop(index)
        if slot.load_task is not None and not slot.load_task.done():
            slot.load_task.cancel()
        slot.coordinator.unload()
        log.debug("%s-%d: unloaded (leader epoch %d)", CONSUMER_OFFSETS_TOPIC, index, slot.leader_epoch)

    # --- writes ----------------------------------------------------------------------------------------

    async def _append(self, slot: _Slot, records: list[Record]) -> None:
        batch = build_batch(records, self._clock.now_ms())
        await self._replicas.append(slot.partition.topic, slot.partition.index, batch, ACKS_ALL,
                                    self._settings.offsets_commit_timeout_ms, leader_epoch=slot.leader_epoch)

    # --- time ------------------------------------------------------------------------------------------

    def _on_deadline(self, deadline_ms: int) -> None:
        if self._wake_at_ms is None or deadline_ms < self._wake_at_ms:
            self._wake_at_ms = deadline_ms
            self._wake.set()

    async def _run_timer(self) -> None:
        interval = self._settings.offsets_retention_check_interval_ms
        next_retention_ms = self._clock.monotonic_ms() + interval
        while True:
            now = self._clock.monotonic_ms()
            loaded = [slot for slot in self._slots.values() if slot.loaded]
            for slot in loaded:
                try:
                    slot.coordinator.expire_due()
                except Exception:  # noqa: BLE001 - one group's bug must not stop every group's timeouts
                    log.exception("group deadline failed")
            if now >= next_retention_ms:
                next_retention_ms = now + interval
                if self._retention is None or self._retention.done():
                    self._retention = asyncio.get_running_loop().create_task(
                        self._remove_expired_offsets(loaded), name="offsets-retention")
            deadlines = [d for slot in loaded if (d := slot.coordinator.next_deadline_ms()) is not None]
            self._wake_at_ms = min([*deadlines, next_retention_ms])
            self._wake.clear()
            delay_s = max(self._wake_at_ms - self._clock.monotonic_ms(), 0) / 1000
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay_s):
                    await self._wake.wait()

    async def _remove_expired_offsets(self, slots: list[_Slot]) -> None:
        removed = 0
        for slot in slots:
            try:
                removed += await slot.coordinator.remove_expired_offsets()
            except errors.GroupError:
                continue  # unloaded meanwhile
            except Exception:  # noqa: BLE001 - retried at the next check
                log.exception("removing expired offsets failed")
        if removed:
            log.info("removed %d expired offsets", removed)
