"""The console's Brokers page with Django's test client: each broker's share of replicas, leaders and bytes on disk
with its skew, checked against an oracle counted from the fixture's assignment; the page's queries do not grow
with the brokers; the Decommission button leads to the decommission preview, needs the operator role and is
audited once."""

import re
from collections import Counter
from html import unescape

import pytest
from django.db import connection
from django.template.defaultfilters import filesizeformat
from django.test import Client
from django.test.utils import CaptureQueriesContext

from controlplane.access.actions import Role
from controlplane.audit.models import AuditEntry
from controlplane.cluster.models import Broker, BrokerState
from controlplane.controller import skew
from controlplane.controller.models import ReassignmentExecution
from controlplane.metrics.models import PartitionReplicaSize
from controlplane.topics.models import Partition
from tests.conftest import user_with_role

SIZES = [  # (broker, topic, partition, bytes); the last is a stale row: payments-0 is not on broker 2
    (1, "payments", 0, 3_000_000), (1, "orders", 0, 1_000_000), (2, "orders", 0, 1_000_000),
    (3, "orders", 2, 2_000_000), (2, "payments", 0, 5_000_000)]


@pytest.fixture
def brokers_page(cluster):
    """Conftest `cluster` (orders-0..2 on brokers 1-3, payments-0 on 1; broker 3 fenced) plus a running broker 4
    without replicas (somewhere to decommission to), and the replica sizes of `SIZES`."""
    Broker.objects.create(broker_id=4, listeners="PLAINTEXT://127.0.0.1:9095", rack="rack-0", state=BrokerState.RUNNING)
    for broker, topic, partition, size in SIZES:
        PartitionReplicaSize.objects.create(broker_id=broker, topic=topic, partition=partition, log_dir="/d",
                                            size_bytes=size, log_start_offset=0, log_end_offset=1, leader=False,
                                            sampled_at="2026-01-01T00:00:00Z")
    client = Client()
    client.force_login(user_with_role("olga", Role.OPERATOR))
    return client


def _oracle() -> dict[tuple[int, str], str]:
    """The expected cell per (broker, measure), counted straight from the partitions and `SIZES`."""
    brokers = list(Broker.objects.order_by("broker_id").values_list("broker_id", flat=True))
    placed = {(b, p.topic.name, p.partition) for p in Partition.objects.select_related("topic") for b in p.replicas}
    counts = {"replicas": Counter(b for p in Partition.objects.all() for b in p.replicas),
              "leaders": Counter(p.leader for p in Partition.objects.all()),
              "bytes": Counter()}
    for broker, topic, partition, size in SIZES:
        if (broker, topic, partition) in placed:
            counts["bytes"][broker] += size
    cells = {}
    for measure, count in counts.items():
        total = sum(count[b] for b in brokers)
        for b in brokers:
            pct = 100 * count[b] / total
            shown = filesizeformat(count[b]) if measure == "bytes" else str(count[b])
            cells[b, measure] = f"{shown} · {pct:.1f} % ({pct - 100 / len(brokers):+.1f})"
    return cells


def _cells(html: str) -> dict[tuple[int, str], str]:
    cells = {}
    for row in re.findall(r'<tr data-broker="(\d+)">(.*?)</tr>', html, re.S):
        for measure, text in re.findall(r'data-share="(\w+)">(.*?)</td>', row[1], re.S):
            cells[int(row[0]), measure] = unescape(re.sub(r"<[^>]+>", "", text)).strip()
    return cells


def test_columns_show_each_brokers_share_and_skew(brokers_page):
    html = brokers_page.get("/brokers/").content.decode()
    assert _cells(html) == _oracle()
    # leaders 2 of 4 on broker 1 against an even 25 %: highlighted; its 40 % of replicas (+15) too
    assert re.search(r'class="share skewed" data-share="leaders">2 ', html)
    assert "25.0 % for 4 brokers" in html


