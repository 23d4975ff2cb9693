"""Fetch-session bookkeeping (KIP-227): the follower's `FetchSessionHandler` (what each request names, how
answers and errors move the session) and the leader's `FetchSessionCache` / `FetchSession` (updates, epochs,
least-recently-used eviction). The wire behaviour with a real broker is in tests/integration/test_fetch_sessions.py."""

import asyncio

import pytest
from kio.schema.errors import ErrorCode

from brokerd.protocol.fetch_request import MAX_EPOCH, FetchPosition, next_epoch
from brokerd.replication.fetch_session import FetchSessionHandler
from brokerd.replication.session_cache import FetchSessionCache
from brokerd.types import TopicPartition


def position(partition: int, offset: int, epoch: int = 3) -> FetchPosition:
    return FetchPosition(partition, epoch, offset, 0, 1_048_576)


def wanted(**offsets: int) -> dict[TopicPartition, FetchPosition]:
    """wanted(p0=10, p1=5): topic "t", partition index after the "p"."""
    return {TopicPartition("t", int(name[1:])): position(int(name[1:]), offset) for name, offset in offsets.items()}


ALL = {TopicPartition("t", index) for index in range(10)}
"""Every partition these tests name: passed as `changed` where a test is not about it."""


def named(request) -> dict[str, list[int]]:
    return {topic: [p.partition for p in positions] for topic, positions in request.topics.items()}


def opened(handler: FetchSessionHandler, session_id: int = 77, **offsets: int) -> None:
    handler.build(wanted(**offsets), ALL)
    assert handler.handle_response(ErrorCode.none, session_id)


def test_the_first_request_is_full_and_opens_a_session():
    handler = FetchSessionHandler()
    request = handler.build(wanted(p0=10, p1=5), ALL)
    assert (request.session, named(request), request.forgotten) == ((0, 0), {"t": [0, 1]}, {})

    assert handler.handle_response(ErrorCode.none, 77)
    assert (handler.session_id, handler.epoch) == (77, 1)


# (offsets now wanted, partitions named, partitions forgotten): after a session opened over p0=10, p1=5, p2=0
INCREMENTAL = {
    "nothing changed: nothing named": ({"p0": 10, "p1": 5, "p2": 0}, [], []),
    "a fetch offset moved": ({"p0": 12, "p1": 5, "p2": 0}, [0], []),
    "a new partition": ({"p0": 10, "p1": 5, "p2": 0, "p9": 0}, [9], []),
    "a partition no longer wanted": ({"p0": 10, "p2": 0}, [], [1]),
    "moved, added and dropped at once": ({"p0": 11, "p3": 4}, [0, 3], [1, 2]),
}


@pytest.mark.parametrize(("now", "names", "forgets"), INCREMENTAL.values(), ids=INCREMENTAL.keys())
def test_an_incremental_request_names_only_what_changed(now, names, forgets):
    handler = FetchSessionHandler()
    opened(handler, p0=10, p1=5, p2=0)

    request = handler.build(wanted(**now), ALL)

    assert request.session == (77, 1)
    assert sorted(named(request).get("t", [])) == names
    assert sorted(request.forgotten.get("t", [])) == forgets


def test_a_changed_leader_epoch_or_max_bytes_is_named_again():
    handler = FetchSessionHandler()
    opened(handler, p0=10)
    key = TopicPartition("t", 0)

    assert named(handler.build({key: FetchPosition(0, 4, 10, 0, 1_048_576)}, ALL)) == {"t": [0]}
    handler.handle_response(ErrorCode.none, 77)
    assert named(handler.build({key: FetchPosition(0, 4, 10, 0, 512)}, ALL)) == {"t": [0]}


def test_each_answer_steps_the_epoch_and_commits_what_the_leader_holds():
    handler = FetchSessionHandler()
    opened(handler, p0=10)
    handler.build(wanted(p0=11), ALL)
    assert handler.handle_response(ErrorCode.none, 77)

    request = handler.build(wanted(p0=11), ALL)
    assert (request.session, named(request)) == ((77, 2), {})


