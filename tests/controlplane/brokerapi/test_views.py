"""The internal API, endpoint by endpoint: answers, every error, authentication, the metadata long poll."""

import json
import socket
import threading
import time

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from controlplane.cluster.models import Broker, BrokerState, ControllerState
from controlplane.liveness.models import BrokerLiveness
from controlplane.topics.models import Partition, Topic
from controlplane.topics.services import create_topic

API = "/internal/v1"


@pytest.fixture
def client():
    return Client(HTTP_AUTHORIZATION=f"Bearer {settings.STROM_CLUSTER_SECRET}")


def call(client, method, path, body=None):
    if method == "GET":
        response = client.get(API + path)
    else:
        response = getattr(client, method.lower())(API + path, json.dumps(body) if body is not None else None,
                                                   content_type="application/json")
    return response.status_code, (response.json() if response.content else None)


def register(client, broker_id, rack=None):
    status, answer = call(client, "POST", "/brokers/register", {
        "broker_id": broker_id, "listeners": f"PLAINTEXT://127.0.0.1:{9090 + broker_id}", "rack": rack,
        "log_dirs": [f"/data/{broker_id}"]})
    assert status == 200, answer
    return answer


@pytest.fixture
def three_brokers(db, client):
    return {b: register(client, b, rack=f"r{b % 2}")["registration_epoch"] for b in (1, 2, 3)}


def version():
    return ControllerState.current().metadata_version


#
# Authentication
#

@pytest.mark.django_db
@pytest.mark.parametrize("header", [None, "Bearer wrong", "Basic x", f"Token {'s'}", "Bearer"])
@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/metadata"), ("POST", "/brokers/register"), ("POST", "/brokers/1/heartbeat"),
    ("GET", "/brokers/1/session"), ("POST", "/topics"),
    ("DELETE", "/topics/t"), ("POST", "/partitions/alter"), ("POST", "/elect-leaders"), ("POST", "/producer-ids"),
])
def test_wrong_or_missing_secret_is_401_and_changes_nothing(method, path, header):
    client = Client(HTTP_AUTHORIZATION=header) if header else Client()
    before = version()
    status, body = call(client, method, path, {})
    assert status == 401 and body["error"] == "CLUSTER_AUTHORIZATION_FAILED"
    assert version() == before


def test_internal_api_is_not_in_the_public_schema(api_client):
    schema = api_client.get("/api/schema/?format=json").json()
    assert not [p for p in schema["paths"] if "internal" in p]


#
# Register and heartbeat
#

@pytest.mark.django_db
def test_register_answers_contract_fields_and_reregistration_increments_epoch(client):
    first = register(client, 1)
    assert set(first) == {"cluster_id", "registration_epoch", "heartbeat_interval_ms", "session_timeout_ms",
                          "metadata_version"}
    assert first["registration_epoch"] == 1
    assert first["heartbeat_interval_ms"] == settings.STROM_BROKER_HEARTBEAT_INTERVAL_MS
    assert first["session_timeout_ms"] == settings.STROM_BROKER_SESSION_TIMEOUT_MS
    second = register(client, 1)
    assert second["registration_epoch"] == 2 and second["metadata_version"] > first["metadata_version"]
    assert second["cluster_id"] == first["cluster_id"] == ControllerState.current().cluster_id
    broker = Broker.objects.get(broker_id=1)
    assert broker.state == BrokerState.RUNNING and broker.log_dirs == ["/data/1"]


@pytest.mark.django_db
@pytest.mark.parametrize("body", [
    {"listeners": "PLAINTEXT://h:1"},
    {"broker_id": "1", "listeners": "PLAINTEXT://h:1"},
    {"broker_id": -1, "listeners": "PLAINTEXT://h:1"},
    {"broker_id": 1, "listeners": "h:1"},
    {"broker_id": 1, "listeners": "PLAINTEXT://h:1", "log_dirs": "/x"},
    {"broker_id": True, "listeners": "PLAINTEXT://h:1"},
])
def test_invalid_registrations_are_refused(client, body):
    status, answer = call(client, "POST", "/brokers/register", body)
    assert (status, answer["error"]) == (400, "INVALID_REQUEST")
    assert not Broker.objects.exists()


@pytest.mark.django_db
def test_malformed_json_is_invalid_request(client):
    response = client.post(API + "/brokers/register", b"{nope", content_type="application/json")
    assert response.status_code == 400 and response.json()["error"] == "INVALID_REQUEST"


