"""`BrokerClient` against a real standalone broker: flexible and non-flexible versions round-trip (ApiVersions'
v0 response header included), the connection opens lazily and is reused, a broker restart closes it and the
next request reconnects; a response for another correlation id, a request unanswered within its timeout and a
broker closing with a request unanswered close the connection and fail the request, and a response nobody asked for
fails the next one (the stream is out of step), which reconnects after."""

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.metadata.v1.request import MetadataRequest as MetadataRequestV1
from kio.schema.metadata.v12.request import MetadataRequest as MetadataRequestV12
from kio.schema.metadata.v12.request import MetadataRequestTopic

from brokerd.client import TRANSPORT_ERRORS, BrokerClient
from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.errors import MalformedRequestError
from tests.support.broker import standalone_broker, start_broker

TIMEOUT_S = 10.0


def test_requests_of_flexible_and_fixed_versions_round_trip_on_one_connection(tmp_path):
    async def scenario(port: int) -> None:
        client = BrokerClient("127.0.0.1", port, "client-test")
        try:
            versions = await client.request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest(
                client_software_name="strom-tests", client_software_version="1"), TIMEOUT_S)
            assert versions.error_code == 0
            assert {k.api_key for k in versions.api_keys} >= {ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.METADATA}
            connection = client.connection
            fixed = await client.request(ApiKey.METADATA, 1, MetadataRequestV1(topics=None), TIMEOUT_S)
            flexible = await client.request(ApiKey.METADATA, 12, MetadataRequestV12(
                topics=(MetadataRequestTopic(name="absent", topic_id=None),), allow_auto_topic_creation=False,
                include_topic_authorized_operations=False), TIMEOUT_S)
            assert [b.port for b in fixed.brokers] == [b.port for b in flexible.brokers] == [port]
            assert flexible.topics[0].error_code != 0  # an unknown topic, answered at v12
            assert client.connection is connection  # every request on the connection the first one opened
        finally:
            client.close()

    with standalone_broker(tmp_path, {"auto.create.topics.enable": "false"}) as broker:
        asyncio.run(scenario(broker.port))


def test_a_restarted_broker_costs_one_failed_request_then_the_client_reconnects(tmp_path):
    async def scenario() -> None:
        broker = start_broker(tmp_path)
        client = BrokerClient("127.0.0.1", broker.port, "client-test")

        async def metadata() -> object:
            return await client.request(ApiKey.METADATA, 1, MetadataRequestV1(topics=None), TIMEOUT_S)

        try:
            await metadata()
            broker.stop()
            broker = await asyncio.to_thread(start_broker, tmp_path, port=client.port)
            with pytest.raises(TRANSPORT_ERRORS):
                await metadata()  # the old connection was closed by the broker that stopped
            assert client.connection is None
            assert [b.port for b in (await metadata()).brokers] == [client.port]
        finally:
            client.close()
            broker.stop()

    asyncio.run(scenario())


@contextlib.asynccontextmanager
async def _client_of(handle) -> AsyncIterator[tuple[BrokerClient, list[asyncio.StreamWriter]]]:
    """A `BrokerClient` of a plain TCP server on a free port that runs `handle(reader, writer)` per connection;
    (the client, the writers of the connections accepted so far). Both are closed on leaving."""
    accepted: list[asyncio.StreamWriter] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)
        await handle(reader, writer)

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    client = BrokerClient("127.0.0.1", server.sockets[0].getsockname()[1], "client-test")
    try:
        yield client, accepted
    finally:
        client.close()
        server.close()
        for writer in accepted:
            writer.close()
        await server.wait_closed()


async def _read_request(reader: asyncio.StreamReader) -> int:
    """Read one request frame; its correlation id."""
    frame = await reader.readexactly(int.from_bytes(await reader.readexactly(4), "big"))
    return int.from_bytes(frame[4:8], "big")


def test_a_response_for_another_correlation_id_fails_and_closes_the_connection():
    async def scenario() -> None:
        async def answer_with_the_wrong_id(reader, writer) -> None:
            correlation_id = await _read_request(reader)
            writer.write((4).to_bytes(4, "big") + (correlation_id + 1).to_bytes(4, "big"))
            await writer.drain()

        async with _client_of(answer_with_the_wrong_id) as (client, accepted):
            for attempt in (1, 2):
                with pytest.raises(MalformedRequestError, match="correlation id"):
                    await client.request(ApiKey.METADATA, 1, MetadataRequestV1(topics=None), TIMEOUT_S)
                assert client.connection is None and len(accepted) == attempt  # a new connection each time

    asyncio.run(scenario())


def test_a_request_unanswered_within_its_timeout_fails_and_closes_the_connection():
    async def scenario() -> None:
        async def never_answer(reader, writer) -> None:
            await _read_request(reader)
            await reader.read()  # until the client closes

        async with _client_of(never_answer) as (client, _):
            loop = asyncio.get_running_loop()
            started = loop.time()
            with pytest.raises(TimeoutError):
                await client.request(ApiKey.METADATA, 1, MetadataRequestV1(topics=None), 0.2)
            assert loop.time() - started >= 0.2
            assert client.connection is None

    asyncio.run(scenario())


def test_a_response_nobody_asked_for_or_a_close_fails_the_next_or_waiting_request():
    async def scenario() -> None:
        connections = 0

        async def answer_twice_then_close_unanswered(reader, writer) -> None:
            nonlocal connections
            connections += 1
            correlation_id = await _read_request(reader)
            if connections == 1:  # the first connection: the answer, then a frame nobody asked for
                writer.write((4).to_bytes(4, "big") + correlation_id.to_bytes(4, "big")
                             + (4).to_bytes(4, "big") + (correlation_id + 1).to_bytes(4, "big"))
                await reader.read()
            writer.close()  # the second: closed with the request unanswered

        async with _client_of(answer_twice_then_close_unanswered) as (client, accepted):
            async def ask() -> bytes:
                return await client.request_frame(ApiKey.METADATA, 1, MetadataRequestV1(topics=None), TIMEOUT_S)

            assert await ask() == client._correlation_id.to_bytes(4, "big")
            with pytest.raises(MalformedRequestError, match="no request was waiting"):
                await ask()  # the stray frame put the connection out of step: it is not used again
            assert client.connection is None and len(accepted) == 1
            with pytest.raises(EOFError):
                await ask()
            assert client.connection is None and len(accepted) == 2

    asyncio.run(scenario())
