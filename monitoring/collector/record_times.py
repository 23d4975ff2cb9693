"""When the record at a committed offset was appended: the age of a group's oldest unconsumed record.

Read from the log itself with a librdkafka consumer assigned (without a group) to the partitions: for
each partition one fetch starts at the lowest wanted offset and reads on until the highest one is
passed (usually one fetch: a batch holds many records), so every group's position on that partition is
answered by the same pass. The answer for an offset is the first record at or after it (a record
compacted away or deleted by retention is skipped to the next one); a partition that ends before any data
record (e.g. only transaction markers follow) has nothing unconsumed. A record's timestamp never
changes, so answers are cached by (topic, partition, offset) — a group that does not move costs no new
fetch — and so is each partition's latest pass (the offsets and timestamps read, at most `RUN_RECORDS`):
a group that moves on within what was read is answered without a fetch too. Timestamps are the records'
own (CreateTime or LogAppendTime, as the topic says).

Cost: a Strom broker answers a Fetch in about 0.5-1 ms per partition (measured: 1,000 partitions in
0.5-1 s), so the service fetches from its own thread, capped per pass (`lag-seconds-lookups`
partitions, those looked up longest ago first), and evaluations use what is cached (`known`): a
position not fetched yet has no lag in seconds in that round. `append_times` belongs to one thread.
"""

import bisect
import collections
import logging
import time
from collections.abc import Iterable, Mapping

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, Consumer, KafkaError, TopicPartition

logger = logging.getLogger(__name__)

Position = tuple[str, int, int]  # (topic, partition, offset)
Run = tuple[list[int], list[int]]  # offsets (ascending) and the timestamps (ms) of the records read in one pass

RUN_RECORDS = 1000
"""Records kept per partition from its latest pass (the first ones read: the positions asked for are at the start)."""


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
        self._runs: dict[tuple[str, int], Run] = {}  # each partition's latest pass
        self._looked_up: dict[tuple[str, int], float] = {}  # (topic, partition) → monotonic time of the last fetch

    def append_times(self, positions: Iterable[Position], max_partitions: int | None = None
                     ) -> dict[Position, int | None]:
        """For each position, the timestamp (ms) of the first record at or after it, None when there is
        none (caught up). Positions not in the cache are fetched, from at most `max_partitions` partitions
        (those looked up longest ago first); positions not fetched or not answered within the timeout are
        left out (unknown)."""
        wanted = set(positions)
        known = self.known(wanted)
        by_partition: dict[tuple[str, int], list[int]] = collections.defaultdict(list)
        for topic, partition, offset in wanted - known.keys():
            by_partition[(topic, partition)].append(offset)
        order = sorted(by_partition, key=lambda tp: self._looked_up.get(tp, 0.0))
        if max_partitions is not None:
            order = order[:max_partitions]
        if order:
            ranges = {tp: (min(by_partition[tp]), max(by_partition[tp])) for tp in order}
            records, ended = self._read(ranges)
            now = time.monotonic()
            for tp in order:
                self._looked_up[tp] = now
                offsets, stamps = records.get(tp, ([], []))
                if offsets:
                    self._runs[tp] = (offsets[:RUN_RECORDS], stamps[:RUN_RECORDS])
                for offset in by_partition[tp]:
                    i = bisect.bisect_left(offsets, offset)
                    if i < len(offsets):
                        known[(*tp, offset)] = stamps[i]
                    elif tp in ended:
                        known[(*tp, offset)] = None
        self._cache = dict(known)
        return known

    def known(self, positions: Iterable[Position]) -> dict[Position, int | None]:
        """The answers for `positions` without a fetch: cached, or within the offsets its partition's latest
        pass read (the first record there at or after the offset); safe to call from another thread."""
        cache, runs = self._cache, self._runs
        answers: dict[Position, int | None] = {}
        for position in positions:
            if position in cache:
                answers[position] = cache[position]
                continue
            run = runs.get(position[:2])
            if run is not None and run[0][0] <= position[2] <= run[0][-1]:
                answers[position] = run[1][bisect.bisect_left(run[0], position[2])]
        return answers

    def _read(self, ranges: dict[tuple[str, int], tuple[int, int]]
              ) -> tuple[dict[tuple[str, int], tuple[list[int], list[int]]], set[tuple[str, int]]]:
        """Read each partition from its range's first offset until past its last one or the end of the
        log: ({partition: (offsets, timestamps) in offset order}, {partitions whose log end was reached})."""
        records: dict[tuple[str, int], tuple[list[int], list[int]]] = {}
        ended: set[tuple[str, int]] = set()
        pending = {tp: last for tp, (_, last) in ranges.items()}
        deadline = time.monotonic() + self._timeout_s
        self._consumer.assign([TopicPartition(t, p, first) for (t, p), (first, _) in ranges.items()])
        try:
            while pending and time.monotonic() < deadline:
                for message in self._consumer.consume(10_000, 0.1):
                    tp = (message.topic(), message.partition())
                    last = pending.get(tp)
                    if last is None:
                        continue
                    error = message.error()
                    if error is not None:
                        if error.code() == KafkaError._PARTITION_EOF:
                            ended.add(tp)
                            del pending[tp]
                        else:
                            logger.debug("record times of %s: %s", tp, error)
                        continue
                    kind, timestamp = message.timestamp()
                    if kind != TIMESTAMP_NOT_AVAILABLE:
                        offsets, stamps = records.setdefault(tp, ([], []))
                        offsets.append(message.offset())
                        stamps.append(timestamp)
                    if message.offset() >= last:
                        del pending[tp]
        finally:
            self._consumer.unassign()
        if pending:
            logger.info("record times: %d of %d partitions did not answer in time", len(pending), len(ranges))
        return records, ended

    def close(self) -> None:
        self._consumer.close()
