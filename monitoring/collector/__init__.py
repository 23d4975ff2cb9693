"""The collector (Burrow's cluster and consumer modules): what the brokers know, read over the Kafka protocol.

- `offsets_topic`: every commit, group generation and tombstone, by consuming `__consumer_offsets` and
  decoding Kafka's record formats (`kafkaspec.consumer_offsets`), so no commit is missed between polls;
- `broker_offsets`: topic partition counts (Metadata) and every partition's log-end offset (ListOffsets);
- `record_times`: the append time of the record at a committed offset (Fetch), for lag in seconds.

Each uses confluent-kafka (librdkafka): one client, batched requests, C-speed fetching.
"""