@pytest.mark.parametrize("error", [ErrorCode.fetch_session_id_not_found, ErrorCode.invalid_fetch_session_epoch])
def test_a_session_error_makes_the_next_request_a_full_one_in_a_new_session(error):
    handler = FetchSessionHandler()
    opened(handler, p0=10, p1=5)
    handler.build(wanted(p0=10, p1=5), ALL)

    assert not handler.handle_response(error, 0)

    request = handler.build(wanted(p0=10, p1=5), ALL)
    assert (request.session, named(request)) == ((0, 0), {"t": [0, 1]})


def test_after_a_transport_failure_the_next_request_closes_the_old_session_and_opens_a_new_one():
    handler = FetchSessionHandler()
    opened(handler, p0=10, p1=5)
    handler.build(wanted(p0=11, p1=5), ALL)

    handler.reset()  # the answer was lost: the leader may or may not hold p0=11

    request = handler.build(wanted(p0=11, p1=5), ALL)
    assert (request.session, named(request)) == ((77, 0), {"t": [0, 1]})
    assert handler.handle_response(ErrorCode.none, 78)
    assert handler.build(wanted(p0=11, p1=5), ALL).session == (78, 1)


def test_a_leader_that_declines_a_session_gets_full_requests():
    handler = FetchSessionHandler()
    opened(handler, session_id=0, p0=10)

    request = handler.build(wanted(p0=10), ALL)
    assert (request.session, named(request)) == ((0, 0), {"t": [0]})


def test_an_incremental_request_looks_only_at_the_changed_partitions():
    handler = FetchSessionHandler()
    opened(handler, p0=10, p1=5, p2=0)
    p0, p1, p2 = (TopicPartition("t", index) for index in range(3))

    request = handler.build(wanted(p0=12, p1=6), [p1, p2])  # p0's move is not reported: the caller's contract

    assert (named(request), request.forgotten) == ({"t": [1]}, {"t": [2]})
    assert handler.handle_response(ErrorCode.none, 77)
    assert named(handler.build(wanted(p0=12, p1=6), [p0, p1])) == {"t": [0]}  # p1 is held at 6 now


def test_epochs_wrap_to_one():
    assert [next_epoch(e) for e in (0, 1, MAX_EPOCH - 1, MAX_EPOCH)] == [1, 2, MAX_EPOCH, 1]


# --- the leader's cache --------------------------------------------------------------------------------


def test_sessions_get_distinct_ids_and_an_update_adds_replaces_and_forgets():
    cache = FetchSessionCache(slots=10)
    session, other = cache.create(2), cache.create(3)
    assert session is not None and other is not None and session.id != other.id and 0 not in (session.id, other.id)
    assert (session.epoch, session.replica_id) == (1, 2)

    session.update([("t", [position(0, 10), position(1, 5)])], ())
    session.update([("t", [position(1, 7)])], [TopicPartition("t", 0)])

    assert {key: cached.fetch_offset for key, cached in session.partitions.items()} == {TopicPartition("t", 1): 7}


def test_a_full_cache_evicts_the_least_recently_used_session():
    cache = FetchSessionCache(slots=2)
    first, second = cache.create(1), cache.create(2)
    assert first is not None and second is not None
    assert cache.get(first.id) is first  # second is now the least recently used

    third = cache.create(3)

    assert third is not None and len(cache) == 2 and cache.evictions == 1
    assert cache.get(second.id) is None and cache.get(first.id) is first


def test_a_followers_new_session_replaces_its_previous_one():
    cache = FetchSessionCache(slots=10)
    old, other = cache.create(2), cache.create(3)
    assert old is not None and other is not None

    new = cache.create(2)

    assert new is not None and cache.get(old.id) is None and cache.get(other.id) is other
    assert len(cache) == 2 and cache.evictions == 0


def test_no_slots_means_no_sessions():
    assert FetchSessionCache(slots=0).create(1) is None


def test_a_removed_session_is_gone():
    cache = FetchSessionCache(slots=2)
    session = cache.create(1)
    assert session is not None
    cache.remove(session.id)
    assert cache.get(session.id) is None and len(cache) == 0


