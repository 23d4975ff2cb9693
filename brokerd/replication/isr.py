"""ISR changes proposed by a partition's leader to the control plane (Kafka's AlterPartition), one in
flight per partition, conditional on the leader and partition epochs.

While a proposal is in flight the partition counts its "maximal ISR" (see `brokerd.replication.partition`).
On success the committed state is adopted; if the control plane refuses (a stale partition epoch, a
fenced leader epoch, a replica not running) the proposal is dropped and the metadata re-read, and the
next ISR check proposes again from the fresh state. Event loop only.
"""

import asyncio
import contextlib
import logging

from brokerd.metadata.errors import MetadataError
from brokerd.metadata.store import MetadataStore
from brokerd.replication.partition import Partition

log = logging.getLogger(__name__)


class IsrManager:
    def __init__(self, metadata: MetadataStore) -> None:
        self._metadata = metadata
        self._tasks: set[asyncio.Task] = set()
        self.shrinks = 0
        """ISR changes committed that removed members (Kafka's IsrShrinksPerSec count), since start."""
        self.expands = 0
        """ISR changes committed that added members (IsrExpandsPerSec), since start."""

    def propose(self, partition: Partition, isr: tuple[int, ...]) -> bool:
        """Start proposing `isr` for `partition` (led here) unless a proposal is already in flight."""
        if partition.pending_isr is not None or not partition.is_leader or isr == partition.isr:
            return False
        partition.pending_isr = isr
        task = asyncio.get_running_loop().create_task(self._alter(partition, isr, partition.leader_epoch,
                                                                  partition.partition_epoch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def _alter(self, partition: Partition, isr: tuple[int, ...], leader_epoch: int,
                     partition_epoch: int) -> None:
        name = f"{partition.topic}-{partition.index}"
        try:
            state = await self._metadata.alter_partition(partition.topic, partition.index, leader_epoch,
                                                         partition_epoch, isr)
        except MetadataError as exc:
            log.info("ISR change of %s to %s refused (%s: %s); re-reading metadata", name, list(isr),
                     exc.kafka_error, exc)
            if partition.pending_isr == isr:
                partition.pending_isr = None
            with contextlib.suppress(MetadataError):
                await self._metadata.refresh()
            return
        if partition.pending_isr == isr:
            partition.pending_isr = None
        self.shrinks += any(r not in state.isr for r in partition.isr)
        self.expands += any(r not in partition.isr for r in state.isr)
        if partition.is_leader and partition.leader_epoch == leader_epoch:
            log.info("ISR of %s is now %s (partition epoch %d)", name, list(state.isr), state.partition_epoch)
            partition.apply_isr(state)

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