def test_heartbeat_of_running_broker(client, three_brokers):
    status, answer = call(client, "POST", "/brokers/2/heartbeat", {"registration_epoch": 1, "shutting_down": False})
    assert status == 200 and answer == {"state": "running", "metadata_version": version()}


@pytest.mark.parametrize(("broker_id", "epoch"), [(2, 0), (2, 2), (9, 1)])
def test_heartbeat_with_other_epoch_or_unknown_broker_is_stale(client, three_brokers, broker_id, epoch):
    before = BrokerLiveness.objects.get(broker_id=2).last_heartbeat
    status, answer = call(client, "POST", f"/brokers/{broker_id}/heartbeat", {"registration_epoch": epoch})
    assert (status, answer["error"]) == (409, "STALE_BROKER_EPOCH")
    assert BrokerLiveness.objects.get(broker_id=2).last_heartbeat == before


def test_fenced_broker_learns_it_must_register_again(client, three_brokers):
    Broker.objects.filter(broker_id=3).update(state=BrokerState.FENCED)
    status, answer = call(client, "POST", "/brokers/3/heartbeat", {"registration_epoch": 1})
    assert status == 200 and answer["state"] == "fenced"
    assert Broker.objects.get(broker_id=3).state == BrokerState.FENCED


def test_controlled_shutdown_moves_leadership_and_leaves_isr(client, three_brokers):
    create_topic("t", 3, 3)
    led = {p.partition for p in Partition.objects.filter(leader=1)}
    assert led
    status, answer = call(client, "POST", "/brokers/1/heartbeat", {"registration_epoch": 1, "shutting_down": True})
    assert status == 200 and answer["state"] == "shutting_down"
    for p in Partition.objects.all():
        assert p.leader != 1 and 1 not in p.isr
        assert p.leader_epoch == (1 if p.partition in led else 0)


#
# Metadata
#

def test_metadata_image_has_the_contract_shape(client, three_brokers):
    create_topic("orders", 2, 3, configs={"retention.ms": 1000})
    status, image = call(client, "GET", "/metadata")
    assert status == 200
    assert set(image) == {"cluster_id", "metadata_version", "controller_id", "brokers", "topics", "broker_configs"}
    assert image["metadata_version"] == version() and image["controller_id"] == 1
    assert image["brokers"][0] == {"broker_id": 1, "listeners": "PLAINTEXT://127.0.0.1:9091", "rack": "r1",
                                   "state": "running", "registration_epoch": 1}
    [topic] = image["topics"]
    assert topic["name"] == "orders" and topic["configs"] == {"retention.ms": "1000"}
    assert topic["topic_id"] == str(Topic.objects.get().topic_id)
    assert [set(p) for p in topic["partitions"]] == [{"partition", "replicas", "isr", "leader", "leader_epoch",
                                                      "partition_epoch", "adding_replicas", "removing_replicas"}] * 2


@pytest.mark.django_db
@pytest.mark.parametrize("query", ["min_version=x", "wait_ms=1.5"])
def test_metadata_with_bad_parameters_is_invalid(client, query):
    assert client.get(f"{API}/metadata?{query}").json()["error"] == "INVALID_REQUEST"


@pytest.mark.django_db
def test_metadata_long_poll_times_out_with_the_current_image(client):
    started = time.monotonic()
    status, image = call(client, "GET", f"/metadata?min_version={version() + 1}&wait_ms=200")
    assert status == 200 and image["metadata_version"] == version()
    assert time.monotonic() - started >= 0.2


@pytest.mark.django_db(transaction=True)
def test_metadata_long_poll_wakes_promptly_on_a_change():
    client = Client(HTTP_AUTHORIZATION=f"Bearer {settings.STROM_CLUSTER_SECRET}")
    target = version() + 1
    answered = {}

    def poll():
        started = time.monotonic()
        answered["image"] = call(client, "GET", f"/metadata?min_version={target}&wait_ms=20000")[1]
        answered["at"] = time.monotonic()
        answered["waited"] = answered["at"] - started

    waiter = threading.Thread(target=poll)
    waiter.start()
    waiter.join(0.3)
    assert waiter.is_alive(), "the poll answered although nothing changed"
    changed_at = time.monotonic()
    register(client, 5)
    waiter.join(15)
    assert answered["image"]["metadata_version"] >= target
    assert [b["broker_id"] for b in answered["image"]["brokers"]] == [5]
    # Woken by the change, not by the end of its 20 s wait (the poller reads the version every 20 ms; the bound
    # leaves room for a loaded machine).
    assert answered["at"] - changed_at < 10.0


