"""Consumer-group administration against a REAL standalone broker (its group coordinator) with real
confluent-kafka consumers that join groups and commit offsets: the service, the CLI and the REST API.
The module takes a few seconds (one broker, `group.initial.rebalance.delay.ms=0`), so it also runs in the
PostgreSQL pass of `make test`.
"""

import time
from io import StringIO

import pytest
from confluent_kafka import TopicPartition as KafkaTopicPartition
from django.core.management import call_command

from controlplane.core.errors import KafkaApiError
from controlplane.groups.reset import Scope, parse_spec, parse_topic_arguments
from controlplane.groups.services import GroupService
from tests.controlplane.groups.real_cluster import (
    TIMEOUT_S,
    commit,
    committed,
    create_topic,
    first_offsets_consumed,
    member,
    produce,
)
from tests.support.polling import wait_until

MINUTE_MS = 60_000


@pytest.fixture
def service(broker, settings, db) -> GroupService:
    """The service as views and commands get it: connected through STROM_BOOTSTRAP_SERVERS."""
    settings.STROM_BOOTSTRAP_SERVERS = broker.bootstrap
    return GroupService.connected()


def state_of(service: GroupService, group: str) -> str:
    return service.describe_group(group).state


def test_describe_shows_current_log_end_and_lag(broker, service, names):
    topic, group = names
    create_topic(broker, topic, 2)
    produce(broker, topic, {0: 5, 1: 3})
    with member(broker, group, topic) as consumer:
        consumer.commit(offsets=[KafkaTopicPartition(topic, 0, 2), KafkaTopicPartition(topic, 1, 3)],
                        asynchronous=False)
        detail = service.describe_group(group)
        assert (detail.state, detail.protocol_type, len(detail.members)) == ("Stable", "consumer", 1)
        rows = [(p.partition, p.current_offset, p.log_end_offset, p.lag, p.consumer_id, p.client_id)
                for p in detail.partitions]
        assert rows == [(0, 2, 5, 3, consumer.memberid(), "lag-test"), (1, 3, 3, 0, consumer.memberid(), "lag-test")]
        assert detail.total_lag == 3
        assert (group, "Stable", "consumer", 1) in {(g.group_id, g.state, g.protocol_type, g.members)
                                                    for g in service.list_groups()}

        out = StringIO()
        call_command("consumer_groups", "--describe", "--group", group, "--bootstrap-server", broker.bootstrap,
                     stdout=out)
        table = [line.split() for line in out.getvalue().strip().splitlines()]
        assert table[0][:6] == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"]
        assert table[1] == [group, topic, "0", "2", "5", "3", consumer.memberid(), "/127.0.0.1", "lag-test"]
    assert wait_until(lambda: state_of(service, group) == "Empty", TIMEOUT_S, message="the group to empty")
    assert [(p.current_offset, p.consumer_id) for p in service.describe_group(group).partitions] == [(2, None),
                                                                                                     (3, None)]


def test_dry_run_changes_nothing_and_execute_commits(broker, service, names):
    topic, group = names
    create_topic(broker, topic, 2)
    produce(broker, topic, {0: 6, 1: 6})
    commit(broker, group, topic, {0: 4, 1: 5})
    shift_back = parse_spec("shift-by", "-3")

    plan = service.reset_offsets(group, Scope(all_topics=True), shift_back, execute=False)
    assert [(r.partition, r.current_offset, r.new_offset, r.lag_after) for r in plan.rows] == [(0, 4, 1, 5),
                                                                                              (1, 5, 2, 4)]
    assert not plan.executed
    assert committed(broker, group, topic, 2) == {0: 4, 1: 5}

    plan = service.reset_offsets(group, Scope(all_topics=True), shift_back, execute=True)
    assert plan.executed
    assert committed(broker, group, topic, 2) == {0: 1, 1: 2}

    assert first_offsets_consumed(broker, group, topic, 2) == {0: 1, 1: 2}, "consumers resume at the new offsets"


def test_reset_by_time_and_clamping(broker, service, names):
    topic, group = names
    create_topic(broker, topic, 1)
    now = int(time.time() * 1000)
    # Record i is (10 - i) minutes old, give or take half a minute of slack for the test's own duration.
    produce(broker, topic, {0: 10}, timestamps_ms=[now - (10 - i) * MINUTE_MS + MINUTE_MS // 2 for i in range(10)])
    commit(broker, group, topic, {0: 9})
    scope = parse_topic_arguments([f"{topic}:0"])

    def new_offset(spec: str, value: str | None = None) -> tuple[int, tuple[str, ...]]:
        plan = service.reset_offsets(group, scope, parse_spec(spec, value), execute=True)
        assert committed(broker, group, topic, 1) == {0: plan.rows[0].new_offset}
        return plan.rows[0].new_offset, plan.warnings

    assert new_offset("by-duration", "PT5M") == (5, ())
    at_record_3 = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((now - 7 * MINUTE_MS) / 1000))
    assert new_offset("to-datetime", at_record_3) == (3, ())
    assert new_offset("to-datetime", "2999-01-01T00:00:00Z")[0] == 10
    assert new_offset("to-earliest") == (0, ())
    assert new_offset("to-latest") == (10, ())
    assert new_offset("to-offset", "25") == (10, ("New offset (25) is higher than latest offset for topic "
                                                  f"partition {topic}-0. Value will be set to 10",))


def test_reset_refused_while_a_consumer_is_active(broker, service, names, api_client):
    topic, group = names
    create_topic(broker, topic, 1)
    produce(broker, topic, {0: 4})
    with member(broker, group, topic) as consumer:
        consumer.commit(offsets=[KafkaTopicPartition(topic, 0, 3)], asynchronous=False)
        with pytest.raises(KafkaApiError) as refused:
            service.reset_offsets(group, Scope(all_topics=True), parse_spec("to-earliest"), execute=True)
        assert (refused.value.status, refused.value.message) == (
            409, f"Assignments can only be reset if the group '{group}' is inactive, but the current state is Stable.")
        response = api_client.post(f"/api/groups/{group}/reset-offsets/",
                                   {"all_topics": True, "spec": "to-earliest", "dry_run": False}, format="json")
        assert response.status_code == 409 and response.json()["error"] == "NON_EMPTY_GROUP"
        assert api_client.delete(f"/api/groups/{group}/").status_code == 409
        assert committed(broker, group, topic, 1) == {0: 3}
    response = api_client.post(f"/api/groups/{group}/reset-offsets/",
                               {"topics": [topic], "spec": "to-earliest", "dry_run": False}, format="json")
    assert response.status_code == 200 and response.json()["executed"] is True
    assert committed(broker, group, topic, 1) == {0: 0}


def test_new_group_offsets_and_delete(broker, service, names, api_client):
    topic, group = names
    create_topic(broker, topic, 2)
    produce(broker, topic, {0: 2, 1: 7})
    with pytest.raises(KafkaApiError) as missing:
        service.describe_group(group)
    assert missing.value.status == 404
    assert api_client.get(f"/api/groups/{group}/").status_code == 404

    plan = service.reset_offsets(group, parse_topic_arguments([topic]), parse_spec("to-latest"), execute=True)
    assert plan.state == "Dead"
    assert committed(broker, group, topic, 2) == {0: 2, 1: 7}
    assert state_of(service, group) == "Empty"

    assert api_client.delete(f"/api/groups/{group}/").status_code == 204
    assert committed(broker, group, topic, 2) == {}
    assert api_client.get(f"/api/groups/{group}/").status_code == 404
