"""The `__strom_metrics` record format: keys, the fields readers rely on, topics split into slices of
partitions, and what counts as a topic change; and the same sample rendered for Prometheus."""

import json

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from brokerd.counters import COUNTER_NAMES, LATENCY_BUCKETS_S
from brokerd.metrics.prometheus import TOPIC_METRIC_NAMES, registry_for
from brokerd.metrics.records import PARTITIONS_PER_RECORD, broker_record, topic_records, topic_states
from brokerd.metrics.sample import ApiLatency, BrokerSample, LogDirSample, PartitionSample


def sample(partitions_of_big: int = 3, bytes_in: int = 100) -> BrokerSample:
    parts = [PartitionSample("big", i, 1000 + i, 0, 10, "/d", i % 2 == 0, 3, 3) for i in range(partitions_of_big)]
    parts.append(PartitionSample("small", 0, 7, 2, 5, "/d", True, 2, 3))
    counters = dict.fromkeys(COUNTER_NAMES, 0)
    buckets = [0] * (len(LATENCY_BUCKETS_S) + 1)
    buckets[3] = 4
    return BrokerSample(
        broker_id=2, cluster_id="c", started_ms=1_000, ts_ms=20_000,
        totals={**counters, "bytes_in": bytes_in + 5}, topics={"big": {**counters, "bytes_in": bytes_in},
                                                               "small": counters},
        requests={"Produce": ApiLatency(4, {7: 4}, 0, 0.01, tuple(buckets), tuple(buckets))},
        partitions=parts, log_dirs=[LogDirSample("/d", True, 5000, 10**9, 10**8)], partition_count=len(parts),
        leader_count=3, under_replicated=1, under_min_isr=0, at_min_isr=1, offline_replicas=0, connections=4,
        isr_shrinks=1, isr_expands=2, active_controller=0, offline_partitions=0, global_topics=2,
        global_partitions=4)


def test_broker_record():
    key, value = broker_record(sample(), since_ms=10_000)
    record = json.loads(value)
    assert key == b"2"
    assert {k: record[k] for k in ("v", "type", "broker", "ts", "since", "started")} == \
        {"v": 1, "type": "broker", "broker": 2, "ts": 20_000, "since": 10_000, "started": 1_000}
    assert record["counters"]["bytes_in"] == 105 and record["counters"]["isr_expands"] == 2
    assert record["gauges"]["under_replicated"] == 1
    assert record["log_dirs"] == [{"path": "/d", "online": True, "size_bytes": 5000, "total_bytes": 10**9,
                                   "free_bytes": 10**8}]
    assert record["requests"]["Produce"]["count"] == 4
    assert LATENCY_BUCKETS_S[2] * 1000 <= record["requests"]["Produce"]["p99_ms"] <= LATENCY_BUCKETS_S[3] * 1000


def test_a_topic_with_many_partitions_is_split_over_records_with_the_same_totals():
    s = sample(partitions_of_big=PARTITIONS_PER_RECORD + 5)
    _, partitions = topic_states(s)["big"]
    records = [json.loads(v) for _, v in topic_records(s, 10_000, "big", partitions)]
    assert [len(r["partitions"]) for r in records] == [PARTITIONS_PER_RECORD, 5]
    assert {r["size_bytes"] for r in records} == {sum(1000 + i for i in range(PARTITIONS_PER_RECORD + 5))}
    assert all(r["counters"]["bytes_in"] == 100 and r["topic"] == "big" for r in records)
    assert [p["partition"] for r in records for p in r["partitions"]] == list(range(PARTITIONS_PER_RECORD + 5))


def test_topic_state_changes_with_counters_or_logs_only():
    before = topic_states(sample())
    assert topic_states(sample()) == before
    after = topic_states(sample(bytes_in=101))
    assert after["big"][0] != before["big"][0] and after["small"][0] == before["small"][0]


def test_prometheus_rendering_has_per_topic_and_all_topics_series():
    text = generate_latest(registry_for(sample)).decode()
    parsed = {(s.name, tuple(sorted(s.labels.items()))): s.value
              for f in text_string_to_metric_families(text) for s in f.samples}
    assert "_created" not in text
    name = f"kafka_server_brokertopicmetrics_{TOPIC_METRIC_NAMES['bytes_in']}_total"
    assert parsed[(name, ())] == 105
    assert parsed[(name, (("topic", "big"),))] == 100
    assert parsed[("kafka_log_log_size", (("partition", "1"), ("topic", "big")))] == 1001
    assert parsed[("kafka_cluster_partition_underreplicated", (("partition", "0"), ("topic", "small")))] == 1
    assert ("kafka_cluster_partition_underreplicated", (("partition", "1"), ("topic", "big"))) not in parsed
    assert parsed[("kafka_network_requestmetrics_totaltimems_count", (("request", "Produce"),))] == 4
