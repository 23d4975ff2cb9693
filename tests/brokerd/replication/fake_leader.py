"""A fake leader broker for `ReplicaFetcher` tests: a TCP server on 127.0.0.1 answering the three requests a
fetcher sends (OffsetForLeaderEpoch v3, Fetch v11, ListOffsets v2) from real leader `Partition`s, with
errors injected per partition. It records every request (time, api key, partitions asked) for the tests. With
`sessions`, Fetch requests go in a fetch session (KIP-227), kept as simply as a test needs: one session; an
incremental request updates the positions held and drops the forgotten partitions; an answer names the partitions
with records, an error or a high watermark not sent yet."""

import asyncio
import datetime
import struct
import time
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode
from kio.schema.fetch.v11.response import FetchableTopicResponse, FetchResponse, PartitionData
from kio.schema.list_offsets.v2.response import (
    ListOffsetsPartitionResponse,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from kio.schema.offset_for_leader_epoch.v3.response import (
    EpochEndOffset,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderTopicResult,
)
from kio.schema.types import TopicName
from kio.static.primitive import i32, i64

from brokerd.metadata.image import BrokerEndpoint
from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.messages import message_codec, parse_request_header, peek_api
from brokerd.replication.partition import Partition
from brokerd.storage import read_bytes

_SIZE = struct.Struct(">i")
NO_WAIT = datetime.timedelta(0)


@dataclass
class Received:
    at: float
    """time.monotonic() when the request arrived."""
    api_key: int
    partitions: list[tuple[str, int, int]]
    """(topic, partition, fetch offset or asked epoch) per partition."""
    forgotten: list[tuple[str, int]] = field(default_factory=list)
    log_start_offsets: list[int] = field(default_factory=list)
    """Fetch: the follower's log start offset per partition asked."""


@dataclass
class FakeLeader:
    node_id: int
    partitions: dict[tuple[str, int], Partition] = field(default_factory=dict)
    errors: dict[tuple[str, int], list[ErrorCode]] = field(default_factory=dict)
    """Per partition, error codes answered to the next Fetch/OffsetForLeaderEpoch requests (consumed in order)."""
    received: list[Received] = field(default_factory=list)
    accepts: list[float] = field(default_factory=list)
    close_on_accept: bool = False
    """Accept and hang up at once (a broker that is restarting)."""
    sessions: bool = False
    _held: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    """The session's partitions: (fetch offset, max bytes) each."""
    _sent_hw: dict[tuple[str, int], int] = field(default_factory=dict)
    port: int = 0
    _server: asyncio.Server | None = None
    _connections: dict[asyncio.StreamWriter, asyncio.Task] = field(default_factory=dict)

    @property
    def endpoint(self) -> BrokerEndpoint:
        return BrokerEndpoint(self.node_id, "127.0.0.1", self.port)

    async def start(self, port: int = 0) -> "FakeLeader":
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", port or self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._connections):
                writer.close()
            await asyncio.gather(*self._connections.values(), return_exceptions=True)
            await self._server.wait_closed()
            self._server = None

    def requests(self, api_key: int) -> list[Received]:
        return [r for r in self.received if r.api_key == api_key]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepts.append(time.monotonic())
        self._connections[writer] = asyncio.current_task()
        try:
            if self.close_on_accept:
                return
            while True:
                (size,) = _SIZE.unpack(await reader.readexactly(4))
                frame = await reader.readexactly(size)
                writer.write(await self._answer(frame))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._connections.pop(writer, None)
            writer.close()

    def _error(self, key: tuple[str, int]) -> ErrorCode:
        queued = self.errors.get(key)
        return queued.pop(0) if queued else ErrorCode.none

    async def _answer(self, frame: bytes) -> bytes:
        api_key, version, _ = peek_api(frame)
        codec = message_codec(api_key, version)
        assert codec is not None
        header, offset = parse_request_header(frame, codec.flexible)
        request = codec.decode_request(frame, offset)
        now = time.monotonic()
        if api_key == ApiKey.OFFSET_FOR_LEADER_EPOCH:
            asked = [(t.topic, int(p.partition), int(p.leader_epoch)) for t in request.topics for p in t.partitions]
            self.received.append(Received(now, api_key, asked))
            return codec.encode_response(header.correlation_id, self._epoch_ends(request))
        if api_key == ApiKey.FETCH:
            asked = [(t.topic, int(p.partition), int(p.fetch_offset)) for t in request.topics for p in t.partitions]
            forgotten = [(t.topic, int(p)) for t in request.forgotten_topics_data for p in t.partitions]
            log_starts = [int(p.log_start_offset) for t in request.topics for p in t.partitions]
            self.received.append(Received(now, api_key, asked, forgotten, log_starts))
            response = self._fetch(request)
            if not any(p.records for t in response.responses for p in t.partitions):
                await asyncio.sleep(0.01)  # a little of the long poll, so an idle fetcher does not spin
            return codec.encode_response(header.correlation_id, response)
        if api_key == ApiKey.LIST_OFFSETS:
            self.received.append(Received(now, api_key, [(t.name, int(p.partition_index), int(p.timestamp))
                                                         for t in request.topics for p in t.partitions]))
            return codec.encode_response(header.correlation_id, ListOffsetsResponse(throttle_time=NO_WAIT, topics=tuple(
                ListOffsetsTopicResponse(name=t.name, partitions=tuple(ListOffsetsPartitionResponse(
                    partition_index=p.partition_index, error_code=ErrorCode.none, timestamp=i64(-1),
                    offset=i64(self.partitions[(t.name, int(p.partition_index))].log_start_offset))
                    for p in t.partitions)) for t in request.topics)))
        raise AssertionError(f"a fetcher does not send api key {api_key}")

    def _epoch_ends(self, request) -> OffsetForLeaderEpochResponse:
        topics = []
        for topic in request.topics:
            results = []
            for asked in topic.partitions:
                key = (topic.topic, int(asked.partition))
                error = self._error(key)
                if error != ErrorCode.none:
                    results.append(EpochEndOffset(error_code=error, partition=asked.partition))
                    continue
                epoch, end = self.partitions[key].end_offset_for_epoch(int(asked.leader_epoch))
                results.append(EpochEndOffset(error_code=ErrorCode.none, partition=asked.partition,
                                              leader_epoch=i32(epoch), end_offset=i64(end)))
            topics.append(OffsetForLeaderTopicResult(topic=TopicName(topic.topic), partitions=tuple(results)))
        return OffsetForLeaderEpochResponse(throttle_time=NO_WAIT, topics=tuple(topics))

    def _fetch(self, request) -> FetchResponse:
        asked = {(t.topic, int(p.partition)): (int(p.fetch_offset), int(p.partition_max_bytes))
                 for t in request.topics for p in t.partitions}
        if not self.sessions:
            return self._fetch_from(request, asked, asked.keys(), 0)
        if int(request.session_epoch) == 0:
            self._held, self._sent_hw = {}, {}
        for topic in request.forgotten_topics_data:
            for index in topic.partitions:
                self._held.pop((topic.topic, int(index)), None)
        self._held.update(asked)
        return self._fetch_from(request, self._held, asked.keys(), 1)

    def _fetch_from(self, request, positions: dict[tuple[str, int], tuple[int, int]], named, session_id: int
                    ) -> FetchResponse:
        """The answer for `positions`: all of them outside a session (`session_id` 0); in one, those `named` by
        the request and those with records, an error or a high watermark not sent yet."""
        by_topic: dict[str, list[PartitionData]] = {}
        for key, (offset, max_bytes) in positions.items():
            partition = self.partitions[key]
            error, records = self._error(key), b""
            if error == ErrorCode.none and not partition.log_start_offset <= offset <= partition.log_end_offset:
                error = ErrorCode.offset_out_of_range
            if error == ErrorCode.none:
                partition.update_follower_fetch(int(request.replica_id), offset, int(time.monotonic() * 1000))
                region = partition.read(offset, max_bytes, up_to_log_end=True)
                records = read_bytes(region) if region is not None else b""
            if session_id and key not in named and not records and error == ErrorCode.none \
                    and self._sent_hw.get(key) == partition.high_watermark:
                continue
            self._sent_hw[key] = partition.high_watermark
            by_topic.setdefault(key[0], []).append(PartitionData(
                partition_index=i32(key[1]), error_code=error, high_watermark=i64(partition.high_watermark),
                last_stable_offset=i64(partition.high_watermark), log_start_offset=i64(partition.log_start_offset),
                aborted_transactions=None, records=records))
        return FetchResponse(throttle_time=NO_WAIT, error_code=ErrorCode.none, session_id=i32(session_id),
                             responses=tuple(FetchableTopicResponse(topic=TopicName(topic), partitions=tuple(parts))
                                             for topic, parts in by_topic.items()))
