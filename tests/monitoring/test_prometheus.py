"""Lag metrics (monitoring.prometheus) in the text format a Prometheus scrape gets."""

import pytest
from prometheus_client.parser import text_string_to_metric_families

from monitoring.evaluator import not_found
from monitoring.model import Status
from monitoring.prometheus import MetricsSnapshot, MonitorStats, render, render_health
from tests.monitoring.factories import group, partition


def scrape(families=("burrow", "kafka_exporter", "kafka_lag_exporter")) -> dict[str, dict]:
    results = [
        group(partition(Status.OK, number=0, lag=5, seconds=1.5, committed=100),
              partition(Status.STOP, number=1, lag=2345, complete=0.2, committed=7, seconds=90.0),
              partition(Status.OK, number=2, committed=None), name="testgroup", cluster="testcluster"),
        group(partition(Status.OK, topic="audit", committed=None), name="idle", cluster="testcluster"),
        not_found("testcluster", "gone", 0),
    ]
    snapshot = MetricsSnapshot("testcluster", results, {"orders": [105, 2352, 40]})
    text = render(snapshot, families) + render_health(
        MonitorStats(offsets_topic_lag=12, commits_stored=99, evaluation_seconds=0.25))
    samples: dict[str, dict] = {}
    for family in text_string_to_metric_families(text.decode()):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def value(samples, name, **labels):
    return samples[name][tuple(sorted(labels.items()))]


def test_burrow_family():
    s = scrape(["burrow"])
    group_labels = {"cluster": "testcluster", "consumer_group": "testgroup"}
    assert value(s, "burrow_kafka_consumer_status", **group_labels) == 3
    assert value(s, "burrow_kafka_consumer_lag_total", **group_labels) == 2350
    assert value(s, "burrow_kafka_consumer_partition_lag", **group_labels, topic="orders", partition="1") == 2345
    # only partitions with a full window have current_offset and partition_status
    assert set(s["burrow_kafka_consumer_current_offset"]) == {tuple(sorted(
        {**group_labels, "topic": "orders", "partition": "0"}.items()))}
    assert value(s, "burrow_kafka_topic_partition_status", **group_labels, topic="orders", partition="0") == 1
    assert value(s, "burrow_kafka_topic_partition_offset", cluster="testcluster", topic="orders", partition="1") == 2352
    assert not any(dict(labels).get("consumer_group") == "gone" for labels in s["burrow_kafka_consumer_status"])
    assert "kafka_consumergroup_lag" not in s


def test_kafka_exporter_family():
    s = scrape(["kafka_exporter"])
    no_commit = value(s, "kafka_consumergroup_current_offset", consumergroup="testgroup", topic="orders", partition="2")
    assert no_commit == -1
    assert value(s, "kafka_consumergroup_lag", consumergroup="testgroup", topic="orders", partition="1") == 2345
    lag_partitions = {dict(labels)["partition"] for labels in s["kafka_consumergroup_lag"]}
    assert lag_partitions == {"0", "1"}  # no lag series (never a negative one) without a commit
    assert value(s, "kafka_consumergroup_lag_sum", consumergroup="testgroup", topic="orders") == 2350
    assert value(s, "kafka_consumergroup_current_offset_sum", consumergroup="testgroup", topic="orders") == 107
    assert not any(dict(labels)["consumergroup"] == "idle" for labels in s["kafka_consumergroup_current_offset"])
    assert value(s, "kafka_topic_partition_current_offset", topic="orders", partition="2") == 40
    assert value(s, "kafka_topic_partitions", topic="orders") == 3


def test_kafka_lag_exporter_family():
    s = scrape(["kafka_lag_exporter"])
    labels = {"cluster_name": "testcluster", "group": "testgroup", "topic": "orders", "partition": "1",
              "member_host": "/10.0.0.1", "consumer_id": "", "client_id": "app-1"}
    assert value(s, "kafka_consumergroup_group_lag_seconds", **labels) == 90.0
    assert value(s, "kafka_consumergroup_group_lag", **labels) == 2345
    assert value(s, "kafka_consumergroup_group_offset", **labels) == 7
    assert value(s, "kafka_consumergroup_group_max_lag", cluster_name="testcluster", group="testgroup") == 2345
    assert value(s, "kafka_consumergroup_group_max_lag_seconds", cluster_name="testcluster", group="testgroup") == 90
    assert value(s, "kafka_consumergroup_group_sum_lag", cluster_name="testcluster", group="testgroup") == 2350
    assert value(s, "kafka_consumergroup_group_topic_sum_lag", cluster_name="testcluster", group="testgroup",
                 topic="orders") == 2350
    assert value(s, "kafka_partition_latest_offset", cluster_name="testcluster", topic="orders", partition="0") == 105


def test_health_metrics_and_no_created_series():
    s = scrape([])
    assert value(s, "strom_lag_monitor_offsets_topic_lag_records") == 12
    assert value(s, "strom_lag_monitor_commits_stored_total") == 99
    assert value(s, "strom_lag_monitor_evaluation_duration_seconds") == 0.25
    assert not any(name.endswith("_created") for name in s)


def test_unknown_family():
    with pytest.raises(ValueError, match="kminion"):
        render(MetricsSnapshot("c", [], {}), ["kminion"])


def test_label_values_are_escaped():
    odd = 'we\\ird "group"\nname'
    results = [group(partition(Status.OK, topic='t"1', committed=3, lag=1), name=odd, cluster='c\\1')]
    text = render(MetricsSnapshot('c\\1', results, {'t"1': [4]})).decode()
    labels = [s.labels for f in text_string_to_metric_families(text) for s in f.samples]
    assert {"cluster": 'c\\1', "consumer_group": odd, "topic": 't"1', "partition": "0"} in labels
    assert {"consumergroup": odd, "topic": 't"1'} in labels
    assert {"cluster_name": 'c\\1', "topic": 't"1', "partition": "0"} in labels
