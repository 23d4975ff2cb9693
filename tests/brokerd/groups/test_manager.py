"""GroupManager over real storage and replication: loading a `__consumer_offsets` partition (compressed
batches included), leadership loss and epoch changes, acks=all writes, the timer (session expiry and the
offsets retention check) and the on-demand creation of the topic."""

import asyncio
import time

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from brokerd.groups import errors
from brokerd.groups.api import GroupState, JoinGroupRequest, OffsetCommitRequest, OffsetToCommit, SyncGroupRequest
from kafkaspec.consumer_offsets import OffsetCommitKey, OffsetCommitValue, encode_key, encode_value, partition_for
from kafkaspec.topic_names import CONSUMER_OFFSETS_TOPIC
from tests.brokerd.groups.stack import NODE, ScriptedMetadata, group_stack, offsets_image, with_settings

GZIP = 1


def offset_record(group: str, topic: str, partition: int, offset: int | None) -> tuple[bytes, bytes | None]:
    value = None if offset is None else encode_value(OffsetCommitValue(offset, f"m{offset}", 1_700_000_000_000))
    return encode_key(OffsetCommitKey(group, topic, partition)), value


def kafka_python_batch(records, codec: int) -> bytes:
    builder = DefaultRecordBatchBuilder(2, codec, 0, -1, -1, -1, 1 << 30)
    for delta, (key, value) in enumerate(records):
        builder.append(delta, 1_700_000_000_000, key, value, [])
    return bytes(builder.build())


async def until(condition, timeout_s: float = 5.0, message: str = "condition"):
    """Poll `condition` on the event loop until truthy (returned) or fail at the deadline."""
    deadline = time.monotonic() + timeout_s
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {message}")
        await asyncio.sleep(0.005)
    return value


def loaded(stack, group: str) -> bool:
    try:
        stack.groups.coordinator_for(group).list_groups()
        return True
    except errors.CoordinatorLoadInProgressError:
        return False


def run(coroutine) -> None:
    asyncio.run(coroutine)


def test_load_replays_the_log_compressed_batches_and_tombstones_included(tmp_path):
    async def scenario():
        async with group_stack(tmp_path) as stack:
            await stack.groups.find_coordinator("g")
            index = partition_for("g", 3)
            partition = stack.replicas.leader_partition(CONSUMER_OFFSETS_TOPIC, index)
            first = [offset_record("g", "t", 0, 5), offset_record("g", "t", 1, 7)]
            second = [offset_record("g", "t", 0, 9), offset_record("g", "t", 1, None)]
            partition.append_as_leader(kafka_python_batch(first, GZIP))
            partition.append_as_leader(kafka_python_batch(second, 0))
        async with group_stack(tmp_path) as stack:  # a restart: the partition is loaded from its log
            with pytest.raises(errors.CoordinatorLoadInProgressError):
                stack.groups.coordinator_for("g").fetch_offsets("g", None)
            assert stack.groups.list_groups()[1] == "COORDINATOR_LOAD_IN_PROGRESS"
            await until(lambda: loaded(stack, "g"), message="the partition to load")
            offsets = stack.groups.coordinator_for("g").fetch_offsets("g", None)
            assert {tp: (v.offset, v.metadata) for tp, v in offsets.items()} == {("t", 0): (9, "m9")}
            assert stack.groups.list_groups() == ([stack.groups.coordinator_for("g").list_groups()[0]], None)

    run(scenario())


def test_commits_are_written_acks_all_and_survive_a_restart(tmp_path):
    async def scenario():
        async with group_stack(tmp_path) as stack:
            await stack.groups.find_coordinator("g")
            await until(lambda: loaded(stack, "g"))
            coordinator = stack.groups.coordinator_for("g")
            result = await coordinator.commit_offsets(OffsetCommitRequest("g", -1, "", None, {
                ("t", 0): OffsetToCommit(42, "meta")}))
            assert result == {("t", 0): None}
            partition = stack.replicas.leader_partition(CONSUMER_OFFSETS_TOPIC, partition_for("g", 3))
            assert partition.high_watermark == partition.log_end_offset == 1
        async with group_stack(tmp_path) as stack:
            await until(lambda: loaded(stack, "g"))
            [value] = stack.groups.coordinator_for("g").fetch_offsets("g", [("t", 0)]).values()
            assert (value.offset, value.metadata) == (42, "meta")

    run(scenario())


def test_other_brokers_groups_are_not_coordinated_here(tmp_path):
    async def scenario():
        async with group_stack(tmp_path) as stack:
            with pytest.raises(errors.NotCoordinatorError):  # no __consumer_offsets yet
                stack.groups.coordinator_for("g")
            metadata = ScriptedMetadata(offsets_image(3, leader=2, isr=(2,), replicas=(2,)))
        async with group_stack(tmp_path / "b", metadata=metadata) as stack:
            with pytest.raises(errors.NotCoordinatorError):
                stack.groups.coordinator_for("g")
            assert stack.groups.list_groups() == ([], None)

    run(scenario())


