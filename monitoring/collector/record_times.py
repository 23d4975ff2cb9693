"""When the record at a committed offset was appended: the age of a group's oldest unconsumed record.

Read from the log itself with a librdkafka consumer assigned (without a group) to the partitions at the
wanted offsets: the first record it returns at or after the offset is the oldest one the group has not
consumed (a record compacted away or deleted by retention is skipped to the next one; a partition that
ends before any data record, e.g. only transaction markers follow, has nothing unconsumed). Answers are
cached by (topic, partition, offset): a record's timestamp never changes, so a group that does not move
costs no new fetch. Timestamps are the records' own (CreateTime or LogAppendTime, as the topic says).

Cost: one Fetch per pass over all wanted partitions; a Strom broker answers it in about 0.5-1 ms per
partition (measured: 1,000 partitions in 0.5-1 s), so the service caps the fetches per round
(`lag-seconds-lookups`) and partitions whose committed offset moved wait their turn (unknown meanwhile).
"""

import collections
import logging
import time
from collections.abc import Iterable, Mapping

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, Consumer, KafkaError, TopicPartition

logger = logging.getLogger(__name__)

Position = tuple[str, int, int]  # (topic, partition, offset)


class RecordTimeReader:
    def __init__(self, bootstrap_servers: str, client_config: Mapping[str, str] | None = None,
                 timeout_s: float = 5.0) -> None:
        self._consumer = Consumer({
            **(client_config or {}),
            "bootstrap.servers": bootstrap_servers,
            "group.id": "strom-lag-monitor",  # required by librdkafka; never joined, never committed
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 10,
            "max.partition.fetch.bytes": 16384,  # one batch is enough: only the first record is looked at
            "queued.max.messages.kbytes": 16384,
        })
        self._timeout_s = timeout_s
        self._cache: dict[Position, int | None] = {}
        self._looked_up: dict[tuple[str, int], float] = {}  # (topic, partition) → monotonic time of the last fetch

    def append_times(self, positions: Iterable[Position], max_lookups: int | None = None) -> dict[Position, int | None]:
        """For each position, the timestamp (ms) of the first record at or after it, None when there is
        none (caught up). Positions not in the cache are fetched, at most `max_lookups` of them (those of
        the partitions looked up longest ago first, so every partition gets its turn); positions not
        fetched or not answered within the timeout are left out (unknown)."""
        wanted = set(positions)
        known = {p: self._cache[p] for p in wanted if p in self._cache}
        missing = sorted(wanted - known.keys(), key=lambda p: self._looked_up.get(p[:2], 0.0))
        if max_lookups is not None:
            missing = missing[:max_lookups]
        # One offset per partition per pass (a consumer reads each partition at one position at a time).
        by_partition: dict[tuple[str, int], list[int]] = collections.defaultdict(list)
        for topic, partition, offset in missing:
            by_partition[(topic, partition)].append(offset)
        deadline = time.monotonic() + self._timeout_s
        while by_partition and time.monotonic() < deadline:
            batch = {tp: offsets.pop() for tp, offsets in by_partition.items()}
            by_partition = {tp: offsets for tp, offsets in by_partition.items() if offsets}
            known.update(self._read_first_records(batch, deadline))
            now = time.monotonic()
            self._looked_up.update((tp, now) for tp in batch)
        self._cache = dict(known)
        return known

    def _read_first_records(self, batch: dict[tuple[str, int], int], deadline: float) -> dict[Position, int | None]:
        found: dict[Position, int | None] = {}
        pending = dict(batch)
        self._consumer.assign([TopicPartition(t, p, offset) for (t, p), offset in batch.items()])
        try:
            while pending and time.monotonic() < deadline:
                for message in self._consumer.consume(10_000, 0.1):
                    tp = (message.topic(), message.partition())
                    offset = pending.get(tp)
                    if offset is None:
                        continue
                    error = message.error()
                    if error is not None:
                        if error.code() == KafkaError._PARTITION_EOF:
                            found[(*tp, offset)] = None
                            del pending[tp]
                        else:
                            logger.debug("record time of %s: %s", tp, error)
                        continue
                    kind, timestamp = message.timestamp()
                    if kind != TIMESTAMP_NOT_AVAILABLE:
                        found[(*tp, offset)] = timestamp
                    del pending[tp]
        finally:
            self._consumer.unassign()
        if pending:
            logger.info("record times: %d of %d partitions did not answer in time", len(pending), len(batch))
        return found

    def close(self) -> None:
        self._consumer.close()