@pytest.mark.django_db
@pytest.mark.parametrize("query", ["since=x", "since=1&wait_ms=y"])
def test_metadata_changes_with_bad_parameters_is_invalid(client, query):
    assert client.get(f"{API}/metadata/changes?{query}").json()["error"] == "INVALID_REQUEST"


@pytest.mark.django_db(transaction=True)
def test_metadata_changes_long_poll_wakes_with_the_delta():
    client = Client(HTTP_AUTHORIZATION=f"Bearer {settings.STROM_CLUSTER_SECRET}")
    since = version()
    answered = {}

    def poll():
        answered["body"] = call(client, "GET", f"/metadata/changes?since={since}&wait_ms=20000")[1]
        answered["at"] = time.monotonic()

    waiters = [threading.Thread(target=poll) for _ in range(3)]  # one poller serves them all
    for waiter in waiters:
        waiter.start()
    waiters[0].join(0.3)
    assert waiters[0].is_alive(), "the poll answered although nothing changed"
    changed_at = time.monotonic()
    register(client, 6)
    for waiter in waiters:
        waiter.join(15)
    body = answered["body"]
    assert (body["type"], body["since"], body["metadata_version"]) == ("delta", since, since + 1)
    assert [r["broker_id"] for r in body["records"] if r["type"] == "broker"] == [6]
    # Woken by the change, not by the end of their 20 s wait (one poller reads the version every 20 ms; the bound
    # leaves room for a loaded machine).
    assert answered["at"] - changed_at < 10.0


def session(client, broker_id, epoch, peer=None, hold_ms=20_000):
    """The broker's session request, served as gunicorn would (its client socket in the environ)."""
    extra = {} if peer is None else {"gunicorn.socket": peer}
    response = client.get(f"{API}/brokers/{broker_id}/session?registration_epoch={epoch}&hold_ms={hold_ms}",
                          **extra)
    return response.status_code, (response.json() if response.content else None)


def test_broker_hanging_up_its_session_is_recorded_as_connection_loss(client, three_brokers):
    server_end, broker_end = socket.socketpair()
    with server_end:
        broker_end.close()  # the broker process died: the kernel closed its end
        started = time.monotonic()
        status, body = session(client, 1, three_brokers[1], server_end)
    assert (status, body) == (204, None)
    assert time.monotonic() - started < 5  # noticed at once, not after the 20 s hold
    lost = dict(BrokerLiveness.objects.values_list("broker_id", "connection_lost_at"))
    assert lost[1] is not None and lost[2] is None and lost[3] is None


def test_a_session_kept_open_is_answered_after_its_hold_and_records_nothing(client, three_brokers):
    server_end, broker_end = socket.socketpair()
    with server_end, broker_end:
        started = time.monotonic()
        assert session(client, 1, three_brokers[1], server_end, hold_ms=200) == (200, {"watching": True})
        assert time.monotonic() - started >= 0.2
    assert not BrokerLiveness.objects.filter(connection_lost_at__isnull=False).exists()


def test_a_hang_up_during_the_hold_ends_the_session_at_once(client, three_brokers):
    server_end, broker_end = socket.socketpair()
    with server_end:
        closer = threading.Timer(0.3, broker_end.close)  # the broker dies while its session is held
        closer.start()
        started = time.monotonic()
        status, body = session(client, 1, three_brokers[1], server_end)
        closer.join()
    assert (status, body) == (204, None)
    assert time.monotonic() - started < 5  # noticed when it happened, not after the 20 s hold
    assert BrokerLiveness.objects.get(broker_id=1).connection_lost_at is not None


def test_stray_bytes_from_the_broker_neither_end_the_session_nor_spin_its_thread(client, three_brokers):
    server_end, broker_end = socket.socketpair()
    with server_end, broker_end:
        broker_end.sendall(b"x")  # readable without a hang-up: the wait must look again later, not at once
        cpu_before = time.thread_time()
        assert session(client, 1, three_brokers[1], server_end, hold_ms=500) == (200, {"watching": True})
        assert time.thread_time() - cpu_before < 0.25  # a spinning wait would burn the whole 0.5 s
    assert not BrokerLiveness.objects.filter(connection_lost_at__isnull=False).exists()


