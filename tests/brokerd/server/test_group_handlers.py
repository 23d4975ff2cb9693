"""The group handlers over a real standalone group stack: each request through its handler, each response
encoded at its wire version. Covers the error mapping (GroupError → code) that lives only in handlers."""

import asyncio
import datetime
import io
import struct

from kio.schema.delete_groups.v1.request import DeleteGroupsRequest
from kio.schema.describe_groups.v3.request import DescribeGroupsRequest
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v1.request import FindCoordinatorRequest
from kio.schema.heartbeat.v1.request import HeartbeatRequest
from kio.schema.join_group.v5.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.leave_group.v1.request import LeaveGroupRequest
from kio.schema.list_groups.v1.request import ListGroupsRequest
from kio.schema.metadata.v4.request import MetadataRequest
from kio.schema.offset_commit.v3.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.offset_delete.v0.request import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from kio.schema.offset_fetch.v3.request import OffsetFetchRequest, OffsetFetchRequestTopic
from kio.schema.produce.v7.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.sync_group.v3.request import SyncGroupRequest, SyncGroupRequestAssignment
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i8, i32, i64

from brokerd.config import build_config
from brokerd.metadata.image import NewTopic
from brokerd.protocol.api_versions import SUPPORTED_APIS
from brokerd.protocol.messages import RequestHeader, message_codec
from brokerd.protocol.responses import response_schema
from brokerd.records.builder import build_batch
from brokerd.server.context import BrokerServices, RequestContext
from brokerd.server.handlers import HANDLERS
from brokerd.server.response import RawResponse
from kafkaspec.topic_names import CONSUMER_OFFSETS_TOPIC
from tests.brokerd.groups.stack import NODE, group_stack

TOPIC = "orders"
SUBSCRIPTION = struct.pack(">hi", 0, 1) + struct.pack(">h", len(TOPIC)) + TOPIC.encode() + struct.pack(">i", -1)


class Client:
    """Sends kio requests through HANDLERS the way the dispatcher does (encoded, then decoded by the request's
    codec: Produce is read by hand), and encodes (or, when laid out by hand, decodes) every response."""

    def __init__(self, services: BrokerServices) -> None:
        self.services = services

    async def send(self, request):
        api_key = type(request).__api_key__
        version = type(request).__version__
        assert version in SUPPORTED_APIS[api_key]
        codec = message_codec(api_key, version)
        context = RequestContext(self.services, RequestHeader(api_key, version, 1, "test-client"), "127.0.0.1",
                                 response_schema(codec.response_type))
        encoded = io.BytesIO()
        entity_writer(type(request))(encoded, request)
        response = await HANDLERS[api_key](codec.decode_request(encoded.getvalue(), 0), context)
        if isinstance(response, RawResponse):  # laid out by hand (Produce): read it back with kio's schema
            body = b"".join(response.chunks)
            offset = 1 if codec.flexible else 0  # the response header's tag section
            return entity_reader(codec.response_type)(body, offset)[0]
        codec.encode_response(1, response)
        return response


def ms(value: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=value)


def join(group: str, member_id: str = "") -> JoinGroupRequest:
    return JoinGroupRequest(group_id=group, session_timeout=ms(10_000), rebalance_timeout=ms(10_000),
                            member_id=member_id, protocol_type="consumer",
                            protocols=(JoinGroupRequestProtocol(name="range", metadata=SUBSCRIPTION),))


def commit(group: str, generation: int, member_id: str, *partitions: tuple[str, int, int]) -> OffsetCommitRequest:
    topics = sorted({t for t, _, _ in partitions})
    return OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=i32(generation), member_id=member_id,
                               topics=tuple(OffsetCommitRequestTopic(name=t, partitions=tuple(
                                   OffsetCommitRequestPartition(partition_index=i32(p), committed_offset=i64(o),
                                                                committed_metadata="m")
                                   for tt, p, o in partitions if tt == t)) for t in topics))


def scenario(tmp_path, body) -> None:
    async def main():
        async with group_stack(tmp_path) as stack:
            await stack.metadata.create_topic(NewTopic(TOPIC, 2, 1, {}))
            config = build_config({"listeners": f"PLAINTEXT://{NODE.host}:{NODE.port}"}, environ={})
            await body(Client(BrokerServices(config, stack.metadata, stack.replicas, NODE, stack.groups)))

    asyncio.run(main())


