"""Lag history kept by Strom itself: every evaluation round appends one sample per (group, topic,
partition) to the internal topic `__strom_lag_samples` (read in bulk by the Spark lag report).

Record key: the group id (UTF-8), so a group's samples stay in one partition in time order. Value: one
compact JSON object with `ts` (ms), `cluster`, `group`, `topic`, `partition`, `committed_offset` (null
without a commit), `end_offset`, `lag` (records, null without a commit), `lag_seconds` (null when unknown),
`status`, `group_status`, `threshold_breached`. Record timestamp (CreateTime) = `ts`.
"""

import concurrent.futures
import json
import logging
from collections.abc import Iterable, Iterator, Mapping

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from monitoring.model import GroupResult

logger = logging.getLogger(__name__)

def _json(value: int | float | None) -> str:
    return "null" if value is None else repr(value)


def lag_samples(results: Iterable[GroupResult]) -> Iterator[tuple[bytes, bytes, int]]:
    """(key, value, timestamp ms) of every sample of the groups' evaluations; NOTFOUND groups have none.
    The JSON is written field by field (names and strings escaped once per group and topic): this runs
    for every partition of every group each round."""
    quoted: dict[str, str] = {}
    for group in results:
        if not group.partitions:
            continue
        key = group.group.encode()
        head = (f'{{"ts":{group.evaluated_ms},"cluster":{json.dumps(group.cluster, ensure_ascii=False)},'
                f'"group":{json.dumps(group.group, ensure_ascii=False)},"topic":')
        tail = f',"group_status":"{group.status.name}","threshold_breached":'
        for p in group.partitions:
            topic = quoted.get(p.topic)
            if topic is None:
                topic = quoted[p.topic] = json.dumps(p.topic, ensure_ascii=False)
            seconds = None if p.lag_seconds is None else round(p.lag_seconds, 3)
            value = (f'{head}{topic},"partition":{p.partition},"committed_offset":{_json(p.committed_offset)},'
                     f'"end_offset":{_json(p.end_offset)},"lag":{_json(p.lag)},"lag_seconds":{_json(seconds)},'
                     f'"status":"{p.status.name}"{tail}{"true" if p.threshold_breached else "false"}}}')
            yield key, value.encode(), group.evaluated_ms


class LagSampleWriter:
    """Produces samples to the topic, creating it first if missing (`cleanup.policy=delete`,
    `retention.ms`, `partitions`, replication factor min(3, brokers))."""

    def __init__(self, bootstrap_servers: str, topic: str, retention_ms: int, partitions: int,
                 client_config: Mapping[str, str] | None = None, create_timeout_s: float = 10.0) -> None:
        config = {**(client_config or {}), "bootstrap.servers": bootstrap_servers}
        self.topic = topic
        self._retention_ms = retention_ms
        self._partitions = partitions
        self._admin = AdminClient(config)
        self._producer = Producer({**config, "linger.ms": 50, "compression.type": "lz4",
                                   "queue.buffering.max.messages": 1_000_000})
        self.failed = 0
        self.topic_ready = False
        """The topic is known to exist; until then each `write` tries `ensure_topic` first."""
        self._create_timeout_s = create_timeout_s

    def ensure_topic(self, timeout_s: float | None = None) -> bool:
        """Create the topic unless it exists; True if it was created now. A cluster that does not answer in
        time (a broker starting, an election) is not an error: `topic_ready` stays False and the next
        `write` tries again. Refusals other than TOPIC_ALREADY_EXISTS raise. Waits at most `timeout_s` per
        request (default: the writer's `create_timeout_s`)."""
        timeout_s = self._create_timeout_s if timeout_s is None else timeout_s
        try:
            metadata = self._admin.list_topics(timeout=timeout_s)
            if self.topic in metadata.topics:
                self.topic_ready = True
                return False
            replicas = max(1, min(3, len(metadata.brokers)))
            new = NewTopic(self.topic, self._partitions, replicas,
                           config={"cleanup.policy": "delete", "retention.ms": str(self._retention_ms)})
            self._admin.create_topics([new], request_timeout=timeout_s)[self.topic].result(timeout_s)
        except concurrent.futures.TimeoutError:
            logger.warning("%s: the cluster did not answer within %.0f s; trying again next round", self.topic,
                           timeout_s)
            return False
        except KafkaException as exc:
            error = exc.args[0]
            if error.name() == "TOPIC_ALREADY_EXISTS":
                self.topic_ready = True
                return False
            if not error.retriable() and error.code() not in (KafkaError._TIMED_OUT, KafkaError._TRANSPORT):
                raise
            logger.warning("%s not created yet (%s); trying again next round", self.topic, error)
            return False
        self.topic_ready = True
        logger.info("created %s (%d partitions, %d replicas, retention %d ms)", self.topic, self._partitions,
                    replicas, self._retention_ms)
        return True

    def write(self, results: Iterable[GroupResult]) -> int:
        """Queue one sample per partition of every result (sent in the background); returns how many (none
        while the topic cannot be created: a round's samples are dropped, not queued without end)."""
        if not self.topic_ready and not self.ensure_topic():
            return 0
        count = 0
        produce = self._producer.produce
        for key, value, timestamp_ms in lag_samples(results):
            while True:
                try:
                    produce(self.topic, value, key, timestamp=timestamp_ms, on_delivery=self._delivered)
                    break
                except BufferError:
                    self._producer.poll(0.1)
            count += 1
        self._producer.poll(0)
        return count

    def _delivered(self, error, _message) -> None:
        if error is not None:
            self.failed += 1
            if self.failed == 1 or self.failed % 10_000 == 0:
                logger.warning("lag samples not written (%d so far): %s", self.failed, error)

    def flush(self, timeout_s: float = 10.0) -> int:
        """Wait for queued samples; returns how many are still queued."""
        return self._producer.flush(timeout_s)