def test_leadership_loss_unloads_and_a_new_epoch_reloads(tmp_path):
    async def scenario():
        metadata = ScriptedMetadata(offsets_image(1, leader_epoch=3, replicas=(1, 2)))
        async with group_stack(tmp_path, metadata=metadata) as stack:
            await until(lambda: loaded(stack, "g"))
            first = stack.groups.coordinator_for("g")
            join = first.join_group(JoinGroupRequest("g", "", None, "c", "/h", 10_000, 10_000, "consumer",
                                                     (("range", b""),), require_known_member_id=False))
            metadata.set_image(offsets_image(1, leader=2, leader_epoch=4, isr=(1, 2), replicas=(1, 2)))
            with pytest.raises(errors.NotCoordinatorError):
                await join  # parked in the initial rebalance delay; answered when leadership moved
            with pytest.raises(errors.NotCoordinatorError):
                stack.groups.coordinator_for("g")
            metadata.set_image(offsets_image(1, leader=1, leader_epoch=5, replicas=(1, 2)))
            await until(lambda: loaded(stack, "g"))
            assert stack.groups.coordinator_for("g") is not first

    run(scenario())


def test_writes_need_min_insync_replicas_and_the_isr_acknowledging(tmp_path):
    async def scenario():
        metadata = ScriptedMetadata(offsets_image(1, replicas=(1, 2), configs={"min.insync.replicas": "2"}))
        async with group_stack(tmp_path, metadata=metadata) as stack:
            await until(lambda: loaded(stack, "g"))
            commit = OffsetCommitRequest("g", -1, "", None, {("t", 0): OffsetToCommit(1)})
            coordinator = stack.groups.coordinator_for("g")
            # ISR {1} < min.insync.replicas 2: refused before appending (Kafka: NOT_ENOUGH_REPLICAS).
            assert await coordinator.commit_offsets(commit) == {("t", 0): "COORDINATOR_NOT_AVAILABLE"}
            assert stack.replicas.leader_partition(CONSUMER_OFFSETS_TOPIC, 0).log_end_offset == 0
            # ISR {1, 2} but broker 2 never fetches: offsets.commit.timeout.ms passes (REQUEST_TIMED_OUT).
            metadata.set_image(offsets_image(1, replicas=(1, 2), isr=(1, 2), configs={"min.insync.replicas": "2"}))
            started = time.monotonic()
            assert await coordinator.commit_offsets(commit) == {("t", 0): "COORDINATOR_NOT_AVAILABLE"}
            assert time.monotonic() - started >= 0.3
            assert coordinator.fetch_offsets("g", [("t", 0)]) == {("t", 0): None}

    run(scenario())


def test_the_timer_expires_sessions_without_polling(tmp_path):
    async def scenario():
        async with group_stack(tmp_path) as stack:
            await stack.groups.find_coordinator("g")
            await until(lambda: loaded(stack, "g"))
            coordinator = stack.groups.coordinator_for("g")
            joined = await coordinator.join_group(JoinGroupRequest(
                "g", "", None, "c", "/h", 60, 1_000, "consumer", (("range", b""),), require_known_member_id=False))
            await coordinator.sync_group(SyncGroupRequest("g", joined.generation_id, joined.member_id, None,
                                                          {joined.member_id: b"a"}))
            assert coordinator.describe_group("g").state is GroupState.STABLE
            # No heartbeat: the 60 ms session expires and the group empties (the timer's only wake-up source
            # is the deadline the coordinator reported).
            await until(lambda: coordinator.describe_group("g").state is GroupState.EMPTY, 2.0,
                        message="the session to expire")

    run(scenario())


def test_the_retention_check_removes_expired_offsets(tmp_path):
    async def scenario():
        settings = with_settings(offsets_retention_check_interval_ms=30)
        async with group_stack(tmp_path, settings) as stack:
            await stack.groups.find_coordinator("g")
            await until(lambda: loaded(stack, "g"))
            coordinator = stack.groups.coordinator_for("g")
            await coordinator.commit_offsets(OffsetCommitRequest("g", -1, "", None, {
                ("t", 0): OffsetToCommit(3)}, retention_time_ms=1))  # OffsetCommit v2-v4 retention time
            await until(lambda: coordinator.fetch_offsets("g", None) == {}, 2.0, message="the offset to expire")
            partition = stack.replicas.leader_partition(CONSUMER_OFFSETS_TOPIC, partition_for("g", 3))
            await until(lambda: partition.high_watermark == 2, message="the tombstone")

    run(scenario())


def test_the_topic_is_created_once_with_kafkas_configs(tmp_path):
    async def scenario():
        async with group_stack(tmp_path) as stack:
            endpoints = await asyncio.gather(*(stack.groups.find_coordinator(f"g{i}") for i in range(5)))
            assert {e.node_id for e in endpoints} == {NODE.node_id}
            topic = stack.metadata.image.topics[CONSUMER_OFFSETS_TOPIC]
            assert len(topic.partitions) == 3
            assert dict(topic.configs) == {"cleanup.policy": "compact", "segment.bytes": "104857600",
                                           "compression.type": "producer"}

    run(scenario())


def test_no_topic_while_fewer_brokers_are_alive_than_its_replication_factor(tmp_path):
    async def scenario():
        async with group_stack(tmp_path, with_settings(offsets_topic_replication_factor=3)) as stack:
            with pytest.raises(errors.CoordinatorNotAvailableError, match="1 alive brokers"):
                await stack.groups.find_coordinator("g")
            assert CONSUMER_OFFSETS_TOPIC not in stack.metadata.image.topics

    run(scenario())