def test_the_page_reads_the_same_queries_for_more_brokers(brokers_page):
    with CaptureQueriesContext(connection) as four:
        assert brokers_page.get("/brokers/").status_code == 200
    for broker_id in range(5, 25):
        Broker.objects.create(broker_id=broker_id, listeners=f"PLAINTEXT://127.0.0.1:{9100 + broker_id}")
    with CaptureQueriesContext(connection) as twenty_four:
        assert brokers_page.get("/brokers/").status_code == 200
    assert len(twenty_four) == len(four)


@pytest.mark.parametrize(("replicas", "leaders", "size", "expected"), [
    # brokers 1, 2: even share 50 %
    ({1: 3, 2: 1}, {1: 1, 2: 1}, {}, {1: ((75.0, 25.0), (50.0, 0.0), (None, None)),
                                      2: ((25.0, -25.0), (50.0, 0.0), (None, None))}),
    ({}, {}, {2: 10}, {1: ((None, None), (None, None), (0.0, -50.0)),
                       2: ((None, None), (None, None), (100.0, 50.0))}),
    # counts of brokers not listed (a leaderless partition's -1) are not part of the total
    ({1: 1, 9: 5}, {-1: 3, 2: 1}, {}, {1: ((100.0, 50.0), (0.0, -50.0), (None, None)),
                                       2: ((0.0, -50.0), (100.0, 50.0), (None, None))}),
])
def test_shares_table(replicas, leaders, size, expected):
    got = skew.shares([1, 2], replicas, leaders, size)
    assert {b: tuple((s.pct, s.skew) for s in (g.replicas, g.leaders, g.bytes)) for b, g in got.items()} == expected


def test_decommission_button_leads_to_the_preview_and_is_audited_once(brokers_page):
    html = brokers_page.get("/brokers/").content.decode()
    assert 'action="/brokers/2/decommission/"' in html and 'data-action="decommission_broker"' in html

    answer = brokers_page.post("/brokers/2/decommission/")
    assert answer.status_code == 302
    assert answer["Location"] == "/reassignments/?source=goal&goal=decommission&brokers=2#preview-result"
    preview = brokers_page.get(answer["Location"]).content.decode()
    assert "Preview: decommission broker 2" in preview and 'data-action="start_reassignment"' in preview
    moved = re.findall(r"<td>(\w+)</td><td>(\d)</td><td><code>([\d, ]+)</code></td><td><code>([\d, ]+)</code>",
                       preview)
    on_broker_2 = {(p.topic.name, str(p.partition)) for p in Partition.objects.select_related("topic")
                   if 2 in p.replicas}
    assert {(t, p) for t, p, _, _ in moved} == on_broker_2
    assert all("2" not in after.split(", ") for *_, after in moved)
    assert not ReassignmentExecution.objects.exists()  # executing is the preview's own button

    entry = AuditEntry.objects.get()
    assert (entry.action, entry.target, entry.source, entry.result, entry.actor) == (
        "decommission_broker", "broker:2", "console", "ok", "olga")
    assert (entry.before["replicas"], entry.before["preferred_leaders"]) == (3, 1)  # orders-1 prefers broker 2
    assert (entry.after["partitions"], entry.after["replica_moves"]) == (len(on_broker_2), len(on_broker_2))


def test_a_broker_that_cannot_be_decommissioned_goes_back_with_the_reason(brokers_page):
    answer = brokers_page.post("/brokers/3/decommission/", follow=True)  # broker 3 is fenced
    assert answer.redirect_chain == [("/brokers/", 302)]
    assert "Broker 3 cannot be decommissioned: decommission needs running brokers" in answer.content.decode()
    assert AuditEntry.objects.get().result == "failed"


def test_a_viewer_sees_decommission_disabled_and_is_refused(cluster):
    client = Client()
    client.force_login(user_with_role("val", Role.VIEWER))
    html = client.get("/brokers/").content.decode()
    assert len(re.findall(r'data-action="decommission_broker"[^>]*disabled', html)) == 3
    assert client.post("/brokers/1/decommission/").status_code == 403
    assert AuditEntry.objects.get().result == "refused"
