"""Broker counters: per-topic totals that survive topic deletion, Fetch accounting, requests per API, and
request-latency quantiles checked against an oracle over the raw observations. (Counting at the partition
boundary: tests/brokerd/replication/test_partition_counters.py.)"""

import random
from dataclasses import dataclass

import pytest

from brokerd.counters import (
    LATENCY_BUCKETS_S,
    BrokerTopicMetrics,
    RequestMetrics,
    histogram_quantile,
    request_name,
)
from brokerd.protocol.api_keys import ApiKey


def test_totals_keep_the_counts_of_deleted_topics():
    metrics = BrokerTopicMetrics()
    metrics.topic("a").bytes_in += 100
    metrics.topic("b").bytes_in += 10
    metrics.retire("a")
    metrics.topic("b").bytes_in += 1
    assert set(metrics.topics()) == {"b"}
    assert metrics.totals().bytes_in == 111
    metrics.retire("unknown")  # nothing to retire: no change
    assert metrics.totals().bytes_in == 111


@dataclass
class Region:
    length: int


@dataclass
class Read:
    error_code: int
    records: Region | None


@pytest.mark.parametrize(("error", "from_follower", "expected"), [
    # error, follower?, (fetch_requests, failed, bytes_out, replication_bytes_out)
    (0, False, (1, 0, 700, 0)),
    (0, True, (1, 0, 0, 700)),
    (56, False, (1, 1, 0, 0)),   # KAFKA_STORAGE_ERROR: a failed fetch
    (6, False, None),            # NOT_LEADER_OR_FOLLOWER: routing, not counted
    (3, False, None),            # UNKNOWN_TOPIC_OR_PARTITION: no series for a topic that does not exist
    (1, True, None),             # OFFSET_OUT_OF_RANGE
])
def test_fetch_accounting(error, from_follower, expected):
    metrics = BrokerTopicMetrics()
    metrics.record_fetch([("t", [Read(error, Region(700) if error == 0 else None)])], from_follower)
    if expected is None:
        assert "t" not in metrics.topics()
    else:
        c = metrics.topic("t")
        assert (c.fetch_requests, c.failed_fetch_requests, c.bytes_out, c.replication_bytes_out) == expected


def test_request_metrics_count_per_api_and_version():
    requests = RequestMetrics()
    requests.observe(ApiKey.PRODUCE, 7, 0.002)
    requests.observe(ApiKey.PRODUCE, 7, 0.004)
    requests.observe(ApiKey.PRODUCE, 3, 0.2)
    requests.failed(ApiKey.API_VERSIONS)
    produce = requests.apis["Produce"]
    assert produce.by_version == {7: 2, 3: 1}
    assert produce.count == 3
    assert produce.latency_sum_s == pytest.approx(0.206)
    assert requests.apis["ApiVersions"].failures == 1
    assert [request_name(k) for k in (ApiKey.FETCH, ApiKey.OFFSET_FOR_LEADER_EPOCH, 9999)] == \
        ["Fetch", "OffsetForLeaderEpoch", "Unknown"]


def test_a_fetch_is_also_timed_as_a_consumer_or_a_follower_fetch_as_kafka_does():
    requests = RequestMetrics()
    requests.observe(ApiKey.FETCH, 12, 0.001, ["FetchConsumer"])
    requests.observe(ApiKey.FETCH, 12, 0.5, ["FetchFollower"])
    requests.observe(ApiKey.FETCH, 13, 0.003, ["FetchFollower"])
    requests.failed(ApiKey.FETCH, ["FetchConsumer"])
    fetch, consumer, follower = (requests.apis[n] for n in ("Fetch", "FetchConsumer", "FetchFollower"))
    assert (fetch.by_version, consumer.by_version, follower.by_version) == ({12: 2, 13: 1}, {12: 1}, {12: 1, 13: 1})
    assert (fetch.failures, consumer.failures, follower.failures) == (1, 1, 0)
    assert follower.latency_sum_s == pytest.approx(0.503)
    assert [a + b for a, b in zip(consumer.bucket_counts, follower.bucket_counts, strict=True)] == fetch.bucket_counts


@pytest.mark.parametrize("quantile", [0.5, 0.75, 0.95, 0.99, 0.999])
def test_histogram_quantile_lies_in_the_bucket_of_the_true_quantile(quantile):
    rng = random.Random(quantile)
    observations = sorted(rng.lognormvariate(-5, 1.5) for _ in range(5000))
    requests = RequestMetrics()
    for latency in observations:
        requests.observe(ApiKey.FETCH, 11, latency)
    estimate = histogram_quantile(quantile, requests.apis["Fetch"].bucket_counts)
    true = observations[min(int(quantile * len(observations)), len(observations) - 1)]
    bounds = (0.0, *LATENCY_BUCKETS_S, float("inf"))
    bucket = next(i for i in range(len(bounds) - 1) if bounds[i] < true <= bounds[i + 1])
    assert bounds[bucket] <= estimate <= min(bounds[bucket + 1], LATENCY_BUCKETS_S[-1])


def test_histogram_quantile_of_nothing_is_none():
    assert histogram_quantile(0.99, [0] * (len(LATENCY_BUCKETS_S) + 1)) is None


def test_disabled_metrics_hand_out_no_counters_and_count_no_fetches():
    metrics = BrokerTopicMetrics(enabled=False)
    assert metrics.topic("t") is None
    metrics.record_fetch([("t", [Read(0, Region(10))])], from_follower=False)
    assert metrics.topics() == {} and metrics.totals().bytes_out == 0
