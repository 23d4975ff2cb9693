"""Topic partition counts (Metadata) and every partition's log-end offset (ListOffsets latest), the
"heads" of Burrow's cluster module, for all topics in one batched admin call per round."""

import concurrent.futures
import logging
from collections.abc import Mapping

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

logger = logging.getLogger(__name__)


class BrokerOffsetsReader:
    def __init__(self, bootstrap_servers: str, client_config: Mapping[str, str] | None = None,
                 timeout_s: float = 10.0) -> None:
        self._admin = AdminClient({**(client_config or {}), "bootstrap.servers": bootstrap_servers})
        self._timeout_s = timeout_s

    def partition_counts(self) -> dict[str, int]:
        """Every topic (internal ones included) → its partition count."""
        metadata = self._admin.list_topics(timeout=self._timeout_s)
        return {name: len(topic.partitions) for name, topic in metadata.topics.items() if topic.error is None}

    def heads(self, partition_counts: Mapping[str, int]) -> dict[str, list[int | None]]:
        """Topic → log-end offset per partition (None where the leader did not answer)."""
        request = {TopicPartition(topic, p): OffsetSpec.latest()
                   for topic, count in partition_counts.items() for p in range(count)}
        heads: dict[str, list[int | None]] = {topic: [None] * count for topic, count in partition_counts.items()}
        if not request:
            return heads
        futures = self._admin.list_offsets(request, request_timeout=self._timeout_s)
        concurrent.futures.wait(futures.values(), timeout=self._timeout_s + 5)
        failures = 0
        for tp, future in futures.items():
            try:
                heads[tp.topic][tp.partition] = future.result(timeout=0).offset
            except (KafkaException, concurrent.futures.TimeoutError):
                failures += 1
        if failures:
            logger.warning("ListOffsets: no answer for %d of %d partitions", failures, len(futures))
        return heads