def test_a_session_of_an_old_or_fenced_registration_is_refused(client, three_brokers):
    register(client, 1)  # a new incarnation: epoch 2
    Broker.objects.filter(broker_id=2).update(state=BrokerState.FENCED)
    server_end, broker_end = socket.socketpair()
    with server_end, broker_end:
        for broker_id, epoch in ((1, 1), (2, three_brokers[2]), (9, 1)):
            status, body = session(client, broker_id, epoch, server_end)
            assert (status, body["error"]) == (409, "STALE_BROKER_EPOCH")


def test_without_gunicorns_socket_the_session_says_it_is_not_watching(client, three_brokers):
    assert session(client, 1, three_brokers[1]) == (200, {"watching": False})


@pytest.mark.django_db
@pytest.mark.parametrize("query", ["", "registration_epoch=x", "registration_epoch=1&hold_ms=y"])
def test_session_with_bad_parameters_is_invalid(client, query):
    assert client.get(f"{API}/brokers/1/session?{query}").json()["error"] == "INVALID_REQUEST"


def test_registering_again_clears_the_connection_loss(client, three_brokers):
    BrokerLiveness.objects.filter(broker_id=1).update(connection_lost_at=timezone.now())
    register(client, 1)
    assert BrokerLiveness.objects.get(broker_id=1).connection_lost_at is None


#
# AlterPartition
#

@pytest.fixture
def shrunk(client, three_brokers):
    """Partition t-0 with replicas [1, 2, 3] led by 1, and the request that shrinks its ISR to [1, 2]."""
    create_topic("t", assignments=[[1, 2, 3]])
    return {"broker_id": 1, "registration_epoch": 1, "topic": "t", "partition": 0, "leader_epoch": 0,
            "partition_epoch": 0, "isr": [1, 2]}


def test_leader_shrinks_and_expands_the_isr(client, shrunk):
    status, answer = call(client, "POST", "/partitions/alter", shrunk)
    assert status == 200
    assert answer == {"topic": "t", "partition": 0, "replicas": [1, 2, 3], "isr": [1, 2], "leader": 1,
                      "leader_epoch": 0, "partition_epoch": 1, "adding_replicas": [], "removing_replicas": []}
    status, answer = call(client, "POST", "/partitions/alter", {**shrunk, "partition_epoch": 1, "isr": [3, 1, 2]})
    assert status == 200 and answer["isr"] == [1, 2, 3] and answer["partition_epoch"] == 2


def test_unchanged_isr_changes_no_epoch(client, shrunk):
    before = version()
    status, answer = call(client, "POST", "/partitions/alter", {**shrunk, "isr": [1, 2, 3]})
    assert status == 200 and answer["partition_epoch"] == 0 and version() == before


@pytest.mark.parametrize(("change", "status", "error"), [
    ({"registration_epoch": 0}, 409, "STALE_BROKER_EPOCH"),           # a zombie incarnation of the leader
    ({"broker_id": 7}, 409, "STALE_BROKER_EPOCH"),                     # never registered
    ({"topic": "nope"}, 404, "UNKNOWN_TOPIC_OR_PARTITION"),
    ({"partition": 1}, 404, "UNKNOWN_TOPIC_OR_PARTITION"),
    ({"leader_epoch": 1}, 409, "FENCED_LEADER_EPOCH"),
    ({"broker_id": 2, "isr": [2]}, 400, "INVALID_REQUEST"),            # not the leader
    ({"partition_epoch": 3}, 409, "INVALID_UPDATE_VERSION"),
    ({"isr": [2, 3]}, 400, "INVALID_REQUEST"),                         # without the leader
    ({"isr": [1, 4]}, 400, "INVALID_REQUEST"),                         # not a replica
    ({"isr": [1, 1]}, 400, "INVALID_REQUEST"),
    ({"isr": "1,2"}, 400, "INVALID_REQUEST"),
    ({"leader_epoch": None}, 400, "INVALID_REQUEST"),
])
def test_alter_partition_errors_change_nothing(client, shrunk, change, status, error):
    Partition.objects.update(isr=[1, 2, 3])
    before = (version(), list(Partition.objects.values_list("isr", "partition_epoch")))
    answer_status, answer = call(client, "POST", "/partitions/alter", {**shrunk, **change})
    assert (answer_status, answer["error"]) == (status, error)
    assert (version(), list(Partition.objects.values_list("isr", "partition_epoch"))) == before


