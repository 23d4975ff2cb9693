"""Time-based segment rolling follows Kafka (`LogSegment.timeWaitedForRoll`): once a segment has a first
batch timestamp, it rolls when an incoming batch's max timestamp is `segment.ms` past it — not when the
wall clock is. Producing historical data (timestamps older than `segment.ms`, e.g. a replay or a
migration) must therefore fill one segment, not open a segment per batch."""

import time

from brokerd.protocol.api_keys import ApiKey
from tests.support.broker import standalone_broker
from tests.support.kafka_wire import (
    connect,
    create_topic,
    decode_response,
    encode_request,
    produce_request,
    read_frame,
    record_batch,
)

BATCHES = 6
DAY_MS = 24 * 3600 * 1000


def test_batches_with_old_timestamps_share_one_segment(tmp_path):
    with standalone_broker(tmp_path) as broker, connect(broker) as sock:
        create_topic(sock, "history", configs={"retention.ms": "-1"})  # keep every segment for counting
        thirty_days_ago = int(time.time() * 1000) - 30 * DAY_MS
        for i in range(BATCHES):
            batch = record_batch([b"replayed-%d" % i], timestamp_ms=thirty_days_ago + i * 1000)
            sock.sendall(encode_request(ApiKey.PRODUCE, 7, i, produce_request("history", batch)))
            _, response = decode_response(ApiKey.PRODUCE, 7, read_frame(sock))
            (partition,) = response.responses[0].partition_responses
            assert (partition.error_code, partition.base_offset) == (0, i)
        segments = sorted(path.name for path in (broker.log_dir / "history-0").glob("*.log"))
    assert segments == ["00000000000000000000.log"]
