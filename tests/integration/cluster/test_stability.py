"""Fast failure detection must not cost stability: under steady acks=all load with no faults, no leader
or ISR change (the partition epoch stays put) for 2 minutes."""

import time

import pytest

from tests.integration.cluster.test_faults import TOPIC_CONFIGS, finish_and_audit, wait_for_progress
from tests.integration.cluster.workload import AckingProducer
from tests.support.polling import wait_until

STEADY_S = 120
STEADY_RATE = 2000
"""Records per second: steady, and small enough for the end-of-test audit to read them all back."""


@pytest.mark.slow
def test_no_leader_or_isr_change_under_steady_load(cluster, topic_name):
    cluster.create_topic(topic_name, 1, 3, TOPIC_CONFIGS)
    cluster.wait_for_isr(topic_name, 3)
    producer = AckingProducer(cluster.bootstrap, topic_name, rate_per_s=STEADY_RATE).start()
    wait_for_progress(producer)
    before = cluster.partition_state(topic_name, 0)
    acked_before = len(producer.acks)
    deadline = time.monotonic() + STEADY_S
    changes = []

    def changed_or_over() -> bool:
        state = cluster.partition_state(topic_name, 0)
        if state != before:
            changes.append(state)
        return bool(changes) or time.monotonic() >= deadline

    wait_until(changed_or_over, STEADY_S + 30, interval_s=0.5, message="the steady period")
    assert not changes, f"leader/ISR changed under steady load: {before} -> {changes[0]}"
    assert len(producer.acks) > acked_before, "no progress during the steady period"
    print(f"\nsteady {STEADY_S}s: {len(producer.acks) - acked_before} acks=all records, partition state {before}")
    finish_and_audit(cluster, producer, topic_name)
