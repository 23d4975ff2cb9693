"""kcat -G (librdkafka 2.0.2's balanced consumer) consumes as a group member and commits: the group's
committed offsets are the partitions' end offsets afterwards, and a second run has nothing left to read."""

import shutil
import subprocess

import pytest
from kafka.admin import KafkaAdminClient
from kafka.structs import TopicPartition

from tests.integration.groups.group_consumers import create_topic, produce

pytestmark = pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is installed by the setup")
PARTITIONS = 3
RECORDS = 30


def kcat_group(broker, group: str, topic: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["kcat", "-b", broker.bootstrap, "-G", group, "-X", "auto.offset.reset=earliest",
                           "-f", "%p:%o:%s\n", *args, topic], capture_output=True, text=True, timeout=60)


def test_kcat_consumes_as_a_group_and_commits(broker, topic_name):
    create_topic(broker.bootstrap, topic_name, PARTITIONS)
    produced = produce(broker.bootstrap, topic_name, PARTITIONS, RECORDS)
    group = f"kcat-{topic_name}"
    result = kcat_group(broker, group, topic_name, "-c", str(RECORDS))
    assert result.returncode == 0, result.stderr
    consumed = sorted(tuple(line.split(":", 2)) for line in result.stdout.splitlines())
    assert consumed == sorted((str(p), str(o), v) for p, o, v in produced)

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        committed = admin.list_group_offsets(group)[group]
        assert {tp: meta.offset for tp, meta in committed.items()} == {
            TopicPartition(topic_name, p): RECORDS // PARTITIONS for p in range(PARTITIONS)}
        assert admin.describe_groups([group])[group]["group_state"] == "Empty"
    finally:
        admin.close()
    again = kcat_group(broker, group, topic_name, "-e", "-X", "enable.partition.eof=true")
    assert again.returncode == 0, again.stderr
    assert again.stdout == ""
