"""Each broker's share and skew of replicas, leaders and bytes over REST (`GET /api/skew/`) and the CLI
(`manage.py broker_skew`), against an oracle counted straight from the fixture; both give the same figures as the
console's Brokers page (`controller.skew`, whose table test is in tests/controlplane/console/test_brokers.py)."""

import json
import re
from collections import Counter
from io import StringIO

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from controlplane.access.actions import Role
from controlplane.cluster.models import Broker, BrokerState
from controlplane.metrics.models import PartitionReplicaSize
from controlplane.topics.models import Partition
from tests.conftest import user_with_role

SIZES = [  # (broker, topic, partition, bytes); the last row is stale: orders-1 has no replica on broker 5
    (1, "orders", 0, 4_000_000), (2, "orders", 1, 1_000_000), (3, "orders", 2, 3_000_000), (1, "payments", 0, 500),
    (5, "orders", 1, 9_000_000)]


@pytest.fixture
def sized(cluster):
    """Conftest `cluster` (orders-0..2 on brokers 1-3, payments-0 on 1; broker 3 fenced), a running broker 5 in
    rack-9 without replicas, and the replica sizes of `SIZES`."""
    Broker.objects.create(broker_id=5, listeners="PLAINTEXT://127.0.0.1:9096", rack="rack-9", state=BrokerState.RUNNING)
    for broker, topic, partition, size in SIZES:
        PartitionReplicaSize.objects.create(broker_id=broker, topic=topic, partition=partition, log_dir="/d",
                                            size_bytes=size, log_start_offset=0, log_end_offset=1, leader=False,
                                            sampled_at="2026-01-01T00:00:00Z")


def _oracle() -> dict[int, dict[str, tuple[int, float, float]]]:
    """(value, % of the total, % minus the even share) per broker and measure, counted from the database."""
    brokers = list(Broker.objects.order_by("broker_id").values_list("broker_id", flat=True))
    partitions = list(Partition.objects.select_related("topic"))
    placed = {(b, p.topic.name, p.partition) for p in partitions for b in p.replicas}
    counts = {"replicas": Counter(b for p in partitions for b in p.replicas),
              "leaders": Counter(p.leader for p in partitions),
              "bytes": Counter({b: sum(size for broker, t, p, size in SIZES if broker == b and (b, t, p) in placed)
                                for b in brokers})}
    expected = {b: {} for b in brokers}
    for measure, count in counts.items():
        total = sum(count[b] for b in brokers)
        for b in brokers:
            pct = 100 * count[b] / total
            expected[b][measure] = (count[b], pct, pct - 100 / len(brokers))
    return expected


def _figures(report: dict) -> dict[tuple[int, str], tuple[int, float, float]]:
    return {(row["broker"], m): (row[m]["value"], row[m]["pct"], row[m]["skew_pp"])
            for row in report["brokers"] for m in ("replicas", "leaders", "bytes")}


def _flat(expected: dict[int, dict[str, tuple[int, float, float]]]) -> dict[tuple[int, str], tuple]:
    return {(b, m): figures for b, by_measure in expected.items() for m, figures in by_measure.items()}


def _viewer() -> APIClient:
    client = APIClient()
    client.force_authenticate(user_with_role("vera", Role.VIEWER))
    return client


def test_rest_gives_each_brokers_share_and_skew(sized):
    answer = _viewer().get("/api/skew/")
    assert answer.status_code == 200
    report = answer.json()
    got, expected = _figures(report), _flat(_oracle())
    assert got.keys() == expected.keys()
    assert all(got[k] == pytest.approx(expected[k]) for k in expected), (got, expected)
    assert report["even_share_pct"] == 25.0 and report["skewed_pp"] == 10.0
    rows = {row["broker"]: row for row in report["brokers"]}
    assert (rows[3]["state"], rows[5]["rack"]) == ("fenced", "rack-9")
    # broker 1: 4 of 10 replicas (+15 points) and 4,000,500 of 8,000,500 bytes (+25 points); broker 5: none
    assert rows[1]["replicas"]["skewed"] and rows[1]["bytes"]["skewed"] and rows[5]["replicas"]["skewed"]
    assert not rows[2]["replicas"]["skewed"]  # 3 of 10: +5 points
    assert report["max_skew_pp"] == pytest.approx(
        {m: max(abs(f[m][2]) for f in _oracle().values()) for m in ("replicas", "leaders", "bytes")})


def test_rest_with_no_samples_or_brokers(db):
    assert _viewer().get("/api/skew/").json() == {
        "even_share_pct": None, "skewed_pp": 10.0, "max_skew_pp": {"replicas": None, "leaders": None, "bytes": None},
        "brokers": []}


def test_rest_needs_a_login(sized):
    assert APIClient().get("/api/skew/").status_code in (401, 403)


def test_cli_prints_the_same_figures(sized):
    out = StringIO()
    call_command("broker_skew", "--json", stdout=out)
    assert json.loads(out.getvalue()) == _viewer().get("/api/skew/").json()

    out = StringIO()
    call_command("broker_skew", stdout=out)
    lines = out.getvalue().splitlines()
    cells = {int(line.split()[0]): re.findall(r"(\d+) +([\d.]+) % +([+-][\d.]+)(\*?)", line) for line in lines[1:-1]}
    assert cells == {b: [(str(value), f"{pct:.1f}", f"{skew:+.1f}", "*" if abs(skew) >= 10 else "")
                         for value, pct, skew in figures.values()] for b, figures in _oracle().items()}
    assert lines[-1].startswith("even share 25.0 % for 4 brokers; largest skew (points): replicas 25.0, ")
