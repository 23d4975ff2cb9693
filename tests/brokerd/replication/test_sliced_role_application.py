"""Replicas whose logs were created off the loop take their roles in slices (`ROLE_SLICE_REPLICAS` per loop
step), tested against an oracle: whatever image arrives while the slices run, the end state equals a fresh
replica manager applying the final image in one go (`CREATE_OFF_LOOP_MIN_LOGS` out of reach: every log created
in place, one `_apply`). No loop step gives more than a slice of replicas their role."""

import asyncio
import contextlib
import dataclasses
import uuid
from collections.abc import Callable

import pytest

from brokerd.clock import ManualClock
from brokerd.metadata.image import BrokerEndpoint, ClusterImage, PartitionAssignment, TopicMetadata
from brokerd.replication import replica_manager
from brokerd.replication.replica_manager import ReplicaManager
from brokerd.storage import LogManager, topic_id_file
from tests.brokerd.groups.stack import ScriptedMetadata

SLICE = 8
BROKERS = tuple(BrokerEndpoint(node, "127.0.0.1", 1) for node in (1, 2, 3))


def topic(name: str, count: int, epoch: int = 0, generation: int = 0, away: Callable[[int], bool] = lambda p: False
          ) -> TopicMetadata:
    """`count` partitions on brokers 1-3, led in turn by 1, 2, 3 (shifted by `epoch`); partitions `away(p)` are
    on brokers 2 and 3 only. `generation` > 0: the topic deleted and re-created under a new id."""
    def assignment(p: int) -> PartitionAssignment:
        replicas = (2, 3) if away(p) else (1, 2, 3)
        return PartitionAssignment(p, replicas[(p + epoch) % len(replicas)], epoch, replicas, replicas, epoch)

    return TopicMetadata(name, str(uuid.uuid5(uuid.NAMESPACE_OID, f"{name}/{generation}")),
                         tuple(assignment(p) for p in range(count)))


def image(*topics: TopicMetadata, brokers=BROKERS, version: int = 1) -> ClusterImage:
    return ClusterImage("cluster", 1, brokers, {t.name: t for t in topics}, metadata_version=version)


FIRST = image(topic("a", 40), topic("b", 24))
A, B = FIRST.topics["a"], FIRST.topics["b"]
MOVED_2 = tuple(dataclasses.replace(b, port=2) if b.node_id == 2 else b for b in BROKERS)
FENCED_3 = tuple(dataclasses.replace(b, fenced=True) if b.node_id == 3 else b for b in BROKERS)

RACES = {  # what arrives while the first image's replicas take their roles, in order
    "nothing": [],
    "leaders move": [image(topic("a", 40, epoch=1), B, version=2)],
    "topic deleted": [image(B, version=2)],
    "topic deleted and re-created": [image(topic("a", 40, generation=1), B, version=2)],
    "reassigned away in part": [image(topic("a", 40, away=lambda p: p % 3 == 0), B, version=2)],
    "a leader's broker moves": [image(A, B, brokers=MOVED_2, version=2)],
    "a broker fenced": [image(A, B, brokers=FENCED_3, version=2)],
    "a topic added": [image(A, B, topic("c", 16), version=2)],
    "two changes": [image(A, version=2), image(topic("a", 40, epoch=2), topic("b", 24, generation=1), version=3)],
}


def state(replicas: ReplicaManager, logs: LogManager) -> dict:
    """What an application of images leaves: each replica's role and where it fetches, every log with the topic
    id it was created for, the log directories on disk, the per-topic bookkeeping."""
    def fetching_from(key):
        return next(((f.source.node_id, f.source.host, f.source.port)
                     for f in replicas._fetchers.values() if key in f), None)

    return {
        "roles": {key: (p.is_leader, p.leader_id, p.leader_epoch, p.isr, p.replicas, fetching_from(key))
                  for key, p in replicas._partitions.items()},
        "logs": {key: topic_id_file.read(log.dir) for key, log in logs.logs()},
        "dirs": sorted(p.name for p in logs.log_dirs[0].path.iterdir() if p.is_dir()),
        "topic ids": dict(replicas._topic_ids),
        "min isr": dict(replicas._min_isr),
    }


