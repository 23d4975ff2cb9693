"""ISR changes proposed by partition leaders to the control plane (Kafka's AlterPartition), one in flight per
partition, conditional on the leader and partition epochs, and batched: every proposal made while no request
is in flight goes out at the end of the loop step in one request, and those made meanwhile in the next, so
a broker failure's thousands of ISR shrinks cost a handful of requests and control-plane transactions (Kafka's
AlterPartitionManager sends one request at a time the same way).

While a proposal is in flight the partition counts its "maximal ISR" (see `brokerd.replication.partition`).
On success the committed state is adopted — unless it came with a new leader (a reassignment completed in the
same transaction): then the proposal keeps counting until the image moving this replica arrives, so the HW
never passes what the new leader was seen to hold (a CI run caught records acknowledged in that window and
missing on the new leader). If the control plane refuses a partition (a stale partition epoch,
a fenced leader epoch, a replica not running) or the whole request, the proposal is dropped and the metadata
re-read (once per request), and the next ISR check proposes again from the fresh state. Event loop only.
"""

import asyncio
import contextlib
import logging

from brokerd.metadata.errors import MetadataError
from brokerd.metadata.image import PartitionAssignment
from brokerd.metadata.store import IsrProposal, MetadataStore
from brokerd.replication.partition import Partition
from brokerd.types import TopicPartition

log = logging.getLogger(__name__)


class IsrManager:
    def __init__(self, metadata: MetadataStore) -> None:
        self._metadata = metadata
        self._pending: dict[TopicPartition, tuple[Partition, IsrProposal]] = {}
        """Proposed, not yet sent."""
        self._sender: asyncio.Task | None = None
        """Sends `_pending` until it is empty, one request at a time."""
        self.shrinks = 0
        """ISR changes committed that removed members (Kafka's IsrShrinksPerSec count), since start."""
        self.expands = 0
        """ISR changes committed that added members (IsrExpandsPerSec), since start."""

    def propose(self, partition: Partition, isr: tuple[int, ...]) -> bool:
        """Start proposing `isr` for `partition` (led here) unless a proposal is already in flight."""
        if partition.pending_isr is not None or not partition.is_leader or isr == partition.isr:
            return False
        partition.pending_isr = isr
        self._pending[partition.key] = (partition, IsrProposal(partition.topic, partition.index,
                                                               partition.leader_epoch, partition.partition_epoch, isr))
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._send_pending(), name="alter-partition")
        return True

    async def _send_pending(self) -> None:
        while True:
            await asyncio.sleep(0)  # the rest of this loop step's proposals join the request
            if not self._pending:
                return
            batch, self._pending = list(self._pending.values()), {}
            try:
                outcomes: list[PartitionAssignment | MetadataError] = await self._metadata.alter_partitions(
                    [proposal for _, proposal in batch])
            except MetadataError as exc:
                outcomes = [exc] * len(batch)
            refused = [self._settle(partition, proposal, outcome)
                       for (partition, proposal), outcome in zip(batch, outcomes, strict=True)]
            if any(refused):
                with contextlib.suppress(MetadataError):
                    await self._metadata.refresh()

    def _settle(self, partition: Partition, proposal: IsrProposal, outcome: PartitionAssignment | MetadataError
                ) -> bool:
        """Adopt the committed state, or drop a refused proposal (True: the metadata is to be re-read)."""
        name, isr = f"{proposal.topic}-{proposal.partition}", proposal.isr
        if (not isinstance(outcome, MetadataError) and outcome.leader_epoch != proposal.leader_epoch
                and partition.pending_isr == isr):
            # Committed together with a new leadership (a reassignment completed when the expansion brought in
            # its last target): the new leader may hold no more than this leader last saw it fetch. Until the
            # image that moves this replica arrives (it resets the pending ISR), the HW stays over the
            # proposed ISR too, so nothing the new leader may lack is acknowledged here.
            log.info("ISR of %s committed as %s with a new leader %d (epoch %d)", name, list(outcome.isr),
                     outcome.leader_id, outcome.leader_epoch)
            return False
        if partition.pending_isr == isr:
            partition.pending_isr = None
        if isinstance(outcome, MetadataError):
            log.info("ISR change of %s to %s refused (%s: %s); re-reading metadata", name, list(isr),
                     outcome.kafka_error, outcome)
            return True
        self.shrinks += any(r not in outcome.isr for r in partition.isr)
        self.expands += any(r not in partition.isr for r in outcome.isr)
        if partition.is_leader and partition.leader_epoch == proposal.leader_epoch:
            log.info("ISR of %s is now %s (partition epoch %d)", name, list(outcome.isr), outcome.partition_epoch)
            partition.apply_isr(outcome)
        return False

    async def stop(self) -> None:
        if self._sender is not None:
            self._sender.cancel()
            await asyncio.gather(self._sender, return_exceptions=True)
        self._pending.clear()