def test_fenced_broker_cannot_join_the_isr(client, shrunk):
    call(client, "POST", "/partitions/alter", shrunk)
    Broker.objects.filter(broker_id=3).update(state=BrokerState.FENCED)
    status, answer = call(client, "POST", "/partitions/alter", {**shrunk, "partition_epoch": 1, "isr": [1, 2, 3]})
    assert (status, answer["error"]) == (409, "INELIGIBLE_REPLICA")
    assert Partition.objects.get().isr == [1, 2]


def test_fenced_leader_cannot_alter(client, shrunk):
    Broker.objects.filter(broker_id=1).update(state=BrokerState.FENCED)
    status, answer = call(client, "POST", "/partitions/alter", shrunk)
    assert (status, answer["error"]) == (409, "STALE_BROKER_EPOCH")


#
# Topics
#

def test_create_topic_with_defaults(client, three_brokers):
    before = version()
    status, topic = call(client, "POST", "/topics", {"name": "orders", "num_partitions": -1, "replication_factor": -1,
                                                     "assignments": None, "configs": {}, "validate_only": False})
    assert status == 200 and topic["name"] == "orders"
    assert len(topic["partitions"]) == settings.STROM_NUM_PARTITIONS
    assert all(len(p["replicas"]) == 3 and p["isr"] == p["replicas"] and p["leader"] == p["replicas"][0]
               for p in topic["partitions"])
    assert version() == before + 1


def test_default_replication_factor_is_capped_by_running_brokers(client, three_brokers):
    Broker.objects.filter(broker_id=3).update(state=BrokerState.FENCED)
    status, topic = call(client, "POST", "/topics", {"name": "t", "num_partitions": 4})
    assert status == 200 and {len(p["replicas"]) for p in topic["partitions"]} == {2}
    assert all(3 not in p["replicas"] for p in topic["partitions"])


def test_validate_only_stores_nothing(client, three_brokers):
    before = version()
    status, topic = call(client, "POST", "/topics", {"name": "t", "num_partitions": 2, "validate_only": True})
    assert status == 200 and topic["topic_id"] == "00000000-0000-0000-0000-000000000000"
    assert len(topic["partitions"]) == 2
    assert not Topic.objects.exists() and version() == before


def test_manual_assignment_in_either_form(client, three_brokers):
    status, topic = call(client, "POST", "/topics", {"name": "a", "assignments": [[3, 1], [2, 3]]})
    assert status == 200 and [p["replicas"] for p in topic["partitions"]] == [[3, 1], [2, 3]]
    assert [p["leader"] for p in topic["partitions"]] == [3, 2]
    status, topic = call(client, "POST", "/topics", {"name": "b", "assignments": [
        {"partition_index": 1, "broker_ids": [1, 2]}, {"partition_index": 0, "broker_ids": [2, 1]}]})
    assert status == 200 and [p["replicas"] for p in topic["partitions"]] == [[2, 1], [1, 2]]


@pytest.mark.parametrize(("body", "status", "error"), [
    ({"name": "orders"}, 409, "TOPIC_ALREADY_EXISTS"),
    ({"name": "my_topic"}, 400, "INVALID_TOPIC_EXCEPTION"),            # collides with my.topic
    ({"name": "bad name"}, 400, "INVALID_TOPIC_EXCEPTION"),
    ({"name": ""}, 400, "INVALID_TOPIC_EXCEPTION"),
    ({"name": ".."}, 400, "INVALID_TOPIC_EXCEPTION"),
    ({"name": "x" * 250}, 400, "INVALID_TOPIC_EXCEPTION"),
    ({"name": 5}, 400, "INVALID_TOPIC_EXCEPTION"),
    ({"name": "n", "num_partitions": 0}, 400, "INVALID_PARTITIONS"),
    ({"name": "n", "num_partitions": -2}, 400, "INVALID_PARTITIONS"),
    ({"name": "n", "replication_factor": 4}, 400, "INVALID_REPLICATION_FACTOR"),
    ({"name": "n", "replication_factor": 0}, 400, "INVALID_REPLICATION_FACTOR"),
    ({"name": "n", "num_partitions": "3"}, 400, "INVALID_REQUEST"),
    ({"name": "n", "configs": {"retention.ms": "soon"}}, 400, "INVALID_CONFIG"),
    ({"name": "n", "configs": {"no.such.config": "1"}}, 400, "INVALID_CONFIG"),
    ({"name": "n", "configs": {"cleanup.policy": "shred"}}, 400, "INVALID_CONFIG"),
    ({"name": "n", "num_partitions": 2, "assignments": [[1]]}, 400, "INVALID_REQUEST"),
    ({"name": "n", "assignments": [[1], []]}, 400, "INVALID_REPLICA_ASSIGNMENT"),
    ({"name": "n", "assignments": [[1, 1]]}, 400, "INVALID_REPLICA_ASSIGNMENT"),
    ({"name": "n", "assignments": [[1, 9]]}, 400, "INVALID_REPLICA_ASSIGNMENT"),   # unregistered broker
    ({"name": "n", "assignments": [[1, 2], [1]]}, 400, "INVALID_REPLICA_ASSIGNMENT"),
    ({"name": "n", "assignments": [[3]]}, 400, "INVALID_REPLICA_ASSIGNMENT"),      # only a fenced broker
    ({"name": "n", "assignments": [{"partition_index": 1, "broker_ids": [1]}]}, 400, "INVALID_REPLICA_ASSIGNMENT"),
    ({"name": "n", "assignments": "1,2"}, 400, "INVALID_REQUEST"),
])
def test_create_topic_errors(client, three_brokers, body, status, error):
    create_topic("orders")
    create_topic("my.topic")
    Broker.objects.filter(broker_id=3).update(state=BrokerState.FENCED)
    before = (version(), Topic.objects.count())
    answer_status, answer = call(client, "POST", "/topics", body)
    assert (answer_status, answer["error"]) == (status, error), answer
    assert (version(), Topic.objects.count()) == before


