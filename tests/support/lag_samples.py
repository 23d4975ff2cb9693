"""Lag samples exactly as the lag monitor writes them to `__strom_lag_samples` (CONTRACTS.md): key = the
group id, value = one compact JSON object, record timestamp = `ts` (CreateTime)."""

import json
from collections.abc import Iterable

from confluent_kafka import Producer

LAG_SAMPLES_TOPIC = "__strom_lag_samples"


def lag_sample(ts: int, group: str, topic: str, partition: int, lag: int | None = 0, lag_seconds: float | None = 0.0,
               status: str = "OK", group_status: str | None = None, breached: bool = False,
               cluster: str = "local", end_offset: int = 1_000_000) -> dict:
    return {"ts": ts, "cluster": cluster, "group": group, "topic": topic, "partition": partition,
            "committed_offset": None if lag is None else end_offset - lag, "end_offset": end_offset, "lag": lag,
            "lag_seconds": lag_seconds, "status": status, "group_status": group_status or status,
            "threshold_breached": breached}


def produce_samples(bootstrap: str, samples: Iterable[dict], topic: str = LAG_SAMPLES_TOPIC) -> int:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "compression.type": "lz4"})
    count = 0
    for sample in samples:
        producer.produce(topic, key=sample["group"].encode(), timestamp=sample["ts"],
                         value=json.dumps(sample, separators=(",", ":")).encode())
        count += 1
        if count % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    return count
