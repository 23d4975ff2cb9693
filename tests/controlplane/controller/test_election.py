"""The pure election rules (Kafka's PartitionChangeBuilder), as a table."""

import pytest

from controlplane.controller.election import (
    PartitionState,
    choose_after_fencing,
    choose_leader_for_offline,
    choose_preferred,
)


@pytest.mark.parametrize(("replicas", "isr", "leader", "gone", "live", "unclean", "expected"), [
    # the leader dies: first live ISR member in replica order leads, the dead one leaves the ISR
    ([1, 2, 3], [1, 2, 3], 1, 1, {2, 3}, False, PartitionState(2, (2, 3))),
    ([1, 2, 3], [3, 1, 2], 1, 1, {2, 3}, False, PartitionState(2, (3, 2))),
    # a follower dies: only the ISR shrinks
    ([1, 2, 3], [1, 2, 3], 1, 3, {1, 2}, False, PartitionState(1, (1, 2))),
    # an ISR member that is not live is skipped
    ([1, 2, 3], [1, 2, 3], 1, 1, {3}, False, PartitionState(3, (2, 3))),
    # the last ISR member dies: no leader, the ISR is kept
    ([1, 2], [1], 1, 1, {2}, False, PartitionState(-1, (1,))),
    # ... unless unclean election is enabled for the topic
    ([1, 2], [1], 1, 1, {2}, True, PartitionState(2, (2,))),
    ([1, 2], [1], 1, 1, set(), True, PartitionState(-1, (1,))),
    # a broker that is not a replica in the ISR changes nothing
    ([1, 2], [1, 2], 1, 5, {1, 2}, False, PartitionState(1, (1, 2))),
])
def test_choose_after_fencing(replicas, isr, leader, gone, live, unclean, expected):
    assert choose_after_fencing(replicas, isr, leader, gone, live, unclean) == expected


@pytest.mark.parametrize(("replicas", "isr", "live", "unclean", "expected"), [
    ([1, 2, 3], [3, 2], {2, 3}, False, PartitionState(2, (3, 2))),
    ([1, 2, 3], [1], {1}, False, PartitionState(1, (1,))),
    ([1, 2, 3], [1], {2}, False, None),
    ([1, 2, 3], [1], {3, 2}, True, PartitionState(2, (2,))),
    ([1, 2, 3], [1], set(), True, None),
])
def test_choose_leader_for_offline(replicas, isr, live, unclean, expected):
    assert choose_leader_for_offline(replicas, isr, live, unclean) == expected


@pytest.mark.parametrize(("replicas", "isr", "leader", "live", "expected"), [
    ([1, 2], [1, 2], 2, {1, 2}, PartitionState(1, (1, 2))),
    ([1, 2], [1, 2], 1, {1, 2}, "ELECTION_NOT_NEEDED"),
    ([1, 2], [2], 2, {1, 2}, "PREFERRED_LEADER_NOT_AVAILABLE"),
    ([1, 2], [1, 2], 2, {2}, "PREFERRED_LEADER_NOT_AVAILABLE"),
])
def test_choose_preferred(replicas, isr, leader, live, expected):
    assert choose_preferred(replicas, isr, leader, live) == expected
