"""The group coordinator's Kafka broker keys: defaults (standalone vs cluster), overrides, refusals."""

import pytest

from brokerd.config import ConfigError, GroupSettings, build_config

CLUSTER = {"strom.controlplane.url": "http://127.0.0.1:8000", "node.id": "1"}


def test_kafka_defaults_with_a_one_replica_offsets_topic_when_standalone():
    standalone = build_config({}, environ={}).groups
    cluster = build_config(CLUSTER, environ={"STROM_CLUSTER_SECRET": "s"}).groups
    assert cluster == GroupSettings()
    assert (standalone.offsets_topic_replication_factor, cluster.offsets_topic_replication_factor) == (1, 3)
    assert (cluster.offsets_topic_num_partitions, cluster.offsets_retention_ms) == (50, 7 * 24 * 3600 * 1000)


def test_kafka_keys_override_the_defaults():
    settings = build_config({
        "group.min.session.timeout.ms": "100", "group.max.session.timeout.ms": "5000",
        "group.initial.rebalance.delay.ms": "0", "group.max.size": "4", "offsets.retention.minutes": "2",
        "offsets.retention.check.interval.ms": "1000", "offsets.topic.num.partitions": "7",
        "offsets.topic.replication.factor": "2", "offset.metadata.max.bytes": "10",
        "offsets.commit.timeout.ms": "250"}, environ={}).groups
    assert settings == GroupSettings(100, 5000, 0, 4, 120_000, 1000, 7, 2, 10, 250)


@pytest.mark.parametrize(("properties", "message"), [
    ({"offsets.topic.num.partitions": "0"}, "offsets.topic.num.partitions: 0 is below the minimum 1"),
    ({"offsets.retention.minutes": "x"}, "offsets.retention.minutes: 'x' is not an integer"),
    ({"group.min.session.timeout.ms": "9000", "group.max.session.timeout.ms": "8000"}, "is above"),
])
def test_bad_values_are_refused_naming_the_key(properties, message):
    with pytest.raises(ConfigError, match=message):
        build_config(properties, environ={})