def test_no_running_broker_means_no_replication(client, db):
    status, answer = call(client, "POST", "/topics", {"name": "t"})
    assert (status, answer["error"]) == (400, "INVALID_REPLICATION_FACTOR")


def test_delete_topic(client, three_brokers):
    create_topic("t", 2)
    before = version()
    assert call(client, "DELETE", "/topics/t") == (204, None)
    assert not Topic.objects.exists() and not Partition.objects.exists() and version() == before + 1
    status, answer = call(client, "DELETE", "/topics/t")
    assert (status, answer["error"]) == (404, "UNKNOWN_TOPIC_OR_PARTITION")


def test_wrong_method_is_405(client, three_brokers):
    assert client.get(API + "/topics").status_code == 405


def test_create_partitions(client, three_brokers):
    create_topic("t", 2, 2)
    status, topic = call(client, "POST", "/topics/t/partitions", {"count": 4, "assignments": None})
    assert status == 200 and [p["partition"] for p in topic["partitions"]] == [0, 1, 2, 3]
    assert {len(p["replicas"]) for p in topic["partitions"]} == {2}
    status, topic = call(client, "POST", "/topics/t/partitions", {"count": 5, "assignments": [[3, 1]]})
    assert status == 200 and topic["partitions"][4]["replicas"] == [3, 1]
    status, topic = call(client, "POST", "/topics/t/partitions", {"count": 6, "validate_only": True})
    assert status == 200 and len(topic["partitions"]) == 6 and Partition.objects.count() == 5


@pytest.mark.parametrize(("name", "body", "status", "error"), [
    ("t", {"count": 2}, 400, "INVALID_PARTITIONS"),
    ("t", {"count": 1}, 400, "INVALID_PARTITIONS"),
    ("t", {"count": 3, "assignments": [[1, 2], [2, 3]]}, 400, "INVALID_REPLICA_ASSIGNMENT"),
    ("t", {"count": 3, "assignments": [[1]]}, 400, "INVALID_REPLICA_ASSIGNMENT"),
    ("t", {"count": 3, "assignments": [[1, 8]]}, 400, "INVALID_REPLICA_ASSIGNMENT"),
    ("t", {"count": "3"}, 400, "INVALID_REQUEST"),
    ("t", {}, 400, "INVALID_REQUEST"),
    ("nope", {"count": 3}, 404, "UNKNOWN_TOPIC_OR_PARTITION"),
])
def test_create_partitions_errors(client, three_brokers, name, body, status, error):
    create_topic("t", 2, 2)
    before = (version(), Partition.objects.count())
    answer_status, answer = call(client, "POST", f"/topics/{name}/partitions", body)
    assert (answer_status, answer["error"]) == (status, error), answer
    assert (version(), Partition.objects.count()) == before


