import pytest
from django.test import Client

from tests.conftest import PASSWORD

PAGES = ["/", "/brokers/", "/topics/", "/groups/", "/reassignments/", "/alerts/", "/reports/", "/audit/", "/tokens/"]


@pytest.fixture
def client(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
@pytest.mark.parametrize("url", PAGES)
def test_pages_require_login(url):
    response = Client().get(url)
    assert response.status_code == 302
    assert response["Location"] == f"/login/?next={url}"


@pytest.mark.django_db
def test_login_page_and_bad_credentials(user):
    client = Client()
    assert client.get("/login/").status_code == 200
    response = client.post("/login/", {"username": "operator", "password": "nope"})
    assert response.status_code == 200
    assert b"didn't match" in response.content
    response = client.post("/login/", {"username": "operator", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/"


@pytest.mark.parametrize("url", PAGES)
def test_every_section_renders_with_navigation(client, url):
    response = client.get(url)
    assert response.status_code == 200
    for label in ("Overview", "Brokers", "Topics", "Consumer groups", "Reassignments", "Alerts", "Reports", "Audit log",
                  "Dashboard"):
        assert f">{label}</a>".encode() in response.content


def test_overview_shows_the_metadata_store(client, cluster):
    context = client.get("/").context
    assert context["brokers_running"] == cluster["running"]
    assert context["topic_count"] == cluster["topics"]
    assert context["partition_count"] == cluster["partitions"]
    assert [str(p) for p in context["offline"]] == ["orders-2"]
    assert [str(p) for p in context["under_replicated"]] == ["orders-1"]


def test_overview_of_an_empty_cluster(client):
    content = client.get("/").content
    assert b"No broker has registered yet." in content
    assert b"No topics yet." in content


def test_topics_page_filters_by_name(client, cluster):
    topics = client.get("/topics/?q=pay").context["topics"]
    assert [t.name for t in topics] == ["payments"]
