"""The follower replication quota: which partitions it throttles, and the bytes it lets through over time
(an injected clock)."""

import pytest

from brokerd.replication.throttle import BURST_S, ReplicationQuota
from brokerd.types import TopicPartition
from kafkaspec.replication_throttles import ALL_PARTITIONS, UNTHROTTLED


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(("rate", "throttled", "key", "in_sync", "expected"), [
    (1000, {"t": frozenset({0})}, ("t", 0), False, True),
    (1000, {"t": frozenset({0})}, ("t", 0), True, False),     # an in-sync replica is never slowed down
    (1000, {"t": frozenset({0})}, ("t", 1), False, False),
    (1000, {"t": ALL_PARTITIONS}, ("t", 7), False, True),
    (1000, {"u": ALL_PARTITIONS}, ("t", 0), False, False),
    (UNTHROTTLED, {"t": ALL_PARTITIONS}, ("t", 0), False, False),  # no rate, no throttle
])
def test_which_partitions_are_throttled(rate, throttled, key, in_sync, expected):
    quota = ReplicationQuota()
    quota.configure(rate, throttled)
    assert quota.is_throttled(TopicPartition(*key), in_sync) is expected


def test_bytes_through_stay_at_the_rate():
    clock = Clock()
    quota = ReplicationQuota(clock)
    quota.configure(1_000_000, {"t": ALL_PARTITIONS})
    assert quota.available() == 0  # nothing saved up at the start
    through = 0
    for _ in range(1000):  # a fetcher taking what it may every 7 ms for 7 s, overdrawing by one batch
        clock.now += 0.007
        allowance = quota.available()
        if allowance > 0:
            quota.record(allowance + 500)
            through += allowance + 500
    assert 7_000_000 * 0.97 <= through <= 7_000_000 + 1_000_000 * BURST_S + 500


def test_overdraft_delays_until_paid_back():
    clock = Clock()
    quota = ReplicationQuota(clock)
    quota.configure(1000, {"t": ALL_PARTITIONS})
    quota.record(1500)
    assert quota.available() == 0 and quota.delay_s() == pytest.approx(1.501)
    clock.now += 1.6
    assert quota.available() > 0 and quota.delay_s() == 0.0


def test_a_lower_rate_caps_what_was_saved():
    clock = Clock()
    quota = ReplicationQuota(clock)
    quota.configure(1_000_000, {"t": ALL_PARTITIONS})
    clock.now += 10
    assert quota.available() == 1_000_000 * BURST_S
    quota.configure(1000, {"t": ALL_PARTITIONS})
    assert quota.available() == 1000 * BURST_S
