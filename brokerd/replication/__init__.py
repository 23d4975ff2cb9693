"""Replication (Kafka's `ReplicaManager` layer), between the handlers and the partition facade.

* `replica_manager.ReplicaManager`: every replica this broker holds, kept in the role the metadata image
  gives it (leader or follower); the entry point handlers use.
* `purgatory.DelayedProduce`: acks=all requests parked until the high watermark passes their last offset.
* `fetcher.ReplicaFetcher`: one per source broker; replica Fetch (and OffsetForLeaderEpoch to truncate
  on a leader change) for every partition followed from that broker; batches appended verbatim.
* `isr.IsrManager`: ISR shrink/expand proposals to the control plane, conditional on the partition epoch.

Event loop only.
"""
