"""sarama (Debian's golang-github-shopify-sarama-dev 1.22.1) at several `Version` settings, from 0.10.2 (Produce
v2 / Fetch v3 with legacy message sets, up- and down-converted by the broker) to 2.2.0, the newest it knows:
produce with every acks setting and codec, consume in a consumer group and commit, ClusterAdmin calls."""

import pytest

from tests.integration.clients.conftest import record_requests
from tests.support.clients import run_client, sarama_client

pytestmark = pytest.mark.slow

VERSIONS = ["0.10.2.0", "0.11.0.2", "1.0.0", "2.0.0", "2.2.0"]
ALWAYS = {"create the test topic", "consume with a consumer group and commit", "DescribeCluster", "DescribeTopics",
          "CreateTopic", "ListConsumerGroups", "DescribeConsumerGroups", "ListConsumerGroupOffsets", "DeleteTopic"}


def _parsed(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


@pytest.fixture(scope="module")
def client():
    return sarama_client()


@pytest.mark.parametrize("version", VERSIONS)
def test_sarama_produces_consumes_commits_and_administers(broker, client, version):
    run = run_client([str(client), "-brokers", f"127.0.0.1:{broker.port}", "-version", version,
                      "-topic", f"sarama-{version}", "-group", f"sarama-group-{version}", "-messages", "10"])
    assert run.returncode == 0 and not run.failures(), run.output
    names = run.step_names()
    assert names >= ALWAYS, names
    codecs = {"none", "gzip", "snappy", "lz4"}
    assert {f"produce acks={a} codec={c}" for a in ("0", "1", "all") for c in codecs} <= names
    if _parsed(version) >= (0, 11):
        assert {"ListTopics", "AlterConfig", "DescribeConfig", "DeleteRecords"} <= names
    if _parsed(version) >= (2, 1):
        assert "produce codec=zstd is refused (Produce v3, as Kafka refuses it)" in names
    seen = record_requests(broker, f"sarama-{version}", f"sarama-{version}")
    if version == "0.10.2.0":  # the legacy message-set versions really were used
        assert seen["PRODUCE"] == [2] and seen["FETCH"] == [3]
