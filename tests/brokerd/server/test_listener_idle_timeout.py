"""`connections.max.idle.ms` against a real standalone broker started with a short timeout: a silent
connection, one that stopped after a request, and one stuck mid-frame are closed about that long after
their last activity; a connection that keeps sending requests, and one waiting in a Fetch long poll longer
than the timeout, are kept."""

import select
import struct
import time

import pytest

from brokerd.protocol.api_keys import ApiKey
from tests.support.broker import standalone_broker
from tests.support.kafka_wire import (
    FETCH_VERSION,
    api_versions_v0,
    closed_by_broker,
    connect,
    create_topic,
    decode_response,
    encode_request,
    fetch_request,
    read_frame,
)

IDLE_MS = 600
IDLE_S = IDLE_MS / 1000
EARLY_S = 0.9 * IDLE_S  # clock granularity only: the broker starts counting after our connect returns
LATE_S = IDLE_S + 3.0  # reaper interval (idle / 10) plus a loaded machine's scheduling


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with standalone_broker(tmp_path_factory.mktemp("broker"),
                           overrides={"connections.max.idle.ms": str(IDLE_MS)}) as running:
        yield running


def ping(sock, correlation_id: int) -> None:
    sock.sendall(api_versions_v0(correlation_id))
    assert struct.unpack_from(">ih", read_frame(sock)) == (correlation_id, 0)


def seconds_until_closed(sock, since: float) -> float:
    sock.settimeout(LATE_S + 2)
    assert closed_by_broker(sock), "the broker sent data instead of closing"
    return time.monotonic() - since


def test_a_silent_connection_is_closed_after_the_idle_timeout(broker):
    start = time.monotonic()
    with connect(broker) as sock:
        elapsed = seconds_until_closed(sock, start)
    assert EARLY_S <= elapsed <= LATE_S, elapsed


def test_the_idle_clock_starts_at_the_last_response(broker):
    with connect(broker) as sock:
        for i in range(3):
            ping(sock, i)
        last_answer = time.monotonic()
        elapsed = seconds_until_closed(sock, last_answer)
    assert EARLY_S <= elapsed <= LATE_S, elapsed


def test_a_connection_stuck_in_the_middle_of_a_frame_is_closed(broker):
    with connect(broker) as sock:
        frame = api_versions_v0(1)
        sock.sendall(frame[: len(frame) // 2])
        sent = time.monotonic()
        elapsed = seconds_until_closed(sock, sent)
    assert EARLY_S <= elapsed <= LATE_S, elapsed


def test_an_active_connection_is_kept_while_a_silent_one_is_reaped(broker):
    with connect(broker) as silent, connect(broker) as active:
        start = time.monotonic()
        silent_closed_after = None
        correlation_id = 0
        # Pace the active client by waiting (at most a quarter of the timeout) for the silent one to close.
        while silent_closed_after is None or time.monotonic() - start < 3 * IDLE_S:
            if silent_closed_after is None and select.select([silent], [], [], IDLE_S / 4)[0]:
                assert closed_by_broker(silent)
                silent_closed_after = time.monotonic() - start
            elif silent_closed_after is not None:
                select.select([], [], [], IDLE_S / 4)
            ping(active, correlation_id)
            correlation_id += 1
            assert time.monotonic() - start < LATE_S + 3 * IDLE_S, "the silent connection was never closed"
        assert EARLY_S <= silent_closed_after <= LATE_S
        assert time.monotonic() - start >= 3 * IDLE_S
        ping(active, correlation_id)  # still open after three idle timeouts


def test_a_fetch_long_poll_longer_than_the_idle_timeout_is_answered(broker):
    with connect(broker) as sock:
        create_topic(sock, "long-poll")
        max_wait_ms = 3 * IDLE_MS
        sock.sendall(encode_request(ApiKey.FETCH, FETCH_VERSION, 7,
                                    fetch_request("long-poll", max_wait_ms=max_wait_ms, min_bytes=1)))
        sent = time.monotonic()
        sock.settimeout(max_wait_ms / 1000 + LATE_S)
        correlation_id, response = decode_response(ApiKey.FETCH, FETCH_VERSION, read_frame(sock))
        waited = time.monotonic() - sent
        assert correlation_id == 7 and response.error_code == 0
        (partition,) = response.responses[0].partitions
        assert (partition.error_code, partition.high_watermark, partition.records or b"") == (0, 0, b"")
        assert waited >= 0.9 * max_wait_ms / 1000, waited  # it really was parked for longer than the timeout
        ping(sock, 8)
