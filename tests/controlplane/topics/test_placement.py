"""Replica placement: Kafka's documented examples, and properties over random clusters (hypothesis)."""

import math
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.topics.placement import PlacementError, assign_replicas, rack_alternated


def test_rack_alternated_list_matches_kafkas_example():
    # AdminUtils' doc: rack1: 0, 5; rack2: 3, 4; rack3: 1, 2 → 0, 3, 1, 5, 4, 2
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated(racks) == [0, 3, 1, 5, 4, 2]


def test_rack_unaware_assignment_matches_kafkas_example():
    # AdminUtils' doc table: 5 brokers, 10 partitions, RF 3, start index 0, shift 0.
    replicas = assign_replicas(dict.fromkeys(range(5)), 10, 3, fixed_start_index=0)
    assert replicas[0] == [0, 1, 2]
    assert replicas[4] == [4, 0, 1]
    assert replicas[5] == [0, 2, 3]
    assert replicas[9] == [4, 1, 2]


@pytest.mark.parametrize(("brokers", "partitions", "rf"), [({1: None}, 1, 2), ({}, 1, 1), ({1: None}, 0, 1),
                                                          ({1: None}, 1, 0)])
def test_impossible_placements_are_refused(brokers, partitions, rf):
    with pytest.raises(PlacementError):
        assign_replicas(brokers, partitions, rf)


def test_the_seed_decides_the_start():
    brokers = dict.fromkeys(range(6))
    assert assign_replicas(brokers, 6, 3, random.Random(7)) == assign_replicas(brokers, 6, 3, random.Random(7))
    starts = {assign_replicas(brokers, 1, 1, random.Random(seed))[0][0] for seed in range(50)}
    assert len(starts) > 3  # single-partition topics do not all lead on one broker


@st.composite
def clusters(draw, equal_racks: bool):
    """(brokers → rack, partitions, replication factor); racks None means a cluster without racks."""
    num_racks = draw(st.integers(1, 5))
    sizes = [draw(st.integers(1, 5))] * num_racks if equal_racks else \
        [draw(st.integers(1, 5)) for _ in range(num_racks)]
    use_racks = draw(st.booleans())
    ids = draw(st.lists(st.integers(0, 1000), min_size=sum(sizes), max_size=sum(sizes), unique=True))
    it = iter(ids)
    brokers = {next(it): (f"rack-{r}" if use_racks else None) for r, size in enumerate(sizes) for _ in range(size)}
    rf = draw(st.integers(1, len(brokers)))
    partitions = draw(st.integers(1, 60))
    return brokers, partitions, rf


@settings(max_examples=300, deadline=None)
@given(cluster=clusters(equal_racks=False), seed=st.integers(0, 2**32))
def test_every_partition_gets_rf_distinct_brokers_and_balanced_leaders(cluster, seed):
    brokers, partitions, rf = cluster
    assignment = assign_replicas(brokers, partitions, rf, random.Random(seed))
    assert len(assignment) == partitions
    for replicas in assignment:
        assert len(replicas) == rf == len(set(replicas))
        assert set(replicas) <= set(brokers)
    leaders = Counter(replicas[0] for replicas in assignment)
    counts = [leaders.get(b, 0) for b in brokers]
    assert max(counts) - min(counts) <= 1
    racks = {b: r or "" for b, r in brokers.items()}
    if any(brokers.values()):
        num_racks = len(set(racks.values()))
        for replicas in assignment:
            assert len({racks[b] for b in replicas}) == min(rf, num_racks)


@settings(max_examples=300, deadline=None)
@given(cluster=clusters(equal_racks=True), seed=st.integers(0, 2**32))
def test_equal_racks_hold_at_most_their_share_and_brokers_equal_replicas(cluster, seed):
    brokers, partitions, rf = cluster
    assignment = assign_replicas(brokers, partitions, rf, random.Random(seed))
    if any(brokers.values()):
        num_racks = len(set(brokers.values()))
        for replicas in assignment:
            assert max(Counter(brokers[b] for b in replicas).values()) <= math.ceil(rf / num_racks)
    if partitions % len(brokers) == 0:
        load = Counter(b for replicas in assignment for b in replicas)
        assert len({load[b] for b in brokers}) == 1, load


def test_added_partitions_continue_the_round_robin():
    brokers = dict.fromkeys(range(3))
    first = assign_replicas(brokers, 3, 2, random.Random(1))
    more = assign_replicas(brokers, 3, 2, random.Random(1), start_partition=3)
    assert Counter(r[0] for r in first + more) == Counter({0: 2, 1: 2, 2: 2})