async def coordinator_loaded(client: Client, group: str) -> None:
    """FindCoordinator (creating the topic), then wait for the partition to load (OffsetFetch answers)."""
    found = await client.send(FindCoordinatorRequest(key=group))
    assert (found.error_code, found.node_id, found.host, found.port) == (ErrorCode.none, 1, NODE.host, NODE.port)
    for _ in range(1000):
        fetched = await client.send(OffsetFetchRequest(group_id=group, topics=None))
        if fetched.error_code != ErrorCode.coordinator_load_in_progress:
            assert fetched.error_code == ErrorCode.none
            return
        await asyncio.sleep(0.005)
    raise AssertionError("the coordinator did not load")


def test_a_member_joins_syncs_commits_and_leaves(tmp_path):
    async def body(client: Client):
        not_yet = await client.send(join("g"))
        assert not_yet.error_code == ErrorCode.not_coordinator  # __consumer_offsets does not exist yet
        await coordinator_loaded(client, "g")

        required = await client.send(join("g"))
        assert required.error_code == ErrorCode.member_id_required and required.member_id.startswith("test-client-")
        joined = await client.send(join("g", required.member_id))
        assert (joined.error_code, joined.generation_id, joined.protocol_name, joined.leader) == (
            ErrorCode.none, 1, "range", required.member_id)
        assert [(m.member_id, m.metadata) for m in joined.members] == [(required.member_id, SUBSCRIPTION)]
        member = joined.member_id

        synced = await client.send(SyncGroupRequest(group_id="g", generation_id=i32(1), member_id=member,
                                                    assignments=(SyncGroupRequestAssignment(member_id=member,
                                                                                            assignment=b"mine"),)))
        assert (synced.error_code, synced.assignment) == (ErrorCode.none, b"mine")
        beat = await client.send(HeartbeatRequest(group_id="g", generation_id=i32(1), member_id=member))
        assert beat.error_code == ErrorCode.none
        stale = await client.send(HeartbeatRequest(group_id="g", generation_id=i32(0), member_id=member))
        assert stale.error_code == ErrorCode.illegal_generation

        committed = await client.send(commit("g", 1, member, (TOPIC, 0, 10), (TOPIC, 1, 20), ("nope", 0, 1)))
        codes = {(t.name, p.partition_index): p.error_code for t in committed.topics for p in t.partitions}
        assert codes == {(TOPIC, 0): ErrorCode.none, (TOPIC, 1): ErrorCode.none,
                         ("nope", 0): ErrorCode.unknown_topic_or_partition}
        fenced = await client.send(commit("g", 7, member, (TOPIC, 0, 11)))
        assert fenced.topics[0].partitions[0].error_code == ErrorCode.illegal_generation

        described = (await client.send(DescribeGroupsRequest(groups=("g", "unknown"),
                                                             include_authorized_operations=True))).groups
        assert (described[0].group_state, described[0].protocol_type, described[0].protocol_data) == (
            "Stable", "consumer", "range")
        assert [(m.member_id, m.client_id, m.client_host, m.member_assignment) for m in described[0].members] == [
            (member, "test-client", "/127.0.0.1", b"mine")]
        assert (described[1].error_code, described[1].group_state, described[1].members) == (
            ErrorCode.none, "Dead", ())
        listed = await client.send(ListGroupsRequest())
        assert [(g.group_id, g.protocol_type) for g in listed.groups] == [("g", "consumer")]

        busy = await client.send(DeleteGroupsRequest(groups_names=("g",)))
        assert busy.results[0].error_code == ErrorCode.non_empty_group
        subscribed = await client.send(OffsetDeleteRequest(group_id="g", topics=(OffsetDeleteRequestTopic(
            name=TOPIC, partitions=(OffsetDeleteRequestPartition(partition_index=i32(0)),)),)))
        assert subscribed.topics[0].partitions[0].error_code == ErrorCode.group_subscribed_to_topic

        left = await client.send(LeaveGroupRequest(group_id="g", member_id=member))
        assert left.error_code == ErrorCode.none
        again = await client.send(LeaveGroupRequest(group_id="g", member_id=member))
        assert again.error_code == ErrorCode.unknown_member_id

        fetched = await client.send(OffsetFetchRequest(group_id="g", topics=(OffsetFetchRequestTopic(
            name=TOPIC, partition_indexes=(i32(1), i32(0))), OffsetFetchRequestTopic(
            name="other", partition_indexes=(i32(3),)))))
        assert [(t.name, p.partition_index, p.committed_offset, p.metadata, p.error_code)
                for t in fetched.topics for p in t.partitions] == [
            (TOPIC, 1, 20, "m", ErrorCode.none), (TOPIC, 0, 10, "m", ErrorCode.none),
            ("other", 3, -1, "", ErrorCode.none)]

        deleted = await client.send(OffsetDeleteRequest(group_id="g", topics=(OffsetDeleteRequestTopic(
            name=TOPIC, partitions=(OffsetDeleteRequestPartition(partition_index=i32(0)),)),)))
        assert (deleted.error_code, deleted.topics[0].partitions[0].error_code) == (ErrorCode.none, ErrorCode.none)
        everything = await client.send(OffsetFetchRequest(group_id="g", topics=None))
        assert [(t.name, [(p.partition_index, p.committed_offset) for p in t.partitions])
                for t in everything.topics] == [(TOPIC, [(1, 20)])]

        gone = await client.send(DeleteGroupsRequest(groups_names=("g", "never")))
        assert [r.error_code for r in gone.results] == [ErrorCode.none, ErrorCode.group_id_not_found]
        missing = await client.send(OffsetDeleteRequest(group_id="g", topics=()))
        assert missing.error_code == ErrorCode.group_id_not_found

    scenario(tmp_path, body)