def test_incremental_and_replacing_config_changes(client, three_brokers):
    create_topic("t", configs={"retention.ms": "1000", "cleanup.policy": "compact"})
    status, topic = call(client, "POST", "/topics/t/configs",
                         {"set": {"segment.ms": 5000, "unclean.leader.election.enable": True},
                          "delete": ["retention.ms"]})
    assert status == 200 and topic["configs"] == {"cleanup.policy": "compact", "segment.ms": "5000",
                                                  "unclean.leader.election.enable": "true"}
    status, topic = call(client, "POST", "/topics/t/configs", {"set": {"retention.ms": "7"}, "replace": True})
    assert status == 200 and topic["configs"] == Topic.objects.get().configs == {"retention.ms": "7"}
    status, topic = call(client, "POST", "/topics/t/configs", {"set": {"retention.ms": "9"}, "validate_only": True})
    assert status == 200 and topic["configs"] == {"retention.ms": "9"}
    assert Topic.objects.get().configs == {"retention.ms": "7"}


@pytest.mark.parametrize(("name", "body", "status", "error"), [
    ("t", {"set": {"retention.ms": "x"}}, 400, "INVALID_CONFIG"),
    ("t", {"set": {"nope": "1"}}, 400, "INVALID_CONFIG"),
    ("t", {"delete": ["nope"]}, 400, "INVALID_CONFIG"),
    ("t", {"set": {"min.insync.replicas": 0}, "replace": True}, 400, "INVALID_CONFIG"),
    ("t", {"set": [1]}, 400, "INVALID_REQUEST"),
    ("t", {"delete": "retention.ms"}, 400, "INVALID_REQUEST"),
    ("nope", {"set": {"retention.ms": "1"}}, 404, "UNKNOWN_TOPIC_OR_PARTITION"),
])
def test_config_change_errors(client, three_brokers, name, body, status, error):
    create_topic("t", configs={"retention.ms": "1000"})
    before = version()
    answer_status, answer = call(client, "POST", f"/topics/{name}/configs", body)
    assert (answer_status, answer["error"]) == (status, error), answer
    assert Topic.objects.get().configs == {"retention.ms": "1000"} and version() == before


#
# ElectLeaders and producer ids
#

