"""How far a reassignment got (pure): bytes to copy and copied, the average rate and the time left.

A move's bytes come from the brokers' latest replica sizes (`metrics.PartitionReplicaSize`): bytes to copy = the
leader's size × new replicas; copied = each new replica's size (sampled since the move started), capped at the
leader's, or all of it once the replica is in the ISR.
"""

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

__all__ = ("Progress", "copy_progress", "progress")


def copy_progress(adding: Sequence[int], isr: Collection[int], leader_size: int,
                  replica_sizes: Mapping[int, int]) -> tuple[int, int]:
    """(bytes to copy, bytes copied) of a move: the leader's size per new replica; a new replica's own size,
    capped at the leader's (its log may lag the sample), or the leader's once it is in the ISR. `replica_sizes`
    holds only sizes sampled since the move started (bytes)."""
    copied = sum(leader_size if b in isr else min(replica_sizes.get(b, 0), leader_size) for b in adding)
    return leader_size * len(adding), copied


@dataclass(frozen=True)
class Progress:
    """An execution's or a task's progress: bytes, the average copy rate since it started (bytes/s; None before
    anything was copied) and the estimated seconds left at that rate (None when unknown). `fraction` in [0, 1]:
    copied / to copy, 1 once `finished`, 0 while nothing is known."""

    bytes_to_copy: int
    bytes_copied: int
    rate: float | None
    eta_s: float | None
    finished: bool = False

    @property
    def fraction(self) -> float:
        if self.finished:
            return 1.0
        return min(self.bytes_copied / self.bytes_to_copy, 1.0) if self.bytes_to_copy else 0.0


def progress(bytes_to_copy: int, bytes_copied: int, started_at: datetime | None, until: datetime,
             finished: bool = False) -> Progress:
    """The progress of a copy that started at `started_at` (None: not yet), as of `until`."""
    elapsed = (until - started_at).total_seconds() if started_at else 0.0
    rate = bytes_copied / elapsed if elapsed > 0 and bytes_copied > 0 else None
    left = max(bytes_to_copy - bytes_copied, 0)
    eta = 0.0 if finished or (started_at and left == 0) else (left / rate if rate else None)
    return Progress(bytes_to_copy, bytes_copied, rate, eta, finished)
