"""Time filters take any ISO 8601 offset Python parses, compare in UTC, and answer 400 for a time outside the
calendar in UTC; integer filters answer 400 beyond 64 bits — never a 500 (PostgreSQL refuses offsets beyond
±15:59, neither database takes an integer beyond 64 bits; schemathesis found both)."""

import datetime

import pytest

from controlplane.audit.models import AuditEntry
from controlplane.health.models import ClusterHealthSnapshot

AT = datetime.datetime(2024, 3, 1, 12, 0, tzinfo=datetime.UTC)


@pytest.fixture
def rows(db):
    ClusterHealthSnapshot.objects.create(taken_at=AT, brokers_total=1, brokers_running=1, topics=0, partitions=0,
                                         offline_partitions=0, under_replicated_partitions=0, controller_epoch=1)
    entry = AuditEntry.objects.create(actor="a", source="cli", action="reset_offsets", result="ok")
    AuditEntry.objects.filter(pk=entry.pk).update(at=AT)


@pytest.mark.parametrize(("query", "count"), [
    ("2024-03-02T07:13:00%2B19:13", 1),  # 12:00 UTC: AT itself
    ("2024-03-02T00:01:00%2B12:00", 0),  # 12:01 UTC: after AT
])
def test_large_offsets_are_compared_in_utc(api_client, rows, query, count):
    health = api_client.get(f"/api/health-snapshots/?taken_at__gte={query}")
    audit = api_client.get(f"/api/audit/?since={query}")
    assert (health.status_code, audit.status_code) == (200, 200)
    assert (health.json()["count"], audit.json()["count"]) == (count, count)


def test_a_time_outside_the_calendar_in_utc_is_a_400(api_client, rows):
    for url in ("/api/health-snapshots/?taken_at__lte=0001-01-01T00:00:00%2B05:00",
                "/api/audit/?until=0001-01-01T00:00:00%2B05:00"):
        response = api_client.get(url)
        assert response.status_code == 400, url


@pytest.mark.parametrize("url", [
    "/api/metrics/brokers/?broker_id=99999999999999999999",
    "/api/metrics/brokers/?broker_id__in=1,99999999999999999999",
    "/api/metrics/brokers/?resolution=-99999999999999999999",
    "/api/partitions/?leader=99999999999999999999",
    "/api/brokers/?broker_id=99999999999999999999",
])
def test_an_integer_beyond_64_bits_is_a_400(api_client, url):
    assert api_client.get(url).status_code == 400, url


def test_integers_within_64_bits_still_filter(api_client, cluster):
    assert api_client.get("/api/partitions/?leader=1").json()["count"] == 2
    assert api_client.get(f"/api/partitions/?leader={2**63 - 1}").json()["count"] == 0
