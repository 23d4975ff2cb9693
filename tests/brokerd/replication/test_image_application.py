"""How the replica manager applies an image. It creates the logs an image brings on a worker thread while serving
(the event loop keeps serving; the replicas appear once their logs are durable), a few in place only at start,
and a log whose replica left the image while it was being created is deleted, not left behind. A change visits
only the replicas of the topics it changed (a delta shares the others) and the followers of a broker whose endpoint
moved (tests/brokerd/replication/test_sliced_role_application.py has the races)."""

import asyncio
import dataclasses
import gc
import uuid

from brokerd.clock import ManualClock
from brokerd.metadata.image import BrokerEndpoint, ClusterImage, PartitionAssignment, TopicMetadata
from brokerd.replication.replica_manager import CREATE_OFF_LOOP_MIN_LOGS, ReplicaManager
from brokerd.storage import LogManager, topic_id_file
from kafkaspec.replication_throttles import ALL_PARTITIONS
from tests.brokerd.groups.stack import ScriptedMetadata

BROKERS = (BrokerEndpoint(1, "127.0.0.1", 1),)
MANY = CREATE_OFF_LOOP_MIN_LOGS * 3


def image(partitions: dict[str, int]) -> ClusterImage:
    topics = {name: TopicMetadata(name, str(uuid.uuid5(uuid.NAMESPACE_OID, name)),
                                  tuple(PartitionAssignment(p, 1, 0, (1,), (1,), 0) for p in range(count)))
              for name, count in partitions.items()}
    return ClusterImage("cluster", 1, BROKERS, topics)


async def until(condition, timeout_s: float = 10.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.005)


def run(tmp_path, scenario) -> None:
    async def main():
        logs = LogManager([tmp_path / "logs"], {}, ManualClock())
        logs.startup()
        metadata = ScriptedMetadata(image({}))
        replicas = ReplicaManager(logs, metadata, node_id=1, clock=ManualClock())
        replicas.start()
        try:
            await scenario(logs, metadata, replicas)
        finally:
            await replicas.stop()
            logs.shutdown()

    asyncio.run(main())


def test_new_logs_are_created_off_the_loop_while_serving_whatever_their_number(tmp_path):
    async def scenario(logs, metadata, replicas):
        topics = {}
        for name, count in (("one", 1), ("few", CREATE_OFF_LOOP_MIN_LOGS - 1), ("many", MANY)):
            topics[name] = count
            metadata.set_image(image(topics))
            assert replicas.replica(name, 0) is None  # being created: the loop was not held for it
            await replicas.created()
            assert all(replicas.leader_partition(name, p).is_leader for p in range(count))
            topic_id = uuid.uuid5(uuid.NAMESPACE_OID, name)
            assert all(topic_id_file.read(logs.get_log(name, p).dir) == topic_id for p in range(count))

    run(tmp_path, scenario)


def test_at_start_few_new_logs_are_created_in_place_many_off_the_loop(tmp_path):
    async def main():
        logs = LogManager([tmp_path / "logs"], {}, ManualClock())
        logs.startup()
        few, many = CREATE_OFF_LOOP_MIN_LOGS - 1, CREATE_OFF_LOOP_MIN_LOGS
        replicas = ReplicaManager(logs, ScriptedMetadata(image({"few": few})), node_id=1, clock=ManualClock())
        replicas.start()  # nothing is served yet: a few logs cost less than the worker thread's round trip
        try:
            assert all(replicas.leader_partition("few", p).is_leader for p in range(few))
        finally:
            await replicas.stop()
        replicas = ReplicaManager(logs, ScriptedMetadata(image({"few": few, "many": many})), node_id=1,
                                  clock=ManualClock())
        replicas.start()
        try:
            assert replicas.replica("many", 0) is None  # the loop already serves heartbeats meanwhile
            await replicas.created()
            assert all(replicas.leader_partition("many", p).is_leader for p in range(many))
        finally:
            await replicas.stop()
            logs.shutdown()

    asyncio.run(main())


def test_the_replicas_of_a_batch_created_off_the_loop_end_up_frozen_out_of_gc(tmp_path):
    async def scenario(logs, metadata, replicas):
        frozen = gc.get_freeze_count()
        metadata.set_image(image({"many": MANY}))
        await until(lambda: not replicas._creations)
        assert gc.get_freeze_count() > frozen
        collected = {id(o) for o in gc.get_objects()}  # the collected generations: frozen objects are not there
        assert not any(id(p) in collected for p in replicas.partitions())

    try:
        run(tmp_path, scenario)
    finally:
        gc.unfreeze()


def test_a_log_whose_topic_left_while_it_was_created_is_deleted(tmp_path):
    async def scenario(logs, metadata, replicas):
        metadata.set_image(image({"gone": MANY}))
        metadata.set_image(image({"kept": 1}))  # deleted before its logs were created
        await until(lambda: not replicas._creations)
        assert [tp for tp, _ in logs.logs()] == [("kept", 0)]
        assert sorted(p.name for p in (tmp_path / "logs").iterdir() if p.is_dir()) == ["kept-0"]

    run(tmp_path, scenario)


