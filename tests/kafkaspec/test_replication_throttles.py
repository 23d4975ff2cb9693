"""Kafka's replication throttle configs: broker rates (dynamic) and topic replica lists."""

import pytest

from kafkaspec import replication_throttles as rt
from kafkaspec.topic_config import InvalidConfigError, validate_overrides


@pytest.mark.parametrize(("value", "ok"), [
    ("*", True), ("0:1,1:2", True), ("0:1, 1:2", True), ("", True),
    ("0-1", False), ("*,0:1", False), ("a:1", False),
])
def test_topic_replica_lists_are_validated_like_kafkas(value, ok):
    for name in (rt.LEADER_REPLICAS, rt.FOLLOWER_REPLICAS):
        if ok:
            validate_overrides({name: value})
        else:
            with pytest.raises(InvalidConfigError, match="partitionId"):
                validate_overrides({name: value})


@pytest.mark.parametrize(("entries", "broker", "expected"), [
    (("0:1", "1:2", "2:1"), 1, frozenset({0, 2})),
    (("0:1", "1:2"), 3, frozenset()),
    ((), 1, frozenset()),
])
def test_throttled_partitions_of_a_broker(entries, broker, expected):
    assert rt.throttled_partitions(entries, broker) == expected


def test_a_star_throttles_every_partition():
    assert rt.throttled_partitions(("*",), 7) is rt.ALL_PARTITIONS


def test_rates_fall_back_to_the_cluster_default_then_unthrottled():
    assert rt.rate(rt.LEADER_RATE, {rt.LEADER_RATE: "1000"}, {rt.LEADER_RATE: "5"}) == 1000
    assert rt.rate(rt.LEADER_RATE, {}, {rt.LEADER_RATE: "5"}) == 5
    assert rt.rate(rt.FOLLOWER_RATE, {rt.LEADER_RATE: "1000"}, {}) == rt.UNTHROTTLED


def test_only_the_dynamic_broker_configs_may_change():
    assert rt.validate_broker_overrides({rt.LEADER_RATE: "2097152"}) == {rt.LEADER_RATE: 2097152}
    with pytest.raises(InvalidConfigError, match="dynamically"):
        rt.validate_broker_overrides({"log.dirs": "/tmp"})
    with pytest.raises(InvalidConfigError):
        rt.validate_broker_overrides({rt.FOLLOWER_RATE: "-1"})


def test_format_replicas_sorts_pairs():
    assert rt.format_replicas({(1, 3), (0, 2), (0, 1)}) == "0:1,0:2,1:3"
