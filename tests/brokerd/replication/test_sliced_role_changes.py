"""A large change to replicas this broker already hosts (a fence: every ISR loses a broker, its leaderships move)
is applied a slice of topics per loop step (`_apply`, about `ROLE_SLICE_REPLICAS` partitions each), tested against
the oracle of tests/brokerd/replication/test_sliced_role_application.py: whatever image arrives while the slices
run, the end state equals a fresh replica manager applying the final image in one go. No loop step gives more than
a slice of replicas their new role, a replica never takes a role older than one it took, and an acks=all append
waiting on a leader whose leadership a queued slice takes away is never acknowledged. (`ROLE_STEP_MS` 0: one
slice per step; a step takes slices for that long.)"""

import asyncio
import dataclasses
import gc

import pytest

from brokerd.metadata.image import PartitionAssignment, TopicMetadata
from brokerd.replication import replica_manager
from brokerd.replication.errors import NotLeaderOrFollowerError
from tests.brokerd.replication.conftest import build_batch
from tests.brokerd.replication.test_sliced_role_application import (
    BROKERS,
    FENCED_3,
    MOVED_2,
    SLICE,
    broker,
    image,
    one_shot,
    settled,
    state,
    topic,
    until,
)

TOPICS = 6
PARTITIONS = 4
"""Small topics, so a slice (whole topics of about `SLICE` partitions) is two of them."""


def fenced(t: TopicMetadata, broker_id: int = 3, epoch: int = 1) -> TopicMetadata:
    """`t` after `broker_id` was fenced: out of every ISR, its leaderships moved to the first ISR member left (a
    new leader epoch), every partition epoch bumped."""
    def moved(p: PartitionAssignment) -> PartitionAssignment:
        isr = tuple(r for r in p.isr if r != broker_id)
        leader = p.leader_id if p.leader_id != broker_id else isr[0]
        return dataclasses.replace(p, leader_id=leader, isr=isr, partition_epoch=p.partition_epoch + 1,
                                   leader_epoch=p.leader_epoch + epoch if leader != p.leader_id else p.leader_epoch)

    return dataclasses.replace(t, partitions=tuple(moved(p) for p in t.partitions))


NAMES = [f"t{n}" for n in range(TOPICS)]
FIRST = image(*(topic(name, PARTITIONS) for name in NAMES))
FENCE = image(*(fenced(FIRST.topics[name]) for name in NAMES), brokers=FENCED_3, version=2)


def fence_but(version: int, **replaced: TopicMetadata | None) -> tuple:
    """The fence's topics, some replaced (None: deleted), as the topics of an image of `version`."""
    topics = [replaced.get(name, FENCE.topics[name]) for name in NAMES]
    return tuple(t for t in topics if t is not None)


RACES = {  # what arrives while the fence's slices run, in order
    "nothing": [],
    "leaders move back": [image(*(topic(name, PARTITIONS, epoch=3) for name in NAMES), version=3)],
    "the last topic deleted": [image(*fence_but(3, t5=None), brokers=FENCED_3, version=3)],
    "the last topic re-created": [image(*fence_but(3, t5=topic("t5", PARTITIONS, generation=1)), brokers=FENCED_3,
                                        version=3)],
    "reassigned away in part": [image(*fence_but(3, t5=topic("t5", PARTITIONS, away=lambda p: p % 2 == 0)),
                                      brokers=FENCED_3, version=3)],
    "another broker fenced": [image(*(fenced(FENCE.topics[name], broker_id=2) for name in NAMES),
                                    brokers=tuple(dataclasses.replace(b, fenced=b.node_id in (2, 3)) for b in BROKERS),
                                    version=3)],
    "a leader's broker moves": [image(*FENCE.topics.values(), brokers=tuple(
        dataclasses.replace(b, fenced=b.node_id == 3) for b in MOVED_2), version=3)],
    "a topic added": [image(*FENCE.topics.values(), topic("new", 3), brokers=FENCED_3, version=3)],
    "two changes": [image(*fence_but(3, t5=None), brokers=FENCED_3, version=3),
                    image(*(topic(name, PARTITIONS, epoch=4) for name in NAMES[:5]), version=4)],
}


