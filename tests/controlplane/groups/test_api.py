"""REST API /api/groups/ over a fake of the Kafka-client layer: auth, shapes, 400/404/409/503."""

import pytest
from rest_framework.test import APIClient

from controlplane.groups.kafka_client import Member, TopicPartition
from tests.controlplane.groups.conftest import FakeLog

L0, L1 = TopicPartition("logs", 0), TopicPartition("logs", 1)


@pytest.fixture
def groups(connected_to_fake):
    """logs-0: offsets 0-5, logs-1: offsets 2-3. 'idle' (Empty) committed logs-0 at 1; 'busy' (Stable) has a
    member owning logs-0 and logs-1."""
    fake = connected_to_fake
    fake.add_topic("logs", FakeLog(0, [1000 * i for i in range(6)]), FakeLog(2, [500, 600]))
    fake.add_group("idle", committed={L0: 1})
    fake.add_group("busy", "Stable", (Member("m-1", "svc", "/127.0.0.1", "svc-0", (L0, L1)),), {L0: 5, L1: 3})
    return fake


def reset(client, group, **body):
    return client.post(f"/api/groups/{group}/reset-offsets/", body, format="json")


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "url"), [("get", "/api/groups/"), ("get", "/api/groups/idle/"),
                                             ("post", "/api/groups/idle/reset-offsets/"),
                                             ("delete", "/api/groups/idle/")])
def test_login_required(groups, method, url):
    assert getattr(APIClient(), method)(url).status_code in (401, 403)


def test_list(api_client, groups):
    body = api_client.get("/api/groups/").json()
    assert body["count"] == 2
    assert body["results"] == [{"group_id": "busy", "state": "Stable", "protocol_type": "consumer", "members": 1},
                               {"group_id": "idle", "state": "Empty", "protocol_type": "consumer", "members": 0}]
    assert [g["group_id"] for g in api_client.get("/api/groups/?limit=1&offset=1").json()["results"]] == ["idle"]


def test_detail(api_client, groups):
    body = api_client.get("/api/groups/busy/").json()
    assert (body["state"], body["is_active"], body["assignor"], body["total_lag"]) == ("Stable", True, "range", 2)
    assert body["members"] == [{"member_id": "m-1", "client_id": "svc", "host": "/127.0.0.1",
                                "group_instance_id": "svc-0",
                                "assignment": [{"topic": "logs", "partition": 0}, {"topic": "logs", "partition": 1}]}]
    assert body["partitions"][0] == {"topic": "logs", "partition": 0, "current_offset": 5, "log_end_offset": 6,
                                     "lag": 1, "consumer_id": "m-1", "host": "/127.0.0.1", "client_id": "svc"}


def test_unknown_group_is_404(api_client, groups):
    response = api_client.get("/api/groups/ghost/")
    assert response.status_code == 404
    assert response.json() == {"error": "GROUP_ID_NOT_FOUND", "message": "Consumer group 'ghost' does not exist."}
    assert reset(api_client, "ghost", all_topics=True, spec="to-earliest").status_code == 404
    assert api_client.delete("/api/groups/ghost/").status_code == 404


def test_dry_run_is_the_default(api_client, groups):
    response = reset(api_client, "idle", topics=["logs"], spec="to-offset", value=5)
    assert response.status_code == 200
    assert response.json() == {
        "group_id": "idle", "state": "Empty", "spec": "to-offset", "executed": False,
        "warnings": ["New offset (5) is higher than latest offset for topic partition logs-1. Value will be set to 4"],
        "partitions": [
            {"topic": "logs", "partition": 0, "current_offset": 1, "new_offset": 5, "log_start_offset": 0,
             "log_end_offset": 6, "lag_after": 1},
            {"topic": "logs", "partition": 1, "current_offset": None, "new_offset": 4, "log_start_offset": 2,
             "log_end_offset": 4, "lag_after": 0}]}
    assert groups.committed["idle"] == {L0: 1}


def test_execute(api_client, groups):
    body = reset(api_client, "idle", partitions=[{"topic": "logs", "partition": 1}], spec="to-earliest",
                 dry_run=False).json()
    assert body["executed"] is True
    assert groups.committed["idle"] == {L0: 1, L1: 2}


def test_execute_while_active_is_409(api_client, groups):
    response = reset(api_client, "busy", all_topics=True, spec="shift-by", value="-1", dry_run=False)
    assert response.status_code == 409
    assert response.json() == {"error": "NON_EMPTY_GROUP", "message": "Assignments can only be reset if the group "
                                                                      "'busy' is inactive, but the current state is "
                                                                      "Stable."}
    assert groups.committed["busy"] == {L0: 5, L1: 3}


@pytest.mark.parametrize(("body", "message"), [
    ({"spec": "to-earliest"}, "Give either all topics or a list of topics/partitions to reset"),
    ({"all_topics": True, "topics": ["logs"], "spec": "to-earliest"}, "Give all_topics, or topics/partitions"),
    ({"all_topics": True, "spec": "to-nowhere"}, "spec: \"to-nowhere\" is not a valid choice."),
    ({"all_topics": True, "spec": "to-datetime", "value": "last tuesday"}, "Invalid datetime 'last tuesday'"),
    ({"all_topics": True, "spec": "by-duration"}, "--by-duration needs a value"),
    ({"all_topics": True, "spec": "shift-by", "value": "x"}, "--shift-by needs an integer, got 'x'"),
    ({"partitions": [{"topic": "logs", "partition": -1}], "spec": "to-latest"},
     "partitions: 0: partition: Ensure this value is greater than or equal to 0."),
    ({"topics": ["nope"], "spec": "to-latest"}, "Topic 'nope' does not exist."),
    ({"topics": ["logs:5"], "spec": "to-latest"}, "Topic 'logs' has no partition 5 (it has 2)."),
    ({"topics": ["logs"], "spec": "shift-by", "value": 1},
     "Cannot shift offset for partition logs-1 since there is no current committed offset"),
])
def test_bad_input_is_400_with_a_message(api_client, groups, body, message):
    response = reset(api_client, "idle", **body)
    assert response.status_code == 400
    assert response.json()["message"].startswith(message)
    assert groups.committed["idle"] == {L0: 1}


def test_delete(api_client, groups):
    assert api_client.delete("/api/groups/busy/").status_code == 409
    assert api_client.delete("/api/groups/idle/").status_code == 204
    assert "idle" not in groups.groups


def test_cluster_unreachable_is_503(api_client, groups):
    groups.unreachable = True
    for response in (api_client.get("/api/groups/"), api_client.get("/api/groups/idle/"),
                     reset(api_client, "idle", all_topics=True, spec="to-latest")):
        assert response.status_code == 503
        assert response.json()["error"] == "BROKER_NOT_AVAILABLE"


def test_no_running_broker_is_503_without_waiting(api_client):
    """Real client layer: with no broker registered and no STROM_BOOTSTRAP_SERVERS there is nothing to ask."""
    response = api_client.get("/api/groups/")
    assert response.status_code == 503
    assert response.json()["message"].startswith("No broker is running")


def test_groups_are_in_the_schema(api_client):
    paths = api_client.get("/api/schema/?format=json").json()["paths"]
    assert {"/api/groups/", "/api/groups/{group_id}/", "/api/groups/{group_id}/reset-offsets/"} <= set(paths)
