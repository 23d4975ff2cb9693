"""The rollup consumer (`manage.py consume_metrics`): reads `__strom_metrics` and `__strom_lag_samples` with
confluent-kafka and hands each batch to `ingest`.

Positions come from `ConsumedOffset` (committed in the database with the rollups; a partition never read
starts at its beginning), so a consumer restarted after any downtime resumes exactly where the database says
and nothing retained in the topics is lost. It also commits them to its Kafka group (`strom-metrics-rollup`) so
that the group's lag shows in the console like any other. Topics that do not exist yet (no broker published,
no lag monitor running) are looked for again every `REASSIGN_INTERVAL_S`, as are new partitions.
"""

import logging
import threading
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from controlplane.core.errors import KafkaApiError
from controlplane.groups.kafka_client import bootstrap_servers

from .ingest import LAG_TOPIC, METRICS_TOPIC, SampleRecord, ingest
from .models import ConsumedOffset

log = logging.getLogger(__name__)

GROUP_ID = "strom-metrics-rollup"
TOPICS = (METRICS_TOPIC, LAG_TOPIC)
BATCH_RECORDS = 2000
REASSIGN_INTERVAL_S = 30.0
RETRY_S = 2.0


def _assignment(consumer: Consumer) -> list[TopicPartition]:
    stored = {(o.topic, o.partition): o.next_offset for o in ConsumedOffset.objects.filter(topic__in=TOPICS)}
    assignment = []
    for topic in TOPICS:
        metadata = consumer.list_topics(topic, timeout=5).topics.get(topic)
        if metadata is None or metadata.error is not None:
            continue
        for partition in sorted(metadata.partitions):
            assignment.append(TopicPartition(topic, partition, stored.get((topic, partition), OFFSET_BEGINNING)))
    return assignment


def consume(consumer: Consumer, stop: threading.Event) -> None:
    """Poll, ingest and commit until `stop` is set; raises KafkaException on a fatal client error."""
    assigned: set[tuple[str, int]] = set()
    next_check = 0.0
    while not stop.is_set():
        if time.monotonic() >= next_check:
            assignment = _assignment(consumer)
            if {(tp.topic, tp.partition) for tp in assignment} != assigned:
                consumer.assign(assignment)
                assigned = {(tp.topic, tp.partition) for tp in assignment}
                log.info("consuming %s", ", ".join(f"{t}-{p}@{tp.offset}" for tp in assignment
                                                   for t, p in [(tp.topic, tp.partition)]) or "nothing yet")
            next_check = time.monotonic() + REASSIGN_INTERVAL_S
        if not assigned:
            stop.wait(1.0)
            continue
        messages = consumer.consume(BATCH_RECORDS, timeout=1.0)
        records = []
        for message in messages:
            if message.error() is not None:
                if message.error().fatal():
                    raise KafkaException(message.error())
                continue
            records.append(SampleRecord(message.topic(), message.partition(), message.offset(), message.value()))
        if records:
            applied = ingest(records)
            log.debug("ingested %d of %d records", applied, len(records))
            commit = {}
            for record in records:
                commit[(record.topic, record.partition)] = record.offset + 1
            consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in commit.items()], asynchronous=True)


def run(stop: threading.Event, bootstrap: str | None = None) -> None:
    """Keep consuming until `stop`; reconnects (from the stored offsets) after any client failure."""
    while not stop.is_set():
        try:
            servers = bootstrap or bootstrap_servers()
        except KafkaApiError as exc:
            log.info("waiting for a broker: %s", exc)
            stop.wait(RETRY_S)
            continue
        consumer = Consumer({"bootstrap.servers": servers, "group.id": GROUP_ID, "enable.auto.commit": False,
                             "client.id": "strom-controlplane-metrics", "fetch.wait.max.ms": 500})
        try:
            consume(consumer, stop)
        except KafkaException as exc:
            log.warning("metrics consumer failed (%s); reconnecting", exc)
            stop.wait(RETRY_S)
        finally:
            consumer.close()