@pytest.fixture(autouse=True)
def small_slices(monkeypatch):
    monkeypatch.setattr(replica_manager, "ROLE_SLICE_REPLICAS", SLICE)
    monkeypatch.setattr(replica_manager, "ROLE_STEP_MS", 0)  # one slice per step


def roles(replicas) -> dict:
    return {key: (p.is_leader, p.leader_id, p.leader_epoch, p.isr) for key, p in replicas._partitions.items()}


async def hosting(metadata, replicas, first=FIRST) -> None:
    """Broker 1 hosting every replica of `first`, in its roles."""
    metadata.set_image(first)
    await settled(replicas)
    assert len(replicas._partitions) == sum(len(t.partitions) for t in first.topics.values())


@pytest.mark.parametrize("race", RACES.values(), ids=RACES.keys())
def test_images_arriving_while_a_fence_is_sliced_end_as_the_final_image_applied_at_once(tmp_path, monkeypatch, race):
    async def main():
        async with broker(tmp_path) as (logs, metadata, replicas):
            await hosting(metadata, replicas)
            before = roles(replicas)
            metadata.set_image(FENCE)
            changed = {key for key, role in roles(replicas).items() if role != before[key]}
            assert 0 < len(changed) <= SLICE and replicas._queued  # the first slice at once, the rest queued
            for change in race:
                metadata.set_image(change)
            await until(lambda: not replicas._queued and replicas._role_slicer.done())
            await settled(replicas)
            return state(replicas, logs)

    sliced = asyncio.run(main())
    assert sliced == one_shot(tmp_path, race[-1] if race else FENCE, monkeypatch)


def test_a_leader_move_arriving_while_a_fence_is_sliced_takes_effect_in_the_step_that_applies_it(tmp_path):
    """A one-partition leader move of a topic still queued behind the fence's slices is not queued behind them."""
    async def main():
        async with broker(tmp_path) as (_, metadata, replicas):
            await hosting(metadata, replicas)
            metadata.set_image(FENCE)
            last = FENCE.topics[list(replicas._queued)[-1]]
            held = next(p for p in last.partitions if p.leader_id == 2)
            moved = dataclasses.replace(held, leader_id=1, leader_epoch=held.leader_epoch + 1,
                                        partition_epoch=held.partition_epoch + 1)
            metadata.set_image(image(*fence_but(3, **{last.name: dataclasses.replace(last, partitions=tuple(
                moved if p.partition == held.partition else p for p in last.partitions))}), brokers=FENCED_3,
                version=3))
            led = replicas.replica(last.name, held.partition)
            assert led.is_leader and led.leader_epoch == moved.leader_epoch and led.isr == moved.isr
            assert replicas._queued and last.name not in replicas._queued  # the fence's other topics still wait
            await until(lambda: not replicas._queued and replicas._role_slicer.done())

    asyncio.run(main())


def test_no_loop_step_gives_more_than_a_slice_of_replicas_their_new_role(tmp_path):
    async def main():
        async with broker(tmp_path) as (_, metadata, replicas):
            await hosting(metadata, replicas)
            metadata.set_image(FENCE)
            applied = [sum(p.isr == FENCE.partition(*key).isr for key, p in replicas._partitions.items())]
            while not replicas._role_slicer.done():  # one sample per loop step: this task and the slicer alternate
                await asyncio.sleep(0)
                applied.append(sum(p.isr == FENCE.partition(*key).isr for key, p in replicas._partitions.items()))
            return applied

    applied = asyncio.run(main())
    steps = [after - before for before, after in zip(applied, applied[1:], strict=False) if after != before]
    assert applied[-1] == TOPICS * PARTITIONS
    assert max([applied[0], *steps]) == SLICE and len(steps) + 1 == TOPICS * PARTITIONS // SLICE