async def until(condition, timeout_s: float = 20.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0)


async def settled(replicas: ReplicaManager) -> None:
    await until(lambda: not replicas._creations and not replicas._creating)


def one_shot(tmp_path, final: ClusterImage, monkeypatch) -> dict:
    """The oracle: a fresh broker applying `final` in one go."""
    async def main():
        with monkeypatch.context() as patch:
            patch.setattr(replica_manager, "CREATE_OFF_LOOP_MIN_LOGS", 10**9)
            logs = LogManager([tmp_path / "oracle"], {}, ManualClock())
            logs.startup()
            replicas = ReplicaManager(logs, ScriptedMetadata(final), node_id=1, clock=ManualClock())
            replicas.start()
            assert not replicas._creations
            try:
                return state(replicas, logs)
            finally:
                await replicas.stop()
                logs.shutdown()

    return asyncio.run(main())


@pytest.fixture(autouse=True)
def small_slices(monkeypatch):
    monkeypatch.setattr(replica_manager, "ROLE_SLICE_REPLICAS", SLICE)


@contextlib.asynccontextmanager
async def broker(tmp_path):
    """Broker 1 with no topic yet: its logs, its metadata (a script) and its replica manager, started."""
    logs = LogManager([tmp_path / "logs"], {}, ManualClock())
    logs.startup()
    metadata = ScriptedMetadata(image())
    replicas = ReplicaManager(logs, metadata, node_id=1, clock=ManualClock())
    replicas.start()
    try:
        yield logs, metadata, replicas
    finally:
        await replicas.stop()
        logs.shutdown()


@pytest.mark.parametrize("race", RACES.values(), ids=RACES.keys())
def test_images_arriving_while_slices_run_end_as_the_final_image_applied_at_once(tmp_path, monkeypatch, race):
    async def main():
        async with broker(tmp_path) as (logs, metadata, replicas):
            metadata.set_image(FIRST)
            assert not replicas._partitions and replicas._creating  # created off the loop
            await until(lambda: replicas._partitions)  # the first slice has been applied ...
            assert 0 < len(replicas._partitions) <= SLICE and replicas._creating  # ... and only the first
            for change in race:
                metadata.set_image(change)
            await settled(replicas)
            return state(replicas, logs)

    sliced = asyncio.run(main())
    assert sliced == one_shot(tmp_path, race[-1] if race else FIRST, monkeypatch)


def test_no_loop_step_gives_more_than_a_slice_of_replicas_their_role(tmp_path):
    async def main():
        async with broker(tmp_path) as (_, metadata, replicas):
            metadata.set_image(FIRST)
            seen = [0]
            while replicas._creations:  # one sample per loop step: this task and the slicer alternate
                await asyncio.sleep(0)
                seen.append(len(replicas._partitions))
            return seen

    seen = asyncio.run(main())
    steps = [after - before for before, after in zip(seen, seen[1:], strict=False) if after != before]
    assert seen[-1] == len(A.partitions) + len(B.partitions)
    assert max(steps) == SLICE and len(steps) == seen[-1] // SLICE


def test_stop_while_slices_run_is_clean_and_the_next_start_completes_the_image(tmp_path, monkeypatch):
    async def main():
        async with broker(tmp_path) as (logs, metadata, replicas):
            metadata.set_image(FIRST)
            await until(lambda: replicas._partitions)
            given = len(replicas._partitions)
            await replicas.stop()
            assert 0 < given < len(A.partitions) + len(B.partitions)  # stopped between two slices
            assert len(replicas._partitions) == given  # no slice ran after stop()
            assert not replicas._creations and not replicas._creating and not replicas._fetchers
            assert len(logs.logs()) == len(A.partitions) + len(B.partitions)  # kept for the next start
            restarted = ReplicaManager(logs, metadata, node_id=1, clock=ManualClock())
            restarted.start()
            try:
                await settled(restarted)
                return state(restarted, logs)
            finally:
                await restarted.stop()

    assert asyncio.run(main()) == one_shot(tmp_path, FIRST, monkeypatch)