def test_a_change_visits_only_the_replicas_of_the_topics_it_changed(tmp_path, monkeypatch):
    async def scenario(logs, metadata, replicas):
        metadata.set_image(image({"a": 3, "b": 3}))
        await replicas.created()
        visited = []
        real = ReplicaManager._become_leader
        monkeypatch.setattr(ReplicaManager, "_become_leader",
                            lambda self, partition, assignment: (visited.append(partition.key),
                                                                 real(self, partition, assignment))[1])
        before = metadata.image
        moved = dataclasses.replace(before.topics["a"].partitions[1], leader_epoch=1)
        a = dataclasses.replace(before.topics["a"], partitions=(before.topics["a"].partitions[0], moved,
                                                                before.topics["a"].partitions[2]))
        metadata.set_image(dataclasses.replace(before, topics={"a": a, "b": before.topics["b"]}))
        assert sorted(visited) == [("a", 0), ("a", 1), ("a", 2)]
        assert replicas.leader_partition("a", 1).leader_epoch == 1
        visited.clear()
        metadata.set_image(dataclasses.replace(metadata.image, brokers=(*BROKERS, BrokerEndpoint(2, "h", 2))))
        assert visited == []  # a broker no replica here follows: nothing to look at
        metadata.set_image(dataclasses.replace(metadata.image, brokers=(
            dataclasses.replace(BROKERS[0], fenced=True), BrokerEndpoint(2, "h", 2))))
        assert visited == []  # a fence changes no replica's role
        metadata.set_image(dataclasses.replace(metadata.image, broker_configs={"default": {"x": "1"}}))
        assert len(visited) == 6  # the broker configs changed: every replica is looked at again

    run(tmp_path, scenario)


class _Topics(dict):
    """Topics that, while `walks_refused`, may be looked up by name but not walked."""

    walks_refused = False

    def _refuse_walk(self) -> None:
        assert not _Topics.walks_refused, "walked every topic of the image"

    def __iter__(self):
        self._refuse_walk()
        return dict.__iter__(self)

    def keys(self):
        self._refuse_walk()
        return dict.keys(self)

    def values(self):
        self._refuse_walk()
        return dict.values(self)

    def items(self):
        self._refuse_walk()
        return dict.items(self)


def test_a_delta_is_applied_without_a_pass_over_the_topics(tmp_path):
    """A delta's image names the topics it replaced (`ClusterImage.derived_from`): roles and throttled replicas are
    brought up to date from those alone, and end as an application of the whole image gives them (the oracle)."""
    def apply_delta(metadata, **replaced: TopicMetadata) -> None:
        before = metadata.image
        after = ClusterImage("cluster", 1, BROKERS, _Topics({**before.topics, **replaced}), before.metadata_version + 1,
                             derived_from=(before, replaced.keys()))
        _Topics.walks_refused = True
        try:
            metadata.set_image(after)
        finally:
            _Topics.walks_refused = False

    def quotas(replicas) -> list:
        return [dict(q.throttled) for q in (replicas.leader_quota, replicas.follower_quota)]

    async def scenario(logs, metadata, replicas):
        throttle = {"leader.replication.throttled.replicas": "0:1,2:1", "follower.replication.throttled.replicas": "*"}
        start = image({"a": 3, "b": 3})
        metadata.set_image(dataclasses.replace(start, topics={
            **start.topics, "b": dataclasses.replace(start.topics["b"], configs=throttle)}))
        await replicas.created()
        a = metadata.image.topics["a"]
        moved = dataclasses.replace(a.partitions[1], leader_epoch=1)
        apply_delta(metadata, a=dataclasses.replace(a, partitions=(a.partitions[0], moved, a.partitions[2]), configs={
            **throttle, "follower.replication.throttled.replicas": "1:1"}))
        assert replicas.leader_partition("a", 1).leader_epoch == 1
        assert quotas(replicas) == [{"a": {0, 2}, "b": {0, 2}}, {"a": {1}, "b": ALL_PARTITIONS}]
        apply_delta(metadata, a=dataclasses.replace(a, partitions=(a.partitions[0], moved, a.partitions[2])))
        assert quotas(replicas) == [{"b": {0, 2}}, {"b": ALL_PARTITIONS}]
        replicas._configure_quotas(metadata.image, None)  # every topic read again
        assert quotas(replicas) == [{"b": {0, 2}}, {"b": ALL_PARTITIONS}]

    run(tmp_path, scenario)


def test_followers_left_without_a_leader_get_one_line_per_image(tmp_path, caplog):
    count = CREATE_OFF_LOOP_MIN_LOGS - 1
    topic = TopicMetadata("x", str(uuid.uuid5(uuid.NAMESPACE_OID, "x")),
                          tuple(PartitionAssignment(p, -1, 3, (1, 2), (2,), 3) for p in range(count)))

    async def scenario(logs, metadata, replicas):
        with caplog.at_level("INFO", logger="brokerd.replication.replica_manager"):
            metadata.set_image(ClusterImage("cluster", 1, BROKERS, {"x": topic}))
            await replicas.created()
        lines = [r.getMessage() for r in caplog.records if "not fetching" in r.getMessage()]
        assert lines == [f"metadata version 0: {count} partition(s) without a leader; not fetching them "
                         "(x-0, x-1, x-2, x-3, x-4, ...)"]

    run(tmp_path, scenario)
