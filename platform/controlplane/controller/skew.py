"""Each broker's share of the cluster's replicas, leaderships and bytes on disk, and how far it is from an even
share (the Brokers page's skew columns; Cruise Control's "replica / leader / disk distribution").

- replicas: the partitions' current replica lists (a reassignment in progress counts both the adding and the
  removing replicas: both are on disk); leaders: the partitions' current leaders (a partition without one
  counts for nobody); bytes: the brokers' latest samples (`metrics.PartitionReplicaSize`), only of replicas the
  metadata store still places on that broker (rows of moved or deleted replicas stay until re-sampled).
- A share is in % of the total over the brokers listed (every registered one, on the page); the skew is
  share − 100 / number of brokers, in percentage points (+ holds more than an even share). With a total of 0
  every share and skew is None. A skew of `SKEWED_PP` or more either way is marked `skewed` (a hint for the
  eye, not an alert).

`report()` gives the same for every registered broker as one JSON-ready dict: what `GET /api/skew/` returns and
`manage.py broker_skew` prints.
"""

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from controlplane.cluster.models import Broker
from controlplane.metrics.models import PartitionReplicaSize
from controlplane.topics.models import Partition

__all__ = ("MEASURES", "SKEWED_PP", "BrokerShares", "Share", "current", "report", "shares")

SKEWED_PP = 10.0
MEASURES = ("replicas", "leaders", "bytes")


@dataclass(frozen=True)
class Share:
    """A count (or bytes), its share of the cluster's total in %, and the deviation from an even share in
    percentage points; `pct` and `skew` are None when the total is 0."""

    value: int
    pct: float | None
    skew: float | None

    @property
    def skewed(self) -> bool:
        return self.skew is not None and abs(self.skew) >= SKEWED_PP


@dataclass(frozen=True)
class BrokerShares:
    replicas: Share
    leaders: Share
    bytes: Share


def _shares(brokers: Sequence[int], values: Mapping[int, int]) -> dict[int, Share]:
    total = sum(values.get(b, 0) for b in brokers)
    even = 100 / len(brokers) if brokers else 0.0
    shares = {}
    for b in brokers:
        pct = 100 * values.get(b, 0) / total if total else None
        shares[b] = Share(values.get(b, 0), pct, None if pct is None else pct - even)
    return shares


def shares(brokers: Sequence[int], replicas: Mapping[int, int], leaders: Mapping[int, int],
           bytes_on_disk: Mapping[int, int]) -> dict[int, BrokerShares]:
    """Per broker of `brokers` (the even share is over these), from the counts per broker id."""
    r, ld, by = _shares(brokers, replicas), _shares(brokers, leaders), _shares(brokers, bytes_on_disk)
    return {b: BrokerShares(r[b], ld[b], by[b]) for b in brokers}


def current(brokers: Sequence[int]) -> dict[int, BrokerShares]:
    """`shares` of the cluster as the metadata store and the latest samples have it (two queries)."""
    replicas, leaders, placed = Counter(), Counter(), set()
    for topic, partition, replica_list, leader in Partition.objects.values_list(
            "topic__name", "partition", "replicas", "leader"):
        replicas.update(replica_list)
        leaders[leader] += 1  # NO_LEADER (-1) is never a broker id
        placed.update((b, topic, partition) for b in replica_list)
    bytes_on_disk = Counter()
    for broker, topic, partition, size in PartitionReplicaSize.objects.values_list(
            "broker_id", "topic", "partition", "size_bytes"):
        if (broker, topic, partition) in placed:
            bytes_on_disk[broker] += size
    return shares(brokers, replicas, leaders, bytes_on_disk)


def _share_json(share: Share) -> dict:
    return {"value": share.value, "pct": share.pct, "skew_pp": share.skew, "skewed": share.skewed}


def report() -> dict:
    """Every registered broker's shares (`current`, three queries in all) with its state and rack, the even
    share (% per broker), the highlighting threshold and the largest |skew| per measure (None when nothing
    counts), as JSON-ready values (shares in %, skews in percentage points, bytes in bytes)."""
    brokers = list(Broker.objects.order_by("broker_id").values_list("broker_id", "state", "rack"))
    shares_now = current([broker_id for broker_id, _, _ in brokers])
    rows = [{"broker": broker_id, "state": state, "rack": rack or None,
             **{m: _share_json(getattr(shares_now[broker_id], m)) for m in MEASURES}}
            for broker_id, state, rack in brokers]
    largest = {m: max((abs(r[m]["skew_pp"]) for r in rows if r[m]["skew_pp"] is not None), default=None)
               for m in MEASURES}
    return {"even_share_pct": 100 / len(brokers) if brokers else None, "skewed_pp": SKEWED_PP,
            "max_skew_pp": largest, "brokers": rows}
