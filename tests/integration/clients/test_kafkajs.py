"""KafkaJS 2.2.4 (npm, with the machine's Node.js): admin create/list/delete topics, an idempotent producer, a
consumer group with commits, and fetchOffsets / describeGroups (DescribeGroups v2, which Strom once refused)."""

import pytest

from tests.integration.clients.conftest import record_requests
from tests.support.clients import kafkajs_client, run_client

pytestmark = pytest.mark.slow

STEPS = {"admin.createTopics", "admin.listTopics", "admin.describeCluster", "idempotent producer send",
         "consumer group with commits", "admin.fetchOffsets", "admin.fetchTopicOffsets", "admin.listGroups",
         "admin.describeGroups", "admin.deleteTopics"}


def test_kafkajs_admin_idempotent_producer_and_consumer_group(broker):
    run = run_client(["node", str(kafkajs_client()), f"127.0.0.1:{broker.port}", "kafkajs", "kafkajs-group"])
    assert run.returncode == 0 and not run.failures(), run.output
    assert run.step_names() == STEPS
    seen = record_requests(broker, "kafkajs", "kafkajs-strom")
    assert seen["DESCRIBE_GROUPS"] == [2] and "INIT_PRODUCER_ID" in seen
