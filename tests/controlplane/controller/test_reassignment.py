"""Partition reassignment: Kafka's rules as a table (pure), then AlterPartitionReassignments /
ListPartitionReassignments over the metadata store, completed by the leader's AlterPartition."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from controlplane.access.actions import Role
from controlplane.audit.models import AuditEntry
from controlplane.cluster import metadata, services
from controlplane.cluster.models import BrokerConfig
from controlplane.controller.reassignment import (
    Assignment,
    PartitionResult,
    alter_reassignments,
    complete_if_ready,
    list_reassignments,
    revert,
    start,
)
from controlplane.core.errors import KafkaApiError
from controlplane.topics.models import Partition, Topic
from controlplane.topics.services import alter_configs, create_topic
from kafkaspec.replication_throttles import FOLLOWER_RATE, FOLLOWER_REPLICAS, LEADER_RATE, LEADER_REPLICAS
from tests.conftest import user_with_role

A = Assignment
LIVE = {1, 2, 3, 4, 5, 6}


@pytest.mark.parametrize(("current", "target", "live", "expected"), [
    # adding a replica (RF 2 → 3): the union set, the new replica outside the ISR
    (A((1, 2), (1, 2), 1), [1, 2, 3], LIVE, A((1, 2, 3), (1, 2), 1, adding=(3,))),
    # a move: target first, then the removing replicas; the leader stays until completion
    (A((1, 2, 3), (1, 2, 3), 1), [4, 5, 6], LIVE,
     A((4, 5, 6, 1, 2, 3), (1, 2, 3), 1, adding=(4, 5, 6), removing=(1, 2, 3))),
    # only removing (RF 3 → 2): the ISR already holds the target, so it completes at once
    (A((1, 2, 3), (1, 2, 3), 1), [1, 2], LIVE, A((1, 2), (1, 2), 1)),
    # removing the leader: the first live in-sync target replica leads
    (A((1, 2, 3), (1, 2, 3), 1), [3, 2], LIVE, A((3, 2), (3, 2), 3)),
    (A((1, 2, 3), (1, 2, 3), 1), [3, 2], {1, 2}, A((3, 2), (3, 2), 2)),
    # a plain reordering completes at once and keeps the leader (the preferred one is elected later)
    (A((1, 2, 3), (1, 2, 3), 1), [3, 1, 2], LIVE, A((3, 1, 2), (3, 1, 2), 1)),
    # removing an out-of-sync replica while adding one
    (A((1, 2, 3), (1, 2), 1), [1, 2, 4], LIVE, A((1, 2, 4, 3), (1, 2), 1, adding=(4,), removing=(3,))),
    # a new target replaces the one in progress, from the original replicas: 4 (adding, in sync) leaves
    (A((4, 5, 1, 2), (1, 2, 4), 1, adding=(4, 5), removing=(1, 2)), [6, 2], LIVE,
     A((6, 2, 1), (2, 1), 1, adding=(6,), removing=(1,))),
])
def test_start(current, target, live, expected):
    assert start(current, target, live) == expected


@pytest.mark.parametrize(("reassigning", "live", "expected"), [
    # not every target replica in sync yet
    (A((1, 2, 3), (1, 2), 1, adding=(3,)), LIVE, None),
    (A((4, 5, 6, 1, 2, 3), (1, 2, 3, 4, 5), 1, adding=(4, 5, 6), removing=(1, 2, 3)), LIVE, None),
    # every target replica in sync: the removing ones leave replicas and ISR, the removed leader hands over
    (A((1, 2, 3), (1, 2, 3), 1, adding=(3,)), LIVE, A((1, 2, 3), (1, 2, 3), 1)),
    (A((4, 5, 6, 1, 2, 3), (1, 2, 3, 4, 5, 6), 1, adding=(4, 5, 6), removing=(1, 2, 3)), LIVE,
     A((4, 5, 6), (4, 5, 6), 4)),
    (A((4, 5, 6, 1, 2, 3), (1, 2, 3, 4, 5, 6), 1, adding=(4, 5, 6), removing=(1, 2, 3)), {5, 6},
     A((4, 5, 6), (4, 5, 6), 5)),
    # the leader is a kept replica: it stays
    (A((2, 4, 1), (1, 2, 4), 2, adding=(4,), removing=(1,)), LIVE, A((2, 4), (2, 4), 2)),
])
def test_complete_if_ready(reassigning, live, expected):
    assert complete_if_ready(reassigning, live) == (expected or reassigning)


@pytest.mark.parametrize(("reassigning", "live", "unclean", "expected"), [
    # the adding replicas leave replicas and ISR; the original leader stays
    (A((4, 5, 6, 1, 2, 3), (1, 2, 3, 4), 1, adding=(4, 5, 6), removing=(1, 2, 3)), LIVE, False,
     A((1, 2, 3), (1, 2, 3), 1)),
    # an adding replica had become leader: the first live in-sync original replica leads
    (A((4, 1, 2), (4, 2), 4, adding=(4,), removing=(1,)), LIVE, False, A((1, 2), (2,), 2)),
    # only adding replicas in sync: refused without unclean election, else a live original replica leads
    (A((4, 1), (4,), 4, adding=(4,), removing=(1,)), LIVE, False, "INVALID_REPLICA_ASSIGNMENT"),
    (A((4, 1), (4,), 4, adding=(4,), removing=(1,)), LIVE, True, A((1,), (1,), 1)),
    # nothing in progress
    (A((1, 2), (1, 2), 1), LIVE, False, "NO_REASSIGNMENT_IN_PROGRESS"),
])
def test_revert(reassigning, live, unclean, expected):
    if isinstance(expected, str):
        with pytest.raises(KafkaApiError) as refused:
            revert(reassigning, live, unclean, "t-0")
        assert refused.value.error == expected
    else:
        assert revert(reassigning, live, unclean, "t-0") == expected


@pytest.fixture
def cluster(db):
    """Brokers 1-4 running; topic t with partitions [1, 2] and [2, 3], each ISR full, leaders 1 and 2."""
    epochs = {b: services.register_broker(b, f"PLAINTEXT://127.0.0.1:{9090 + b}", None, [])["registration_epoch"]
              for b in (1, 2, 3, 4)}
    create_topic("t", assignments=[[1, 2], [2, 3]])
    return epochs


def partition(number):
    return Partition.objects.get(topic__name="t", partition=number)


def leader_proposes(epochs, number, isr):
    p = partition(number)
    return services.alter_partition(p.leader, epochs[p.leader], "t", number, p.leader_epoch, p.partition_epoch, isr)


def test_a_move_runs_through_catch_up_completion_and_the_leader_change(cluster):
    version = metadata.current_version()
    before = partition(0)
    assert alter_reassignments([("t", 0, [3, 4])]) == [PartitionResult("t", 0)]
    moving = partition(0)
    assert (moving.replicas, moving.isr, moving.leader) == ([3, 4, 1, 2], [1, 2], 1)
    assert (moving.adding_replicas, moving.removing_replicas) == ([3, 4], [1, 2])
    assert (moving.leader_epoch, moving.partition_epoch) == (before.leader_epoch, before.partition_epoch + 1)
    assert metadata.current_version() > version
    assert list_reassignments() == [{"topic": "t", "partition": 0, "replicas": [3, 4, 1, 2],
                                     "adding_replicas": [3, 4], "removing_replicas": [1, 2]}]
    assert metadata.image()["topics"][0]["partitions"][0]["adding_replicas"] == [3, 4]

    leader_proposes(cluster, 0, [1, 2, 3])  # 3 caught up: not done while 4 is not
    assert partition(0).is_reassigning
    answer = leader_proposes(cluster, 0, [1, 2, 3, 4])  # 4 too: completes, 1 (removed) hands leadership to 3
    done = partition(0)
    assert (done.replicas, done.isr, done.leader, done.is_reassigning) == ([3, 4], [3, 4], 3, False)
    assert done.leader_epoch == before.leader_epoch + 1
    assert (answer["replicas"], answer["leader"]) == ([3, 4], 3)
    assert list_reassignments() == []


def test_raising_the_replication_factor_keeps_the_leader(cluster):
    alter_reassignments([("t", 1, [2, 3, 4])])
    leader_epoch = partition(1).leader_epoch
    leader_proposes(cluster, 1, [2, 3, 4])
    done = partition(1)
    assert (done.replicas, done.isr, done.leader, done.leader_epoch) == ([2, 3, 4], [2, 3, 4], 2, leader_epoch)


def test_cancel_reverts_and_a_second_cancel_finds_nothing(cluster):
    alter_reassignments([("t", 0, [3, 4])])
    leader_proposes(cluster, 0, [1, 2, 3])
    assert alter_reassignments([("t", 0, None)]) == [PartitionResult("t", 0)]
    reverted = partition(0)
    assert (reverted.replicas, reverted.isr, reverted.leader, reverted.is_reassigning) == ([1, 2], [1, 2], 1, False)
    [again] = alter_reassignments([("t", 0, None)])
    assert again.error == "NO_REASSIGNMENT_IN_PROGRESS"


@pytest.mark.parametrize(("request_", "error"), [
    (("t", 0, []), "INVALID_REPLICA_ASSIGNMENT"),
    (("t", 0, [1, 1]), "INVALID_REPLICA_ASSIGNMENT"),
    (("t", 0, [1, 9]), "INVALID_REPLICA_ASSIGNMENT"),
    (("t", 7, [1, 2]), "UNKNOWN_TOPIC_OR_PARTITION"),
    (("nope", 0, [1, 2]), "UNKNOWN_TOPIC_OR_PARTITION"),
    (("t", 1, None), "NO_REASSIGNMENT_IN_PROGRESS"),
])
def test_bad_requests_fail_per_partition_and_change_nothing_else(cluster, request_, error):
    version = metadata.current_version()
    [bad, good] = alter_reassignments([request_, ("t", 1, [2, 3, 4])])
    assert bad.error == error and bad.message
    assert good.error is None and partition(1).adding_replicas == [4]
    assert partition(0).replicas == [1, 2] and not partition(0).is_reassigning
    assert metadata.current_version() == version + 1


def test_list_filters_by_partition(cluster):
    alter_reassignments([("t", 0, [1, 2, 3]), ("t", 1, [2, 3, 4])])
    assert [r["partition"] for r in list_reassignments([("t", 1), ("t", 5), ("x", 0)])] == [1]


def test_cancel_that_needs_an_unclean_election_is_refused_unless_the_topic_allows_it(cluster):
    alter_reassignments([("t", 0, [4, 3])])
    leader_proposes(cluster, 0, [1, 2, 4])  # 3 has not caught up
    # 1 and 2 drop out of the ISR (say, both fenced) and 4 leads
    p = partition(0)
    Partition.objects.filter(pk=p.pk).update(isr=[4], leader=4)
    [refused] = alter_reassignments([("t", 0, None)])
    assert refused.error == "INVALID_REPLICA_ASSIGNMENT"
    alter_configs("t", {"unclean.leader.election.enable": "true"})
    assert alter_reassignments([("t", 0, None)]) == [PartitionResult("t", 0)]
    assert (partition(0).replicas, partition(0).leader) == ([1, 2], 1)


def reassign(tmp_path, *args, plan=None, as_user="ops"):
    """Run `manage.py reassign_partitions` as `as_user` (plan: written to a JSON file); its stdout."""
    if plan is not None:
        path = tmp_path / "plan.json"
        path.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": t, "partition": n, "replicas": r} for t, n, r in plan]}))
        args += ("--reassignment-json-file", str(path))
    out = StringIO()
    call_command("reassign_partitions", *args, "--as", as_user, stdout=out)
    return out.getvalue()


def throttle_configs():
    return (Topic.objects.get(name="t").configs,
            {c.broker_id: c.configs for c in BrokerConfig.objects.all() if c.configs})


@pytest.fixture
def operator(cluster):
    return user_with_role("ops", Role.OPERATOR)


def test_command_executes_with_a_throttle_verifies_and_clears_it(tmp_path, cluster, operator):
    out = reassign(tmp_path, "--execute", "--throttle", "2097152", plan=[("t", 0, [3, 4])])
    assert '"replicas":[1,2]' in out and "Successfully started partition reassignment for t-0" in out
    topic_configs, broker_configs = throttle_configs()
    assert topic_configs == {LEADER_REPLICAS: "0:1,0:2", FOLLOWER_REPLICAS: "0:3,0:4"}
    assert broker_configs == {b: {LEADER_RATE: "2097152", FOLLOWER_RATE: "2097152"} for b in (1, 2, 3, 4)}
    assert "t-0: replicas: 3,4,1,2. adding: 3,4. removing: 1,2." in reassign(tmp_path, "--list")

    out = reassign(tmp_path, "--verify", plan=[("t", 0, [3, 4])])
    assert "still in progress" in out and throttle_configs()[1]  # throttles stay while it runs

    leader_proposes(cluster, 0, [1, 2, 3, 4])  # completes: its throttles go at once
    assert throttle_configs() == ({}, {})
    out = reassign(tmp_path, "--verify", plan=[("t", 0, [3, 4])])
    assert "Reassignment of partition t-0 is completed." in out
    assert list(AuditEntry.objects.order_by("id").values_list("action", "result")) == [
        ("start_reassignment", "ok"), ("clear_reassignment_throttles", "ok")]
    assert reassign(tmp_path, "--list") == "No partition reassignments found.\n"


def test_throttles_of_a_finished_partition_go_and_the_rates_with_the_last(tmp_path, cluster, operator):
    reassign(tmp_path, "--execute", "--throttle", "1048576", plan=[("t", 0, [1, 2, 4]), ("t", 1, [2, 3, 4])])
    assert throttle_configs()[0] == {LEADER_REPLICAS: "0:1,0:2,1:2,1:3", FOLLOWER_REPLICAS: "0:4,1:4"}
    leader_proposes(cluster, 1, [2, 3, 4])
    topic_configs, broker_configs = throttle_configs()
    assert topic_configs == {LEADER_REPLICAS: "0:1,0:2", FOLLOWER_REPLICAS: "0:4"} and broker_configs
    reassign(tmp_path, "--cancel", "--preserve-throttles", plan=[("t", 0, [1, 2, 4])])
    assert throttle_configs() == ({}, {})
    # a reassignment that completes at once (only removing a replica) leaves no throttle behind either
    reassign(tmp_path, "--execute", "--throttle", "1048576", plan=[("t", 1, [2, 3])])
    assert partition(1).replicas == [2, 3] and throttle_configs() == ({}, {})


def test_command_cancels_and_clears_throttles(tmp_path, cluster, operator):
    reassign(tmp_path, "--execute", "--throttle", "1048576", plan=[("t", 0, [3, 4]), ("t", 1, [2, 3])])
    out = reassign(tmp_path, "--cancel", plan=[("t", 0, [3, 4]), ("t", 1, [2, 3])])
    assert "Successfully cancelled partition reassignment for t-0" in out
    assert (partition(0).replicas, partition(0).is_reassigning) == ([1, 2], False)
    assert throttle_configs() == ({}, {})


def test_command_generates_kafkas_plan_onto_a_broker_list(tmp_path, cluster, operator):
    topics = tmp_path / "topics.json"
    topics.write_text('{"topics": [{"topic": "t"}], "version": 1}')
    out = reassign(tmp_path, "--generate", "--topics-to-move-json-file", str(topics), "--broker-list", "3,4")
    current, proposed = (json.loads(line) for line in out.splitlines() if line.startswith("{"))
    assert [p["replicas"] for p in current["partitions"]] == [[1, 2], [2, 3]]
    assert all(sorted(p["replicas"]) == [3, 4] for p in proposed["partitions"])
    assert not partition(0).is_reassigning  # --generate executes nothing


@pytest.mark.parametrize(("args", "plan", "message"), [
    (("--execute",), None, "--reassignment-json-file is required"),
    (("--execute",), [("t", 0, [1, 9])], "INVALID_REPLICA_ASSIGNMENT"),
    (("--execute",), [("t", 5, [1, 2])], "UNKNOWN_TOPIC_OR_PARTITION"),
    (("--execute", "--throttle", "10"), [("t", 0, [1, 3])], "at least 1024"),
    (("--verify",), [("t", 0, [1, 3]), ("t", 0, [1, 2])], "more than once"),
    (("--generate", "--broker-list", "1,2"), None, "--topics-to-move-json-file is required"),
])
def test_command_errors_exit_non_zero_and_change_nothing(tmp_path, cluster, operator, args, plan, message):
    version = metadata.current_version()
    with pytest.raises(CommandError, match=message):
        reassign(tmp_path, *args, plan=plan)
    assert metadata.current_version() == version


def test_command_refuses_a_second_reassignment_without_additional(tmp_path, cluster, operator):
    reassign(tmp_path, "--execute", plan=[("t", 0, [1, 2, 3])])
    with pytest.raises(CommandError, match="REASSIGNMENT_IN_PROGRESS"):
        reassign(tmp_path, "--execute", plan=[("t", 1, [2, 3, 4])])
    reassign(tmp_path, "--execute", "--additional", plan=[("t", 1, [2, 3, 4])])
    assert partition(1).adding_replicas == [4]


def test_command_needs_the_operator_role(tmp_path, cluster):
    user_with_role("val", Role.VIEWER)
    with pytest.raises(CommandError, match="Refused: Starting partition reassignments needs the operator role"):
        reassign(tmp_path, "--execute", plan=[("t", 0, [1, 2, 3])], as_user="val")
    assert not partition(0).is_reassigning


def test_balance_proposal_plans_a_decommission_that_reassign_executes(tmp_path, cluster, operator):
    plan = tmp_path / "off-2.json"
    out = StringIO()
    call_command("balance_proposal", "--goal", "decommission", "--brokers", "2", "--output", str(plan), stdout=out)
    assert "2 partitions, 2 replicas" in out.getvalue()
    entries = json.loads(plan.read_text())["partitions"]
    assert all(2 not in e["replicas"] and len(e["replicas"]) == 2 for e in entries)
    reassign(tmp_path, "--execute", "--reassignment-json-file", str(plan))
    assert {p: partition(p).removing_replicas for p in (0, 1)} == {0: [2], 1: [2]}


@pytest.mark.parametrize(("args", "message"), [
    (("--goal", "decommission"), "decommission needs running brokers"),
    (("--goal", "decommission", "--brokers", "9"), "decommission needs running brokers"),
    (("--goal", "replication-factor", "--topic", "t", "--replication-factor", "5"), "INVALID_REPLICATION_FACTOR"),
    (("--goal", "replication-factor"), "needs an existing topic"),
])
def test_balance_proposal_errors(cluster, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("balance_proposal", *args, stdout=StringIO())
