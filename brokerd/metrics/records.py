"""The record format of `__strom_metrics` (version 1), written by `publisher`; README documents it for readers
(the control plane's rollups, Spark reports).

One publishing round of broker B at time `ts` writes, in this order, into partition `B mod partitions`:

- one **broker record**, key `"B"`, value
  `{"v": 1, "type": "broker", "cluster", "broker", "ts", "since", "started", "counters", "requests", "gauges",
  "log_dirs"}`;
- one **topic record** per topic with replicas here whose counters or partition logs changed since the last
  round (every topic at least every `strom.metrics.full.sample.interval.ms`), key `"B:<topic>"`, value
  `{"v": 1, "type": "topic", "cluster", "broker", "ts", "since", "started", "topic", "counters", "size_bytes",
  "partitions": [{"partition", "size_bytes", "log_start_offset", "log_end_offset", "leader", "log_dir"}]}`.
  A topic with more than `PARTITIONS_PER_RECORD` partitions here gets several records, each with a slice of
  `partitions` and the same counters and `size_bytes` (the topic's total here).

Times are ms since the epoch. `started`: when the broker process started; every counter was 0 then.
`counters` are cumulative since `started` (bytes, records, requests; `COUNTER_NAMES`, and on broker records
also `isr_shrinks`, `isr_expands`). `since`: the `ts` of the broker's previous round whose records were all
written (`started` for the first round): a topic missing from rounds between `since` and `ts` did not change,
so a reader attributes the counters' growth since its previous value to (since, ts]. Values are compact UTF-8
JSON; the batch is zstd-compressed; record timestamps are `ts` (CreateTime).
"""

import json
from collections.abc import Iterator

from brokerd.counters import histogram_quantile
from brokerd.metrics.sample import BrokerSample, PartitionSample

FORMAT_VERSION = 1
PARTITIONS_PER_RECORD = 1000

TopicState = tuple
"""What decides whether a topic changed: its counters and its partitions' (size, offsets, role)."""


def _dumps(value: dict) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _partition(p: PartitionSample) -> dict:
    return {"partition": p.partition, "size_bytes": p.size_bytes, "log_start_offset": p.log_start_offset,
            "log_end_offset": p.log_end_offset, "leader": p.leader, "log_dir": p.log_dir}


def broker_record(sample: BrokerSample, since_ms: int) -> tuple[bytes, bytes]:
    requests = {}
    for api, stats in sorted(sample.requests.items()):
        p50 = histogram_quantile(0.5, stats.recent_bucket_counts)
        p99 = histogram_quantile(0.99, stats.recent_bucket_counts)
        requests[api] = {"count": stats.requests, "failed": stats.failures,
                         "latency_sum_s": round(stats.latency_sum_s, 6),
                         "p50_ms": None if p50 is None else round(p50 * 1000, 3),
                         "p99_ms": None if p99 is None else round(p99 * 1000, 3)}
    value = {
        "v": FORMAT_VERSION, "type": "broker", "cluster": sample.cluster_id, "broker": sample.broker_id,
        "ts": sample.ts_ms, "since": since_ms, "started": sample.started_ms,
        "counters": {**sample.totals, "isr_shrinks": sample.isr_shrinks, "isr_expands": sample.isr_expands},
        "requests": requests,
        "gauges": {"partitions": sample.partition_count, "leaders": sample.leader_count,
                   "under_replicated": sample.under_replicated, "under_min_isr": sample.under_min_isr,
                   "at_min_isr": sample.at_min_isr, "offline_replicas": sample.offline_replicas,
                   "connections": sample.connections, "active_controller": sample.active_controller,
                   "offline_partitions": sample.offline_partitions, "cluster_topics": sample.global_topics,
                   "cluster_partitions": sample.global_partitions},
        "log_dirs": [{"path": d.path, "online": d.online, "size_bytes": d.size_bytes, "total_bytes": d.total_bytes,
                      "free_bytes": d.free_bytes} for d in sample.log_dirs],
    }
    return str(sample.broker_id).encode(), _dumps(value)


def topic_states(sample: BrokerSample) -> dict[str, tuple[TopicState, list[PartitionSample]]]:
    """Per topic with replicas here: (its state, its partitions here, by index)."""
    by_topic: dict[str, list[PartitionSample]] = {}
    for p in sample.partitions:
        by_topic.setdefault(p.topic, []).append(p)
    states = {}
    for topic, partitions in by_topic.items():
        partitions.sort(key=lambda p: p.partition)
        counters = sample.topics.get(topic, {})
        state = (tuple(counters.values()),
                 tuple((p.partition, p.size_bytes, p.log_start_offset, p.log_end_offset, p.leader) for p in partitions))
        states[topic] = (state, partitions)
    return states


def topic_records(sample: BrokerSample, since_ms: int, topic: str, partitions: list[PartitionSample]
                  ) -> Iterator[tuple[bytes, bytes]]:
    key = f"{sample.broker_id}:{topic}".encode()
    head = {"v": FORMAT_VERSION, "type": "topic", "cluster": sample.cluster_id, "broker": sample.broker_id,
            "ts": sample.ts_ms, "since": since_ms, "started": sample.started_ms, "topic": topic,
            "counters": sample.topics.get(topic, {}), "size_bytes": sum(p.size_bytes for p in partitions)}
    for start in range(0, max(len(partitions), 1), PARTITIONS_PER_RECORD):
        chunk = partitions[start:start + PARTITIONS_PER_RECORD]
        yield key, _dumps({**head, "partitions": [_partition(p) for p in chunk]})
