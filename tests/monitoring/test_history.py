"""Lag samples (monitoring.history.lag_samples): the record format documented in monitoring/history.py."""

import json

from monitoring.evaluator import not_found
from monitoring.history import lag_samples
from monitoring.model import Status
from tests.monitoring.factories import group, partition


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
