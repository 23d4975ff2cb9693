"""REST API: every read endpoint needs login (session or token), paginates and filters."""

import pytest
from rest_framework.test import APIClient

from controlplane.access.models import ApiToken
from tests.conftest import PASSWORD

ENDPOINTS = ["/api/brokers/", "/api/topics/", "/api/partitions/", "/api/health-snapshots/",
             "/api/brokers/1/", "/api/topics/orders/"]


@pytest.mark.django_db
@pytest.mark.parametrize("url", ENDPOINTS + ["/api/schema/", "/api/docs/"])
def test_nothing_is_readable_without_login(cluster, url):
    response = APIClient().get(url)
    assert response.status_code in (401, 403)


@pytest.mark.django_db
@pytest.mark.parametrize("url", ENDPOINTS)
def test_token_authentication(cluster, user, url):
    _, secret = ApiToken.objects.create(user=user, expiry=None, name="reader")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    assert client.get(url).status_code == 200


@pytest.mark.django_db
def test_token_endpoint_issues_tokens_for_valid_credentials(user, cluster):
    client = APIClient()
    assert client.post("/api/token/", {"username": "operator", "password": "wrong"}).status_code == 400
    response = client.post("/api/token/", {"username": "operator", "password": PASSWORD, "name": "ci"})
    assert response.status_code == 200
    body = response.json()
    assert (body["name"], body["expiry"]) == ("ci", None)
    assert ApiToken.objects.get(user=user).name == "ci"
    client.credentials(HTTP_AUTHORIZATION=f"Token {body['token']}")
    assert client.get("/api/brokers/").json()["count"] == cluster["brokers"]


@pytest.mark.django_db
def test_session_authentication(cluster, user):

    client = APIClient()
    client.force_login(user)
    assert client.get("/api/brokers/").json()["count"] == cluster["brokers"]


def test_brokers_list_and_filters(api_client, cluster):
    body = api_client.get("/api/brokers/").json()
    assert [b["broker_id"] for b in body["results"]] == [1, 2, 3]
    assert body["results"][0]["listeners"] == "PLAINTEXT://127.0.0.1:9092"
    assert [b["broker_id"] for b in api_client.get("/api/brokers/?state=fenced").json()["results"]] == [3]
    assert [b["broker_id"] for b in api_client.get("/api/brokers/?broker_id__in=1,3").json()["results"]] == [1, 3]
    assert api_client.get("/api/brokers/?state=dancing").status_code == 400


def test_topic_detail_has_partition_count_and_replication_factor(api_client, cluster):
    topic = api_client.get("/api/topics/orders/").json()
    assert topic["partition_count"] == 3
    assert topic["replication_factor"] == 3
    assert topic["configs"] == {"retention.ms": "3600000"}
    assert topic["is_internal"] is False
    assert api_client.get("/api/topics/nope/").status_code == 404


def test_topics_filter_and_ordering(api_client, cluster):
    names = lambda query: [t["name"] for t in api_client.get(f"/api/topics/{query}").json()["results"]]  # noqa: E731
    assert names("") == ["orders", "payments"]
    assert names("?name__contains=PAY") == ["payments"]
    assert names("?ordering=-partition_count") == ["orders", "payments"]


def test_partitions_filter_by_topic_and_leader(api_client, cluster):
    rows = api_client.get("/api/partitions/?topic=orders&leader=2").json()["results"]
    assert rows == [{"topic": "orders", "partition": 1, "replicas": [2, 3, 1], "isr": [2, 1], "leader": 2,
                     "leader_epoch": 0, "partition_epoch": 0, "is_under_replicated": True}]


def test_pagination(api_client, cluster):
    first = api_client.get("/api/partitions/?limit=3").json()
    assert first["count"] == cluster["partitions"]
    assert len(first["results"]) == 3
    rest = api_client.get(first["next"]).json()
    assert len(rest["results"]) == cluster["partitions"] - 3
    assert rest["next"] is None


def test_metadata_endpoints_without_mutations_are_read_only(api_client, cluster):
    assert api_client.put("/api/topics/orders/", {"name": "new"}).status_code == 405
    assert api_client.delete("/api/brokers/1/").status_code == 405
