"""Lag samples (monitoring.history.lag_samples): the record format documented in monitoring/history.py."""

import json

from monitoring.evaluator import not_found
from monitoring.history import LagSampleWriter, lag_samples
from monitoring.model import Status
from tests.monitoring.factories import group, partition
from tests.support.broker import start_broker
from tests.support.ports import free_port


def test_one_sample_per_partition_with_the_contract_fields():
    result = group(partition(Status.STOP, number=0, lag=250, seconds=42.1234, breached=True),
                   partition(Status.OK, number=1, committed=None), name="billing", cluster="prod", now_ms=1_000)
    samples = list(lag_samples([result, not_found("prod", "gone", 1_000)]))
    assert [(key, ts) for key, _, ts in samples] == [(b"billing", 1_000), (b"billing", 1_000)]
    first, second = (json.loads(value) for _, value, _ in samples)
    assert first == {"ts": 1_000, "cluster": "prod", "group": "billing", "topic": "orders", "partition": 0,
                     "committed_offset": 100, "end_offset": 350, "lag": 250, "lag_seconds": 42.123,
                     "status": "STOP", "group_status": "ERR", "threshold_breached": True}
    assert (second["committed_offset"], second["lag"], second["lag_seconds"], second["end_offset"]) == (
        None, None, None, None)
    assert b" " not in samples[0][1]  # compact JSON


def test_names_are_escaped():
    result = group(partition(Status.OK, topic='or"ders\\ü'), name='bill\n"ing', cluster="prod")
    [(key, value, _)] = list(lag_samples([result]))
    sample = json.loads(value)
    assert (key, sample["group"], sample["topic"]) == (b'bill\n"ing', 'bill\n"ing', 'or"ders\\ü')


def test_a_cluster_not_answering_yet_drops_the_rounds_samples_and_the_topic_is_made_once_it_answers(tmp_path):
    port = free_port()
    fast_retries = {"socket.connection.setup.timeout.ms": "1000", "reconnect.backoff.max.ms": "200"}
    writer = LagSampleWriter(f"127.0.0.1:{port}", "__strom_lag_samples", retention_ms=60_000, partitions=1,
                             client_config=fast_retries, create_timeout_s=1.0)
    result = group(partition(Status.OK, number=0), name="billing", now_ms=1_000)
    assert writer.ensure_topic() is False and not writer.topic_ready  # no broker: no exception
    assert writer.write([result]) == 0
    broker = start_broker(tmp_path, port=port)
    try:
        assert writer.write([result]) == 1 and writer.topic_ready
        assert writer.flush() == 0 and writer.failed == 0
        assert writer.ensure_topic() is False  # exists now
    finally:
        broker.stop()
