"""GroupService (list, describe, plan/execute resets) over a fake of the Kafka-client layer."""

import pytest

from controlplane.core.errors import KafkaApiError
from controlplane.groups.kafka_client import Member, TopicPartition
from controlplane.groups.reset import Scope, parse_spec, parse_topic_arguments
from controlplane.topics.models import Partition, Topic
from tests.controlplane.groups.conftest import NOW_MS, FakeLog

MINUTE = 60_000
O0, O1, O2 = (TopicPartition("orders", p) for p in range(3))
P0 = TopicPartition("payments", 0)


@pytest.fixture
def scenario(fake_admin):
    """orders-0: offsets 0-9, one record a minute, the last one minute ago; orders-1: log start 5 (older records
    deleted), offsets 5-9 in the last 5 minutes; orders-2: empty. payments-0: offsets 0-2.
    Group 'billing' is Empty with offsets on orders-0 (4) and orders-1 (7); 'live' is Stable, its member owns
    orders-0 and orders-1 and has committed orders-0 at 8."""
    fake_admin.add_topic("orders", FakeLog(0, [NOW_MS - (10 - i) * MINUTE for i in range(10)]),
                         FakeLog(5, [NOW_MS - (5 - i) * MINUTE for i in range(5)]), FakeLog(0, []))
    fake_admin.add_topic("payments", FakeLog(0, [NOW_MS] * 3))
    fake_admin.add_group("billing", committed={O0: 4, O1: 7})
    member = Member("consumer-1-abc", "consumer-1", "/127.0.0.1", None, (O0, O1))
    fake_admin.add_group("live", state="Stable", members=(member,), committed={O0: 8})
    return fake_admin


def plan(service, group, spec, value=None, topics=None, execute=False):
    scope = Scope(all_topics=True) if topics is None else parse_topic_arguments(topics)
    return service.reset_offsets(group, scope, parse_spec(spec, value), execute=execute)


def new_offsets(result) -> dict[str, int]:
    return {f"{r.topic}-{r.partition}": r.new_offset for r in result.rows}


def test_list_groups(service, scenario):
    groups = service.list_groups()
    assert [(g.group_id, g.state, g.protocol_type, g.members) for g in groups] == [
        ("billing", "Empty", "consumer", 0), ("live", "Stable", "consumer", 1)]


def test_describe_shows_lag_per_partition_like_kafkas_tool(service, scenario):
    detail = service.describe_group("live")
    assert detail.state == "Stable" and detail.is_active
    rows = [(p.topic, p.partition, p.current_offset, p.log_end_offset, p.lag, p.consumer_id, p.host, p.client_id)
            for p in detail.partitions]
    assert rows == [("orders", 0, 8, 10, 2, "consumer-1-abc", "/127.0.0.1", "consumer-1"),
                    ("orders", 1, None, 10, None, "consumer-1-abc", "/127.0.0.1", "consumer-1")]
    assert detail.total_lag == 2


def test_describe_an_inactive_group(service, scenario):
    detail = service.describe_group("billing")
    assert not detail.is_active and detail.members == ()
    assert [(p.partition, p.current_offset, p.lag, p.consumer_id) for p in detail.partitions] == [
        (0, 4, 6, None), (1, 7, 3, None)]


def test_lag_is_never_negative(service, scenario):
    scenario.committed["billing"][O2] = 3  # beyond orders-2's log end (0), e.g. after the log was truncated
    assert [p.lag for p in service.describe_group("billing").partitions if p.partition == 2] == [0]


def test_unknown_group(service, scenario):
    for call in (lambda: service.describe_group("nobody"),
                 lambda: plan(service, "nobody", "to-earliest")):
        with pytest.raises(KafkaApiError) as e:
            call()
        assert (e.value.status, e.value.message) == (404, "Consumer group 'nobody' does not exist.")


@pytest.mark.parametrize(("spec", "value", "expected"), [
    ("to-earliest", None, {"orders-0": 0, "orders-1": 5}),
    ("to-latest", None, {"orders-0": 10, "orders-1": 10}),
    ("to-offset", "6", {"orders-0": 6, "orders-1": 6}),
    ("shift-by", "-2", {"orders-0": 2, "orders-1": 5}),  # 7 - 2 = 5 is orders-1's log start
    ("shift-by", "2", {"orders-0": 6, "orders-1": 9}),
    ("by-duration", "PT3M", {"orders-0": 7, "orders-1": 7}),  # first records at or after now - 3 min
    ("by-duration", "PT30S", {"orders-0": 10, "orders-1": 10}),  # nothing that recent: log end
    ("to-datetime", "2023-11-14T23:11:20+01:00", {"orders-0": 8, "orders-1": 8}),  # NOW_MS - 2 min
])
def test_plan_each_spec_over_all_topics(service, scenario, spec, value, expected):
    result = plan(service, "billing", spec, value)
    assert new_offsets(result) == expected
    assert not result.executed
    assert scenario.committed["billing"] == {O0: 4, O1: 7}, "a dry run changes nothing"


