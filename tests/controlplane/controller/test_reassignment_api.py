"""/api/reassignments/: Kafka's tool over REST — execute with a throttle, list, verify (clearing throttles),
cancel, generate — and its errors."""

import pytest
from rest_framework.test import APIClient

from controlplane.access.actions import Role
from controlplane.audit.models import AuditEntry
from controlplane.cluster import services
from controlplane.cluster.models import BrokerConfig
from controlplane.topics.models import Partition, Topic
from controlplane.topics.services import create_topic
from tests.conftest import user_with_role

API = "/api/reassignments/"


@pytest.fixture
def api(db):
    """Brokers 1-4; topic t: [1, 2], [2, 3]; an operator's client."""
    epochs = {b: services.register_broker(b, f"PLAINTEXT://127.0.0.1:{9090 + b}", None, [])["registration_epoch"]
              for b in (1, 2, 3, 4)}
    create_topic("t", assignments=[[1, 2], [2, 3]])
    client = APIClient()
    client.force_authenticate(user_with_role("ops", Role.OPERATOR))
    client.epochs = epochs
    return client


def test_execute_list_verify_and_clear(api):
    answer = api.post(API, {"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2, 4]}],
                            "throttle": 2097152}, format="json")
    assert answer.status_code == 200 and answer.json() == [{"topic": "t", "partition": 0, "error": None,
                                                           "message": None}]
    assert api.get(API).json() == [{"topic": "t", "partition": 0, "replicas": [1, 2, 4], "adding_replicas": [4],
                                    "removing_replicas": []}]
    plan = {"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2, 4]}]}
    assert api.post(API + "verify/", plan, format="json").json()[0]["state"] == "in progress"
    assert Topic.objects.get(name="t").configs  # still throttled

    p = Partition.objects.get(topic__name="t", partition=0)
    services.alter_partition(1, api.epochs[1], "t", 0, p.leader_epoch, p.partition_epoch, [1, 2, 4])
    assert api.post(API + "verify/", plan, format="json").json()[0]["state"] == "completed"
    assert Topic.objects.get(name="t").configs == {} and not any(c.configs for c in BrokerConfig.objects.all())
    assert list(AuditEntry.objects.order_by("id").values_list("action", "source")) == [
        ("start_reassignment", "rest"), ("clear_reassignment_throttles", "rest")]


def test_cancel_every_reassignment(api):
    api.post(API, {"partitions": [{"topic": "t", "partition": 0, "replicas": [3, 4]},
                                  {"topic": "t", "partition": 1, "replicas": [1, 4]}]}, format="json")
    answer = api.post(API + "cancel/", {}, format="json")
    assert [r["error"] for r in answer.json()] == [None, None]
    assert api.get(API).json() == []
    assert list(Partition.objects.order_by("partition").values_list("replicas", flat=True)) == [[1, 2], [2, 3]]


def test_generate_places_topics_onto_brokers(api):
    answer = api.get(API + "generate/", {"topics": "t", "brokers": "2,3,4"}).json()
    assert [e["replicas"] for e in answer["current"]] == [[1, 2], [2, 3]]
    assert all(set(e["replicas"]) <= {2, 3, 4} and len(e["replicas"]) == 2 for e in answer["proposed"])


@pytest.mark.parametrize(("method", "path", "body", "status", "error"), [
    ("post", API, {"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 9]}]}, 400,
     "INVALID_REPLICA_ASSIGNMENT"),
    ("post", API, {"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 3]}], "throttle": 5}, 400,
     "INVALID_REQUEST"),
    ("post", API, {"partitions": [{"topic": "x", "partition": 0, "replicas": [1]}]}, 404,
     "UNKNOWN_TOPIC_OR_PARTITION"),
    ("post", API, {"partitions": []}, 400, None),
    ("get", API + "generate/", {"topics": "t", "brokers": "1,x"}, 400, None),
    ("get", API + "generate/", {"topics": "t", "brokers": "1"}, 400, "INVALID_REPLICATION_FACTOR"),
])
def test_errors(api, method, path, body, status, error):
    answer = getattr(api, method)(path, body, format="json") if method == "post" else api.get(path, body)
    assert answer.status_code == status
    if error:
        assert answer.json()["error"] == error
    assert api.get(API).json() == []


def test_a_viewer_may_list_but_not_execute(api):
    viewer = APIClient()
    viewer.force_authenticate(user_with_role("val", Role.VIEWER))
    assert viewer.get(API).status_code == 200
    answer = viewer.post(API, {"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2, 4]}]},
                         format="json")
    assert answer.status_code == 403 and "operator role" in answer.json()["detail"]


def test_a_proposal_executes_as_a_plan(api):
    proposal = api.get("/api/proposals/", {"goal": "decommission", "brokers": "3"}).json()
    assert proposal["replica_moves"] == 1 and [m["partition"] for m in proposal["moves"]] == [1]
    assert {b["broker"]: b["replicas_after"] for b in proposal["brokers"]}[3] == 0
    answer = api.post(API, {"partitions": proposal["plan"]}, format="json")
    assert [r["error"] for r in answer.json()] == [None]
    assert api.get(API).json()[0]["removing_replicas"] == [3]


def test_a_bad_proposal_request_is_400(api):
    answer = api.get("/api/proposals/", {"goal": "tidy"})
    assert answer.status_code == 400 and answer.json()["error"] == "INVALID_REQUEST"
