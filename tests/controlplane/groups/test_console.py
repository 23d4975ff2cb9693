"""Console pages Consumer groups and group detail over a fake of the Kafka-client layer."""

import pytest
from django.test import Client

from controlplane.groups.kafka_client import Member, TopicPartition
from tests.controlplane.groups.conftest import FakeLog

E0, E1 = TopicPartition("events", 0), TopicPartition("events", 1)


@pytest.fixture
def client(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def groups(connected_to_fake):
    """events-0 holds offsets 0-11, events-1 offsets 0-3. 'etl' (Empty) committed events-0 at 4; 'app.v2' (Stable)
    has one member owning both partitions with events-1 committed at 1."""
    fake = connected_to_fake
    fake.add_topic("events", FakeLog(0, [0] * 12), FakeLog(0, [0] * 4))
    fake.add_group("etl", committed={E0: 4})
    fake.add_group("app.v2", "Stable", (Member("m-7", "worker", "/10.1.2.3", None, (E0, E1)),), {E1: 1})
    return fake


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/groups/", "/groups/etl/"])
def test_login_required(url):
    response = Client().get(url)
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_list_links_every_group(client, groups):
    content = client.get("/groups/").content.decode()
    assert '<a href="/groups/app.v2/">app.v2</a>' in content and '<a href="/groups/etl/">etl</a>' in content
    assert 'class="state state-stable">Stable<' in content
    assert [g.group_id for g in client.get("/groups/?q=ET").context["groups"]] == ["etl"]
    assert "No consumer groups match" in client.get("/groups/?q=zzz").content.decode()


def test_detail_shows_lag_per_partition(client, groups):
    response = client.get("/groups/app.v2/")
    assert response.status_code == 200
    group = response.context["group"]
    assert [(p.partition, p.current_offset, p.log_end_offset, p.lag) for p in group.partitions] == [
        (0, None, 12, None), (1, 1, 4, 3)]
    content = response.content.decode()
    assert '<span class="figure" id="total-lag">3</span>' in content
    assert '<td class="lag">3</td>' in content and "m-7" in content


def test_detail_of_an_inactive_group(client, groups):
    content = client.get("/groups/etl/").content.decode()
    assert "Consumer group 'etl' has no active members." in content
    assert '<td class="lag">8</td>' in content


def test_unknown_group_is_404_with_the_message(client, groups):
    response = client.get("/groups/nope/")
    assert response.status_code == 404
    assert "Consumer group &#x27;nope&#x27; does not exist." in response.content.decode()


def test_unreachable_cluster_is_shown(client, groups):
    groups.unreachable = True
    response = client.get("/groups/")
    assert response.status_code == 200
    assert 'role="alert">the Kafka cluster at fake:9092 did not answer' in response.content.decode()
    assert client.get("/groups/etl/").status_code == 503


def test_without_running_brokers_the_page_says_so(client):
    assert b"No broker is running" in client.get("/groups/").content
