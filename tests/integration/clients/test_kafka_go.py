"""segmentio/kafka-go (Debian's golang-github-segmentio-kafka-go-dev 0.2.1, legacy message sets v1): produce with
each codec and acks 1/all, consume in a consumer group with commits, and the committed offset holds."""

import pytest

from tests.integration.clients.conftest import record_requests
from tests.support.clients import kafkago_client, run_client

pytestmark = pytest.mark.slow


def test_kafka_go_produces_and_consumes_in_a_group(broker):
    run = run_client([str(kafkago_client()), "-brokers", f"127.0.0.1:{broker.port}", "-topic", "kafka-go",
                      "-group", "kafka-go-group", "-messages", "10"])
    assert run.returncode == 0 and not run.failures(), run.output
    assert {"consume in a group and commit", "the committed offset holds for the next member", "ListOffsets"} <= (
        run.step_names())
    assert len([s for s in run.steps if s["step"].startswith("produce ")]) == 8
    seen = record_requests(broker, "kafka-go", "kafkago-client")
    assert seen["FETCH"] == [2]  # message sets v1, down-converted from the stored batches