def test_a_replica_never_takes_a_role_older_than_one_it_took(tmp_path):
    """The queued slices read the image current at their step: an image newer than the fence, arriving before
    them, is what they apply; no replica's leader epoch ever goes down."""
    newer = image(*(topic(name, PARTITIONS, epoch=5) for name in NAMES), version=3)

    async def main():
        async with broker(tmp_path) as (_, metadata, replicas):
            await hosting(metadata, replicas)
            metadata.set_image(FENCE)
            epochs = {key: p.leader_epoch for key, p in replicas._partitions.items()}
            metadata.set_image(newer)
            while not replicas._role_slicer.done():
                await asyncio.sleep(0)
                for key, p in replicas._partitions.items():
                    assert p.leader_epoch >= epochs[key]
                    epochs[key] = p.leader_epoch
            return roles(replicas)

    assert asyncio.run(main()) == {(name, p.partition): (p.leader_id == 1, p.leader_id, p.leader_epoch, p.isr)
                                   for name in NAMES for p in newer.topics[name].partitions}


def test_an_acks_all_append_on_a_leadership_a_queued_slice_takes_away_is_never_acknowledged(tmp_path):
    last = NAMES[-1]
    moved = image(*(topic(name, PARTITIONS, epoch=1) for name in NAMES), version=2)  # every leader moves on
    led = next(p.partition for p in FIRST.topics[last].partitions if p.leader_id == 1)

    async def main():
        async with broker(tmp_path) as (_, metadata, replicas):
            await hosting(metadata, replicas)
            append = asyncio.get_running_loop().create_task(
                replicas.append(last, led, build_batch(), required_acks=-1, timeout_ms=60_000))
            await until(lambda: replicas.replica(last, led).log_end_offset == 1)
            metadata.set_image(moved)
            assert replicas._queued and replicas.replica(last, led).is_leader  # its slice comes later
            with pytest.raises(NotLeaderOrFollowerError):
                await append
            assert not replicas.replica(last, led).is_leader

    asyncio.run(main())


def test_the_isr_check_proposes_nothing_for_the_fenced_broker_while_the_fence_is_queued(tmp_path):
    """The fence already took broker 3 out of every ISR; a queued leader still holding it must not propose that
    (refused for its stale partition epoch, for thousands of partitions), nor may an applied one."""
    async def main():
        async with broker(tmp_path) as (_, metadata, replicas):
            await hosting(metadata, replicas)
            metadata.set_image(FENCE)
            while not replicas._role_slicer.done():
                replicas.maybe_shrink_isr()
                assert not [p for p in replicas._partitions.values() if p.pending_isr is not None]
                await asyncio.sleep(0)
            assert replicas._fenced == {3}  # once every slice is applied
            return roles(replicas)

    assert asyncio.run(main()) == {(name, p.partition): (p.leader_id == 1, p.leader_id, p.leader_epoch, p.isr)
                                   for name in NAMES for p in FENCE.topics[name].partitions}


def test_a_step_takes_slices_for_up_to_its_time_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(replica_manager, "ROLE_STEP_MS", 60_000)

    async def main():
        async with broker(tmp_path) as (_, metadata, replicas):
            await hosting(metadata, replicas)
            metadata.set_image(FENCE)
            assert replicas._queued
            await asyncio.sleep(0)
            await asyncio.sleep(0)  # the slicer's first step has run: every queued slice within its budget
            assert not replicas._queued
            return roles(replicas)

    assert asyncio.run(main()) == {(name, p.partition): (p.leader_id == 1, p.leader_id, p.leader_epoch, p.isr)
                                   for name in NAMES for p in FENCE.topics[name].partitions}


def test_the_state_the_slices_created_ends_up_frozen_out_of_gc(tmp_path):
    async def main():
        async with broker(tmp_path) as (_, metadata, replicas):
            await hosting(metadata, replicas)
            metadata.set_image(FENCE)
            followers = [p.followers for p in replicas._partitions.values() if p.is_leader]
            frozen = gc.get_freeze_count()
            await until(lambda: replicas._role_slicer.done())
            assert gc.get_freeze_count() > frozen
            collected = {id(o) for o in gc.get_objects()}  # the collected generations: frozen objects are not there
            new = [p.followers for p in replicas._partitions.values() if p.is_leader]
            assert len(new) > len(followers) and not any(id(f) in collected for f in new)

    try:
        asyncio.run(main())
    finally:
        gc.unfreeze()