def test_a_session_looks_at_what_requests_name_and_events_mark_until_the_handler_finds_it_quiet():
    session = FetchSessionCache(slots=10).create(2)
    assert session is not None
    session.update([("t", [position(0, 10), position(1, 5)])], ())
    assert session.changed == {TopicPartition("t", 0), TopicPartition("t", 1)}  # a new session: all looked at

    session.changed.clear()  # what the Fetch handler does with quiet partitions
    session.mark_changed(TopicPartition("t", 1))
    session.mark_changed(TopicPartition("other", 0))  # not in the session
    assert session.changed == {TopicPartition("t", 1)}

    session.update([], [TopicPartition("t", 1)])
    assert session.changed == set()


def test_events_reach_the_sessions_holding_the_partition_and_the_sweep_marks_everything_a_slice_at_a_time():
    cache = FetchSessionCache(slots=10)
    first, second = cache.create(2), cache.create(3)
    assert first is not None and second is not None
    first.update([("t", [position(0, 10), position(1, 5)])], ())
    second.update([("t", [position(1, 5)])], ())
    first.changed.clear()
    second.changed.clear()

    cache.mark_changed(TopicPartition("t", 1))
    assert (first.changed, second.changed) == ({TopicPartition("t", 1)}, {TopicPartition("t", 1)})

    first.changed.clear()
    second.changed.clear()
    for _ in range(2):
        cache.sweep_slice(2)
    assert first.changed == set(first.partitions) and second.changed == {TopicPartition("t", 1)}


def test_the_sweep_marks_every_partition_within_its_steps_a_slice_per_step():
    session = FetchSessionCache(slots=10).create(2)
    assert session is not None
    session.update([("t", [position(p, 0) for p in range(10)])], ())
    session.changed.clear()
    marked: set[TopicPartition] = set()
    for step in range(4):
        session.sweep_slice(4)
        assert len(session.changed) <= 3  # ceil(10 / 4)
        marked |= session.changed
        session.changed.clear()
        if step == 1:
            forgotten = next(iter(set(session.partitions) - marked))
            session.update([], [forgotten])  # forgotten before its slice: not marked
    assert marked == set(session.partitions) and forgotten not in marked
    session.sweep_slice(4)  # the next sweep starts over
    assert session.changed


def test_a_waiting_fetch_wakes_on_a_change_of_its_partitions_only():
    async def scenario():
        session = FetchSessionCache(slots=10).create(2)
        assert session is not None
        session.update([("t", [position(0, 10)])], ())

        session.watch()
        session.mark_changed(TopicPartition("other", 0))
        assert not await session.wait_for_change(0.05)

        session.watch()
        session.mark_changed(TopicPartition("t", 0))  # before the wait (during the handler's pass): not missed
        assert await session.wait_for_change(5)

    asyncio.run(scenario())


CAUGHT_UP = {
    # (cached fetch offset, cached leader epoch, leader's epoch, leader's log end): the session's last fetch or -1
    "at the log end": (10, 3, 3, 10, 1_000),
    "no epoch sent": (10, -1, 3, 10, 1_000),
    "behind the log end": (9, 3, 3, 10, -1),
    "another epoch": (10, 2, 3, 10, -1),
}


@pytest.mark.parametrize(("offset", "cached_epoch", "epoch", "log_end", "expected"), CAUGHT_UP.values(),
                         ids=CAUGHT_UP.keys())
def test_caught_up_as_the_session_shows(offset, cached_epoch, epoch, log_end, expected):
    cache = FetchSessionCache(slots=10)
    session = cache.create(2)
    assert session is not None
    session.update([("t", [FetchPosition(0, cached_epoch, offset, 0, 1_048_576)])], ())
    session.last_fetch_ms = 1_000

    assert cache.caught_up_ms(2, TopicPartition("t", 0), epoch, log_end) == expected
    assert cache.caught_up_ms(3, TopicPartition("t", 0), epoch, log_end) == -1  # no session
    assert cache.caught_up_ms(2, TopicPartition("t", 1), epoch, log_end) == -1  # not in it


def test_an_evicted_or_replaced_session_no_longer_answers_for_its_follower():
    cache = FetchSessionCache(slots=1)
    session = cache.create(2)
    assert session is not None
    session.update([("t", [position(0, 10)])], ())
    session.last_fetch_ms = 5

    cache.create(3)  # evicts 2's

    assert cache.caught_up_ms(2, TopicPartition("t", 0), 3, 10) == -1
    cache.mark_changed(TopicPartition("t", 0))  # no session of 2 is told any more
    assert len(cache) == 1