def test_preferred_election(client, three_brokers):
    create_topic("t", assignments=[[1, 2], [2, 3], [3, 1]])
    Partition.objects.filter(partition=0).update(leader=2)           # not the preferred leader
    Partition.objects.filter(partition=2).update(isr=[1])            # preferred replica out of sync
    Partition.objects.filter(partition=2).update(leader=1)
    status, answer = call(client, "POST", "/elect-leaders", {"election_type": "preferred", "partitions": [
        {"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}, {"topic": "t", "partition": 2},
        {"topic": "t", "partition": 9}]})
    assert status == 200
    assert answer["results"] == [
        {"topic": "t", "partition": 0, "error": None},
        {"topic": "t", "partition": 1, "error": "ELECTION_NOT_NEEDED"},
        {"topic": "t", "partition": 2, "error": "PREFERRED_LEADER_NOT_AVAILABLE"},
        {"topic": "t", "partition": 9, "error": "UNKNOWN_TOPIC_OR_PARTITION"}]
    p0 = Partition.objects.get(partition=0)
    assert (p0.leader, p0.leader_epoch, p0.partition_epoch) == (1, 1, 1)


def test_election_for_all_partitions_omits_those_not_needing_one(client, three_brokers):
    create_topic("t", assignments=[[1, 2], [2, 3]])
    Partition.objects.filter(partition=1).update(leader=3)
    status, answer = call(client, "POST", "/elect-leaders", {"election_type": "preferred", "partitions": None})
    assert status == 200 and answer == {"results": [{"topic": "t", "partition": 1, "error": None}]}


def test_unclean_election_picks_a_live_replica_outside_the_isr(client, three_brokers):
    create_topic("t", assignments=[[3, 2]])
    Broker.objects.filter(broker_id=3).update(state=BrokerState.FENCED)
    Partition.objects.update(leader=-1, isr=[3])
    status, answer = call(client, "POST", "/elect-leaders", {"election_type": "unclean",
                                                             "partitions": [{"topic": "t", "partition": 0}]})
    assert answer["results"] == [{"topic": "t", "partition": 0, "error": None}]
    p = Partition.objects.get()
    assert (p.leader, p.isr, p.leader_epoch) == (2, [2], 1)
    status, answer = call(client, "POST", "/elect-leaders", {"election_type": "unclean",
                                                             "partitions": [{"topic": "t", "partition": 0}]})
    assert answer["results"][0]["error"] == "ELECTION_NOT_NEEDED"


@pytest.mark.parametrize("body", [{"election_type": "dirty"}, {"partitions": "all"}, {"partitions": [{"topic": 1}]}])
def test_bad_election_requests(client, three_brokers, body):
    status, answer = call(client, "POST", "/elect-leaders", body)
    assert (status, answer["error"]) == (400, "INVALID_REQUEST")


def test_producer_id_blocks_never_overlap(client, three_brokers):
    blocks = [call(client, "POST", "/producer-ids", {"broker_id": b, "registration_epoch": 1})[1] for b in (1, 2, 1)]
    starts = [b["first_producer_id"] for b in blocks]
    assert starts == [0, 1000, 2000] and {b["count"] for b in blocks} == {1000}


@pytest.mark.parametrize("body", [{"broker_id": 1, "registration_epoch": 5}, {"broker_id": 8, "registration_epoch": 1}])
def test_producer_ids_for_zombies_are_refused(client, three_brokers, body):
    status, answer = call(client, "POST", "/producer-ids", body)
    assert (status, answer["error"]) == (409, "STALE_BROKER_EPOCH")
    assert ControllerState.current().next_producer_id == 0


#
# Reassignments and dynamic broker configs
#

def test_alter_and_list_reassignments_with_per_partition_errors(client, three_brokers):
    create_topic("t", assignments=[[1, 2], [2, 3]])
    status, answer = call(client, "POST", "/reassignments", {"partitions": [
        {"topic": "t", "partition": 0, "replicas": [3, 1]},
        {"topic": "t", "partition": 1, "replicas": [2, 7]},
        {"topic": "t", "partition": 1, "replicas": None}]})
    assert status == 200
    assert [(r["partition"], r["error"]) for r in answer["results"]] == [
        (0, None), (1, "INVALID_REPLICA_ASSIGNMENT"), (1, "NO_REASSIGNMENT_IN_PROGRESS")]
    status, listed = call(client, "POST", "/reassignments/list", {"partitions": None})
    assert (status, listed) == (200, {"reassignments": [{"topic": "t", "partition": 0, "replicas": [3, 1, 2],
                                                         "adding_replicas": [3], "removing_replicas": [2]}]})
    assert call(client, "POST", "/reassignments/list", {"partitions": [{"topic": "t", "partition": 1}]})[1] == \
        {"reassignments": []}
    status, answer = call(client, "POST", "/reassignments", {"partitions": [{"topic": "t", "partition": 0}]})
    assert answer["results"][0]["error"] is None and not Partition.objects.get(partition=0).adding_replicas


@pytest.mark.parametrize("body", [{}, {"partitions": "t-0"}, {"partitions": [{"topic": "t"}]},
                                  {"partitions": [{"topic": "t", "partition": 0, "replicas": "1,2"}]}])
def test_malformed_reassignments_are_invalid_requests(client, three_brokers, body):
    assert call(client, "POST", "/reassignments", body)[1]["error"] == "INVALID_REQUEST"


def test_dynamic_broker_configs_reach_the_metadata_image(client, three_brokers):
    before = version()
    status, answer = call(client, "POST", "/brokers/configs", {
        "broker_ids": [1, -1], "set": {"leader.replication.throttled.rate": 2097152}})
    assert (status, answer) == (200, {"configs": {"1": {"leader.replication.throttled.rate": "2097152"},
                                                  "-1": {"leader.replication.throttled.rate": "2097152"}}})
    assert version() == before + 1
    image = call(client, "GET", "/metadata")[1]
    assert image["broker_configs"] == {"1": {"leader.replication.throttled.rate": "2097152"},
                                       "default": {"leader.replication.throttled.rate": "2097152"}}
    call(client, "POST", "/brokers/configs", {"broker_ids": [1, -1], "delete": ["leader.replication.throttled.rate"]})
    assert call(client, "GET", "/metadata")[1]["broker_configs"] == {}


@pytest.mark.parametrize(("change", "error"), [
    ({"set": {"log.dirs": "/x"}}, "INVALID_CONFIG"),
    ({"set": {"follower.replication.throttled.rate": "-5"}}, "INVALID_CONFIG"),
    ({"broker_ids": [-2]}, "INVALID_REQUEST"),
    ({"broker_ids": "1"}, "INVALID_REQUEST"),
])
def test_bad_broker_configs_change_nothing(client, three_brokers, change, error):
    before = version()
    status, answer = call(client, "POST", "/brokers/configs", {"broker_ids": [1], **change})
    assert (status, answer["error"]) == (400, error) and version() == before
