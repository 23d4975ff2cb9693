"""Value types every layer of the broker shares: the topic-partition key and the integers that are easy to
mix up (an offset passed as an epoch, a broker id as a partition index).

The `NewType`s cost nothing at run time (they are `int`); they name what a parameter or field holds, so a
signature says `LeaderEpoch` where it used to say `int`. Kafka's units: offsets count records, epochs count
generations, ids are the `node.id` of a broker.
"""

from typing import NamedTuple, NewType

Offset = NewType("Offset", int)
"""A position in a partition's log: the offset of a record, or an end offset (one past the last record:
log end offset, high watermark, log start offset). -1 where Kafka means "none"."""

LeaderEpoch = NewType("LeaderEpoch", int)
"""The leadership generation of a partition, bumped by the controller on every leader election; stamped on
every batch a leader appends. -1: unknown / not given."""

PartitionEpoch = NewType("PartitionEpoch", int)
"""The control plane's version of a partition's (leader, ISR, replicas), bumped on every change (KIP-841);
AlterPartition is conditional on it."""

BrokerId = NewType("BrokerId", int)
"""A broker's `node.id` (also a replica id: replicas are named by their broker). -1: none."""


class TopicPartition(NamedTuple):
    """One partition of a topic: the key of every per-partition table. Equal to the plain tuple
    `(topic, partition)`, so either may be used to look one up."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"
