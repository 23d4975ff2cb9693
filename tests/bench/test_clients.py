"""`make bench`'s consumer (`bench.clients.CONSUMER_CONFIG`): once its prefetch queue was full, librdkafka
fetches again within one long poll, not after its default second (which made the consume figures measure
the client's pauses). Shown with librdkafka's own fetch log against a real broker."""

import logging
import re

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from bench.clients import CONSUMER_CONFIG
from tests.support.broker import standalone_broker
from tests.support.polling import wait_until

RECORDS = 3_000
QUEUE_KBYTES = 256
"""Far below one fetch response of a partition (up to 1 MiB), so the queue is full after the first one."""
LONGEST_PAUSE_MS = CONSUMER_CONFIG["fetch.wait.max.ms"]
"""A full queue may pause fetching no longer than one long poll of the broker may take."""
QUEUE_FULL = re.compile(r"Fetch backoff for (\d+)ms: Local: Queue full")


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_a_full_prefetch_queue_pauses_fetching_for_less_than_a_long_poll(tmp_path):
    lines = _Lines()
    librdkafka = logging.getLogger("tests.bench.librdkafka")
    librdkafka.addHandler(lines)
    librdkafka.setLevel(logging.DEBUG)
    librdkafka.propagate = False
    with standalone_broker(tmp_path) as broker:
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        for _ in range(RECORDS):
            producer.produce("backoff", b"x" * 1024)
        assert producer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, **CONSUMER_CONFIG,
                             "queued.max.messages.kbytes": QUEUE_KBYTES, "debug": "fetch"}, logger=librdkafka)
        consumer.assign([TopicPartition("backoff", 0, OFFSET_BEGINNING)])
        seen = []

        def consumed_all() -> bool:
            seen.extend(m for m in consumer.consume(500, 0.5) if m.error() is None)
            return len(seen) >= RECORDS

        try:
            wait_until(consumed_all, 60, 0, message=f"{RECORDS} records consumed")
        finally:
            consumer.close()
    backoffs = [int(match[1]) for message in lines.messages for match in QUEUE_FULL.finditer(message)]
    assert backoffs, "the prefetch queue never filled: the test shows nothing"
    assert max(backoffs) <= LONGEST_PAUSE_MS
    assert len(seen) == RECORDS
