"""`manage.py consumer_groups` as an operator runs it beside `make run`: a real control plane with a registered
broker, no STROM_BOOTSTRAP_SERVERS. The command finds the brokers and the topics' partitions in the metadata
store, and talks to the group coordinator over the Kafka protocol."""

import subprocess
import sys

import pytest
from confluent_kafka import TopicPartition as KafkaTopicPartition

from tests.conftest import ROOT
from tests.controlplane.groups.real_cluster import BROKER_OVERRIDES, committed, create_topic, member, produce
from tests.support.cluster import broker_cluster
from tests.support.controlplane import control_plane

pytestmark = pytest.mark.slow


def consumer_groups(plane, *args: str) -> list[list[str]]:
    env = {k: v for k, v in plane.env.items() if k != "STROM_BOOTSTRAP_SERVERS"}
    result = subprocess.run([sys.executable, "manage.py", "consumer_groups", *args], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return [line.split() for line in result.stdout.strip().splitlines()]


def test_cli_finds_the_cluster_through_the_metadata_store(tmp_path):
    overrides = {**BROKER_OVERRIDES, "offsets.topic.replication.factor": "1"}
    with control_plane(tmp_path) as plane, broker_cluster(plane, tmp_path, 1, overrides) as cluster:
        create_topic(cluster, "orders", 3)
        produce(cluster, "orders", {0: 4, 1: 2, 2: 6})
        with member(cluster, "billing", "orders") as consumer:
            consumer.commit(offsets=[KafkaTopicPartition("orders", 2, 1)], asynchronous=False)
            assert ["billing"] in consumer_groups(plane, "--list")
            rows = consumer_groups(plane, "--describe", "--group", "billing")
            assert rows[1][:6] == ["billing", "orders", "0", "-", "4", "-"]
            assert rows[3][:7] == ["billing", "orders", "2", "1", "6", "5", consumer.memberid()]

        consumer_groups(plane, "--reset-offsets", "--group", "billing", "--topic", "orders", "--to-latest",
                        "--execute")
        assert committed(cluster, "billing", "orders", 3) == {0: 4, 1: 2, 2: 6}
