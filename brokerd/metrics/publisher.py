"""`MetricsPublisher`: every `strom.metrics.sample.interval.ms` (on wall-clock multiples of it) the broker
takes a sample and produces it to `__strom_metrics` (format: `records`), the way Cruise Control's metrics
reporter does, so history survives without Prometheus.

The topic is created on first use through the metadata store (`cleanup.policy=delete`, `retention.ms` =
`strom.metrics.topic.retention.ms`, hourly segments so retention can delete them), like Kafka's internal
topics only once `strom.metrics.topic.replication.factor` brokers are alive (3; standalone 1). A round's
records go to partition `broker_id mod partitions` as zstd batches produced with acks=all to that partition's
leader (possibly this broker) over the Kafka protocol. A round that fails
(no leader yet, broker unreachable, timeout) is logged and retried by the next round: its topics stay
"changed" and `since` does not advance, so the next round's cumulative counters cover the gap.
Event loop only.
"""

import asyncio
import datetime
import logging
import time

from kio.schema.errors import ErrorCode
from kio.schema.produce.v7.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.types import TopicName
from kio.static.primitive import i16, i32

from brokerd.client import TRANSPORT_ERRORS, BrokerClient
from brokerd.config import MetricsSettings
from brokerd.metadata.image import NewTopic, TopicMetadata
from brokerd.metadata.internal_topics import InternalTopicUnavailable, ensure_internal_topic
from brokerd.metadata.store import MetadataStore
from brokerd.metrics.records import TopicState, broker_record, topic_records, topic_states
from brokerd.metrics.sample import Sampler
from brokerd.protocol.api_keys import ApiKey
from brokerd.records.batch import ZSTD
from brokerd.records.builder import build_batch

log = logging.getLogger(__name__)

METRICS_TOPIC = "__strom_metrics"
PRODUCE_VERSION = 7
PRODUCE_TIMEOUT_S = 10.0
MAX_BATCH_SOURCE_BYTES = 1_000_000
"""Uncompressed bytes per produced batch: compressed it stays below the default `message.max.bytes`."""


class PublishError(Exception):
    """This round could not be written; the next one retries."""


def metrics_topic_configs(settings: MetricsSettings) -> dict[str, str]:
    return {"cleanup.policy": "delete", "retention.ms": str(settings.topic_retention_ms),
            "segment.ms": str(min(3_600_000, settings.topic_retention_ms))}


class MetricsPublisher:
    def __init__(self, settings: MetricsSettings, sampler: Sampler, metadata: MetadataStore) -> None:
        self._settings = settings
        self._sampler = sampler
        self._metadata = metadata
        self._since_ms = sampler.started_ms
        self._published: dict[str, TopicState] = {}
        self._last_full_ms = 0
        self._client: BrokerClient | None = None
        self._task: asyncio.Task | None = None
        self._failing = False
        self.rounds_published = 0

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="metrics-publisher")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._client is not None:
            self._client.close()

    async def _run(self) -> None:
        interval_s = self._settings.sample_interval_ms / 1000
        while True:
            await asyncio.sleep(interval_s - time.time() % interval_s)
            try:
                await self.publish_once()
            except PublishError as exc:
                if not self._failing:
                    log.warning("metrics sample not published (retrying every round): %s", exc)
                self._failing = True
            except Exception:  # noqa: BLE001 - publishing must never stop
                log.exception("metrics publishing failed")
            else:
                if self._failing:
                    log.info("metrics samples are published again")
                self._failing = False

    async def publish_once(self) -> None:
        """Take a sample and write its round. Raises PublishError."""
        self._sampler.tick()
        sample = self._sampler.take()
        full = sample.ts_ms - self._last_full_ms >= self._settings.full_sample_interval_ms
        records = [broker_record(sample, self._since_ms)]
        states = topic_states(sample)
        for topic, (state, partitions) in sorted(states.items()):
            if full or self._published.get(topic) != state:
                records.extend(topic_records(sample, self._since_ms, topic, partitions))
        await self._produce(records, sample.ts_ms)
        self._published = {topic: state for topic, (state, _) in states.items()}
        self._since_ms = sample.ts_ms
        if full:
            self._last_full_ms = sample.ts_ms
        self.rounds_published += 1

    async def _produce(self, records: list[tuple[bytes, bytes]], ts_ms: int) -> None:
        topic = await self._ensure_topic()
        index = self._sampler.node_id % len(topic.partitions)
        leader = self._metadata.image.broker(topic.partitions[index].leader_id)
        if leader is None or leader.fenced:
            raise PublishError(f"{METRICS_TOPIC}-{index} has no live leader")
        if self._client is None or (self._client.host, self._client.port) != (leader.host, leader.port):
            if self._client is not None:
                self._client.close()
            self._client = BrokerClient(leader.host, leader.port, f"strom-metrics-{self._sampler.node_id}")
        for batch in _batches(records, ts_ms):
            request = ProduceRequest(transactional_id=None, acks=i16(-1),
                                     timeout=datetime.timedelta(seconds=PRODUCE_TIMEOUT_S), topic_data=(
                                         TopicProduceData(name=TopicName(METRICS_TOPIC), partition_data=(
                                             PartitionProduceData(index=i32(index), records=batch),)),))
            try:
                response = await self._client.request(ApiKey.PRODUCE, PRODUCE_VERSION, request,
                                                      PRODUCE_TIMEOUT_S + 5)
            except TRANSPORT_ERRORS as exc:
                raise PublishError(f"produce to broker {leader.node_id}: {exc or type(exc).__name__}") from exc
            error = response.responses[0].partition_responses[0].error_code  # type: ignore[attr-defined]
            if error != ErrorCode.none:
                raise PublishError(f"produce to {METRICS_TOPIC}-{index}: {error.name}")

    async def _ensure_topic(self) -> TopicMetadata:
        try:
            return await ensure_internal_topic(self._metadata, NewTopic(
                METRICS_TOPIC, self._settings.topic_partitions, self._settings.topic_replication_factor,
                metrics_topic_configs(self._settings)))
        except InternalTopicUnavailable as exc:
            raise PublishError(str(exc)) from exc


def _batches(records: list[tuple[bytes, bytes]], ts_ms: int) -> list[bytes]:
    """zstd batches of at most MAX_BATCH_SOURCE_BYTES of keys and values each (at least one record)."""
    batches, current, size = [], [], 0
    for key, value in records:
        if current and size + len(key) + len(value) > MAX_BATCH_SOURCE_BYTES:
            batches.append(build_batch(current, ts_ms, codec=ZSTD))
            current, size = [], 0
        current.append((key, value))
        size += len(key) + len(value)
    if current:
        batches.append(build_batch(current, ts_ms, codec=ZSTD))
    return batches