def test_plan_rows_show_current_new_and_lag_after(service, scenario):
    rows = plan(service, "billing", "to-offset", "6").rows
    assert [(r.current_offset, r.new_offset, r.log_start_offset, r.log_end_offset, r.lag_after) for r in rows] == [
        (4, 6, 0, 10, 4), (7, 6, 5, 10, 4)]


def test_clamping_is_reported(service, scenario):
    result = plan(service, "billing", "to-offset", "2")
    assert new_offsets(result) == {"orders-0": 2, "orders-1": 5}
    assert result.warnings == ("New offset (2) is lower than earliest offset for topic partition orders-1. "
                               "Value will be set to 5",)
    result = plan(service, "billing", "by-duration", "PT30S")
    assert len(result.warnings) == 2 and "Falling back to latest known offset" in result.warnings[0]


@pytest.mark.parametrize(("topics", "expected"), [
    (["orders"], {"orders-0": 0, "orders-1": 5, "orders-2": 0}),
    (["orders:1,2"], {"orders-1": 5, "orders-2": 0}),
    (["payments", "orders:0"], {"orders-0": 0, "payments-0": 0}),
])
def test_plan_for_named_topics_and_partitions(service, scenario, topics, expected):
    assert new_offsets(plan(service, "billing", "to-earliest", topics=topics)) == expected


def test_partitions_come_from_the_metadata_store_when_it_knows_the_topic(service, scenario):
    topic = Topic.objects.create(name="orders")
    Partition.objects.create(topic=topic, partition=0, replicas=[1], isr=[1], leader=1)
    assert new_offsets(plan(service, "billing", "to-latest", topics=["orders"])) == {"orders-0": 10}


@pytest.mark.parametrize(("topics", "message"), [
    (["missing"], "Topic 'missing' does not exist."),
    (["orders:1,7,9"], "Topic 'orders' has no partition 7, 9 (it has 3)."),
])
def test_unknown_topics_and_partitions_are_bad_input(service, scenario, topics, message):
    with pytest.raises(KafkaApiError) as e:
        plan(service, "billing", "to-earliest", topics=topics)
    assert (e.value.status, e.value.message) == (400, message)


def test_shift_by_needs_committed_offsets(service, scenario):
    with pytest.raises(KafkaApiError) as e:
        plan(service, "billing", "shift-by", "1", topics=["orders"])
    assert e.value.status == 400 and "orders-2 since there is no current committed offset" in e.value.message


def test_execute_commits_the_plan(service, scenario):
    result = plan(service, "billing", "shift-by", "-3", execute=True)
    assert result.executed
    assert scenario.committed["billing"] == {O0: 1, O1: 5}


def test_execute_for_a_new_group_on_named_topics(service, scenario):
    """As in Kafka, offsets can be set for a group that does not exist yet (state Dead) before it starts."""
    result = plan(service, "newcomer", "to-latest", topics=["payments"], execute=True)
    assert result.state == "Dead"
    assert scenario.committed["newcomer"] == {P0: 3}


def test_execute_is_refused_while_the_group_is_active(service, scenario):
    with pytest.raises(KafkaApiError) as e:
        plan(service, "live", "to-earliest", execute=True)
    assert e.value.status == 409
    assert e.value.message == ("Assignments can only be reset if the group 'live' is inactive, but the current "
                               "state is Stable.")
    assert scenario.committed["live"] == {O0: 8}
    assert new_offsets(plan(service, "live", "to-earliest")) == {"orders-0": 0}, "a dry run is allowed"


def test_delete_group(service, scenario):
    service.delete_group("billing")
    assert "billing" not in scenario.groups
    with pytest.raises(KafkaApiError) as e:
        service.delete_group("live")
    assert e.value.status == 409


def test_cluster_unreachable(service, scenario):
    scenario.unreachable = True
    with pytest.raises(KafkaApiError) as e:
        service.list_groups()
    assert e.value.status == 503
