"""Burrow's HTTP API v3 bodies (monitoring.burrow_api), field by field against burrow-http.md."""

import json

from monitoring import burrow_api
from monitoring.config import MonitorConfig
from monitoring.evaluator import not_found
from monitoring.model import Commit, PartitionInput, Status
from tests.monitoring.factories import group, partition

HOST = "strom-1"
CONFIG = MonitorConfig(bootstrap_servers="b1:9092,b2:9092", cluster="prod", offset_refresh_s=10, topic_refresh_s=60)


def test_envelope_and_errors():
    status, body = burrow_api.error(404, "cluster not found", "/v3/kafka/nocluster/consumer", HOST)
    assert status == 404
    assert body == {"error": True, "message": "cluster not found",
                    "request": {"url": "/v3/kafka/nocluster/consumer", "host": HOST}}
    assert json.loads(burrow_api.UNKNOWN_ROUTE_BODY) == {"error": True, "message": "invalid request type", "result": {}}


def test_cluster_list_and_detail():
    assert burrow_api.cluster_list(["prod"], "/v3/kafka", HOST) == (200, {
        "error": False, "message": "cluster list returned", "clusters": ["prod"],
        "request": {"url": "/v3/kafka", "host": HOST}})
    status, body = burrow_api.cluster_detail(CONFIG, "/v3/kafka/prod", HOST)
    assert (status, body["message"]) == (200, "cluster module detail returned")
    module = body["module"]
    assert set(module) == {"class-name", "servers", "client-profile", "topic-refresh", "offset-refresh"}
    assert (module["servers"], module["topic-refresh"], module["offset-refresh"]) == (["b1:9092", "b2:9092"], 60, 10)
    assert set(module["client-profile"]) == {"name", "client-id", "kafka-version", "tls", "sasl"}
    assert burrow_api.cluster_detail(None, "/v3/kafka/x", HOST)[1]["message"] == "cluster module not found"


def test_topics():
    status, body = burrow_api.topic_list(["b", "a"], "/v3/kafka/prod/topic", HOST)
    assert (status, body["message"], body["topics"]) == (200, "topic list returned", ["a", "b"])
    status, body = burrow_api.topic_detail([10, 20], "/v3/kafka/prod/topic/a", HOST)
    assert (status, body["message"], body["offsets"]) == (200, "topic offsets returned", [10, 20])
    assert burrow_api.topic_detail(None, "/u", HOST) == (404, {"error": True, "message": "cluster or topic not found",
                                                             "request": {"url": "/u", "host": HOST}})
    status, body = burrow_api.topic_consumers([], "/v3/kafka/prod/topic/zz/consumers", HOST)
    assert (status, body["message"], body["consumers"]) == (200, "consumers of topic returned", [])


def test_consumer_list_and_detail():
    status, body = burrow_api.consumer_list(["g2", "g1"], "/v3/kafka/prod/consumer", HOST)
    assert (status, body["message"], body["consumers"]) == (200, "consumer list returned", ["g1", "g2"])
    commits = (Commit(9837458, 7, 12837487, 12837999, 2355),)
    inputs = [PartitionInput("testtopic", 0, commits, (9839813,), 2, "somehost", "cid"),
              PartitionInput("testtopic", 1, (), (5,), 2)]
    status, body = burrow_api.consumer_detail(inputs, "/v3/kafka/prod/consumer/g1", HOST)
    assert (status, body["message"]) == (200, "consumer detail returned")
    assert body["topics"] == {"testtopic": [
        {"offsets": [None, {"offset": 9837458, "timestamp": 12837487, "observedAt": 12837999, "lag": 2355}],
         "owner": "somehost", "client_id": "cid", "current-lag": 2355},
        {"offsets": [], "owner": "", "client_id": "", "current-lag": 0}]}
    assert burrow_api.consumer_detail(None, "/u", HOST)[1]["message"] == "cluster or consumer not found"


PARTITION_KEYS = {"topic", "partition", "owner", "client_id", "status", "start", "end", "current_lag", "complete"}
GROUP_KEYS = {"cluster", "group", "status", "complete", "partitions", "partition_count", "maxlag", "totallag"}


def test_status_and_lag():
    result = group(partition(Status.OK, number=0, lag=10), partition(Status.STOP, number=1, lag=2921, complete=0.5),
                   cluster="testcluster", name="testgroup")
    status, body = burrow_api.consumer_status(result, False, "/v3/kafka/testcluster/consumer/testgroup/status", HOST)
    assert (status, body["error"], body["message"]) == (200, False, "consumer status returned")
    group_body = body["status"]
    assert set(group_body) == GROUP_KEYS
    assert (group_body["cluster"], group_body["group"], group_body["status"]) == ("testcluster", "testgroup", "ERR")
    assert (group_body["complete"], group_body["partition_count"], group_body["totallag"]) == (0.5, 2, 2931)
    assert [p["partition"] for p in group_body["partitions"]] == [1]  # /status: only partitions worse than OK
    p = group_body["partitions"][0]
    assert set(p) == PARTITION_KEYS
    assert (p["topic"], p["status"], p["current_lag"], p["complete"], p["owner"], p["client_id"]) == (
        "orders", "STOP", 2921, 0.5, "/10.0.0.1", "app-1")
    assert set(p["start"]) == set(p["end"]) == {"offset", "timestamp", "observedAt", "lag"}
    assert group_body["maxlag"]["partition"] == 1
    _, lag_body = burrow_api.consumer_status(result, True, "/v3/kafka/testcluster/consumer/testgroup/lag", HOST)
    assert [p["partition"] for p in lag_body["status"]["partitions"]] == [0, 1]  # /lag: every partition


def test_ok_group_status_has_no_partitions_but_a_maxlag():
    result = group(partition(Status.OK, lag=3), partition(Status.OK, number=1, lag=1))
    status, body = burrow_api.consumer_status(result, False, "/s", HOST)
    assert status == 200
    assert (body["status"]["complete"], body["status"]["partitions"], body["status"]["maxlag"]["current_lag"]) == (
        1, [], 3)
    assert isinstance(body["status"]["complete"], int)  # Go writes a float32 1.0 as 1


def test_not_found_is_404_without_error():
    status, body = burrow_api.consumer_status(not_found("prod", "nope", 0), False, "/s", HOST)
    assert status == 404 and body["error"] is False and body["message"] == "consumer status returned"
    assert body["status"] == {"cluster": "prod", "group": "nope", "status": "NOTFOUND", "complete": 1,
                              "partitions": [], "partition_count": 0, "maxlag": None, "totallag": 0}


def test_delete_and_config_modules():
    assert burrow_api.consumer_removed("/v3/kafka/prod/consumer/g", HOST) == (200, {
        "error": False, "message": "consumer group removed", "request": {"url": "/v3/kafka/prod/consumer/g",
                                                                         "host": HOST}})
    _, storage = burrow_api.storage_module(CONFIG, "/v3/config/storage/default", HOST)
    assert set(storage["module"]) == {"class-name", "intervals", "min-distance", "group-allowlist", "expire-group"}
    assert (storage["module"]["intervals"], storage["module"]["expire-group"]) == (10, 604800)
    _, evaluator = burrow_api.evaluator_module(CONFIG, "/v3/config/evaluator/default", HOST)
    assert evaluator["module"] == {"class-name": "caching", "expire-cache": 10}
    _, modules = burrow_api.module_list("storage", ["default"], "/v3/config/storage", HOST)
    assert (modules["coordinator"], modules["modules"], modules["message"]) == ("storage", ["default"],
                                                                               "module list returned")