def test_simple_commits_and_request_level_errors(tmp_path):
    async def body(client: Client):
        txn = await client.send(FindCoordinatorRequest(key="tx", key_type=i8(1)))
        assert (txn.error_code, txn.node_id) == (ErrorCode.coordinator_not_available, -1)
        bad = await client.send(FindCoordinatorRequest(key="g", key_type=i8(7)))
        assert bad.error_code == ErrorCode.invalid_request
        fetched = await client.send(OffsetFetchRequest(group_id="g", topics=(OffsetFetchRequestTopic(
            name=TOPIC, partition_indexes=(i32(0),)),)))
        assert fetched.error_code == fetched.topics[0].partitions[0].error_code == ErrorCode.not_coordinator
        await coordinator_loaded(client, "g")

        simple = await client.send(commit("g", -1, "", (TOPIC, 0, 5)))  # a tool committing for an Empty group
        assert simple.topics[0].partitions[0].error_code == ErrorCode.none
        unknown_member = await client.send(commit("g", 1, "ghost", (TOPIC, 0, 6)))
        assert unknown_member.topics[0].partitions[0].error_code == ErrorCode.unknown_member_id
        invalid = await client.send(join(""))
        assert invalid.error_code == ErrorCode.invalid_group_id
        short = await client.send(JoinGroupRequest(group_id="g", session_timeout=ms(1), rebalance_timeout=ms(1000),
                                                   member_id="", protocol_type="consumer", protocols=()))
        assert short.error_code == ErrorCode.invalid_session_timeout
        sync_unknown = await client.send(SyncGroupRequest(group_id="g", generation_id=i32(1), member_id="x",
                                                          assignments=()))
        assert sync_unknown.error_code == ErrorCode.unknown_member_id
        assert (await client.send(ListGroupsRequest())).groups[0].protocol_type == ""

    scenario(tmp_path, body)


def test_the_internal_topic_is_marked_internal_and_clients_cannot_produce_to_it(tmp_path):
    async def body(client: Client):
        await coordinator_loaded(client, "g")
        metadata = await client.send(MetadataRequest(topics=None, allow_auto_topic_creation=False))
        assert {t.name: t.is_internal for t in metadata.topics} == {CONSUMER_OFFSETS_TOPIC: True, TOPIC: False}
        assert len(next(t for t in metadata.topics if t.is_internal).partitions) == 3
        produced = await client.send(ProduceRequest(transactional_id=None, acks=-1, timeout=ms(1000), topic_data=(
            TopicProduceData(name=CONSUMER_OFFSETS_TOPIC, partition_data=(PartitionProduceData(
                index=i32(0), records=build_batch([(b"k", b"v")], 0)),)),)))
        assert produced.responses[0].partition_responses[0].error_code == ErrorCode.invalid_topic_exception
        assert client.services.replicas.leader_partition(CONSUMER_OFFSETS_TOPIC, 0).log_end_offset == 0

    scenario(tmp_path, body)
