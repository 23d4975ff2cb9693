"""The reassignment executor: its batching and ordering decisions and the progress arithmetic as tables (pure),
then executions over the metadata store (batches under the per-broker limit, completion by AlterPartition,
progress from replica sizes, pause/resume, cancel as a whole) and /api/reassignments/executions/."""

from datetime import UTC, datetime, timedelta

import pytest
from rest_framework.test import APIClient

from controlplane.access.actions import Role
from controlplane.audit.models import AuditEntry
from controlplane.cluster import services
from controlplane.controller import executor
from controlplane.controller.controller import Controller
from controlplane.controller.executor import Move, PartitionNow, next_batch, occupied_brokers, urgency
from controlplane.controller.models import ExecutionState, ReassignmentExecution, TaskState
from controlplane.controller.plans import PlanEntry
from controlplane.controller.progress import copy_progress, progress
from controlplane.core.errors import KafkaApiError
from controlplane.metrics.models import PartitionReplicaSize
from controlplane.topics.models import NO_LEADER, Partition, Topic
from controlplane.topics.services import create_topic
from kafkaspec.replication_throttles import FOLLOWER_REPLICAS, LEADER_REPLICAS
from tests.conftest import user_with_role

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def now(isr=(1, 2, 3), replicas=(1, 2, 3), leader=1, min_insync=2) -> PartitionNow:
    return PartitionNow(tuple(replicas), tuple(isr), leader, min_insync)


@pytest.mark.parametrize(("partition", "expected"), [
    (now(isr=(1,)), 0),                        # below min.insync.replicas: restores availability, first
    (now(isr=(1, 2)), 1),                      # at it with a replica out of sync: one failure from unavailable
    (now(), 2),                                # fully in sync
    (now(isr=(1, 2), replicas=(1, 2)), 2),     # at min ISR but every replica in sync: nothing to rescue
    (now(isr=(1,), replicas=(1,), min_insync=1), 2),
])
def test_urgency(partition, expected):
    assert urgency(partition) == expected


@pytest.mark.parametrize(("move", "leader", "expected"), [
    (Move(("t", 0), (1, 2), (3, 4)), 1, {1, 2, 3, 4}),
    (Move(("t", 0), (1, 2), (1, 2, 3)), 2, {2, 3}),      # RF up: the leader (source) and the new replica
    (Move(("t", 0), (1, 2, 3), (1, 2)), 1, {1, 3}),      # RF down: the leader and the broker losing one
    (Move(("t", 0), (1, 2), (2, 1)), 1, {1}),            # reordering: only the leader
    (Move(("t", 0), (1, 2), (1, 3)), NO_LEADER, {2, 3}),
])
def test_occupied_brokers(move, leader, expected):
    assert occupied_brokers(move, leader) == expected


def m(partition, sources, targets, size=0, topic="t"):
    return Move((topic, partition), tuple(sources), tuple(targets), size)


@pytest.mark.parametrize(("case", "pending", "running", "partitions", "per_broker", "cluster", "expected"), [
    ("every move fits", [m(0, (1, 2), (1, 3)), m(1, (2, 4), (2, 5))], [], {}, 10, 100, [0, 1]),
    ("per-broker limit: the second move also needs broker 1",
     [m(0, (1, 2), (1, 3)), m(1, (1, 4), (1, 5))], [], {}, 1, 100, [0]),
    ("moves in progress count towards the limit",
     [m(0, (1, 2), (1, 3))], [(m(9, (3, 4), (3, 5)), 3)], {}, 1, 100, []),
    ("a move on other brokers still starts beside a full one",
     [m(0, (1, 2), (1, 3)), m(1, (4, 5), (4, 6))], [(m(9, (1, 7), (1, 8)), 1)], {}, 1, 100, [1]),
    ("cluster limit", [m(0, (1, 2), (1, 3)), m(1, (4, 5), (4, 6))], [(m(9, (7, 8), (7, 9)), 7)], {}, 10, 2, [0]),
    ("smaller partitions first", [m(0, (1, 2), (1, 3), size=500), m(1, (1, 2), (1, 3), size=100)], [], {}, 10, 100,
     [1, 0]),
    ("under min ISR first, then at min ISR with a replica out, then the rest, whatever their sizes",
     [m(0, (1, 2, 3), (1, 2, 4), size=1), m(1, (1, 2, 3), (1, 2, 4), size=9), m(2, (1, 2, 3), (1, 2, 4), size=5)],
     [], {1: now(isr=(1,)), 2: now(isr=(1, 2))}, 10, 100, [1, 2, 0]),
    ("the urgent move takes the broker when only one fits",
     [m(0, (1, 2, 3), (1, 2, 4), size=1), m(1, (1, 2, 3), (1, 2, 4), size=9)], [], {1: now(isr=(1,))}, 1, 100, [1]),
    ("a partition without a leader waits (nothing to copy from); the next one starts",
     [m(0, (1, 2), (1, 3)), m(1, (4, 5), (4, 6))], [], {0: now(isr=(), leader=NO_LEADER)}, 10, 100, [1]),
])
def test_next_batch(case, pending, running, partitions, per_broker, cluster, expected):
    state = {mv.key: partitions.get(mv.key[1], now(replicas=mv.sources, isr=mv.sources, leader=mv.sources[0]))
             for mv in pending}
    assert [mv.key[1] for mv in next_batch(pending, running, state, per_broker, cluster)] == expected, case


@pytest.mark.parametrize(("adding", "isr", "leader_size", "sizes", "expected"), [
    ((3,), (1, 2), 1000, {}, (1000, 0)),                   # nothing sampled since the move started
    ((3,), (1, 2), 1000, {3: 400}, (1000, 400)),
    ((3, 4), (1, 2), 1000, {3: 400, 4: 1000}, (2000, 1400)),
    ((3,), (1, 2), 1000, {3: 1200}, (1000, 1000)),         # a sample newer than the leader's: capped
    ((3, 4), (1, 2, 3), 1000, {3: 10, 4: 500}, (2000, 1500)),  # in the ISR: copied
    ((), (1, 2), 1000, {}, (0, 0)),                        # reordering or RF down: nothing to copy
])
def test_copy_progress(adding, isr, leader_size, sizes, expected):
    assert copy_progress(adding, isr, leader_size, sizes) == expected


@pytest.mark.parametrize(("to_copy", "copied", "elapsed_s", "finished", "rate", "eta", "fraction"), [
    (1000, 0, None, False, None, None, 0.0),     # not started
    (1000, 0, 5, False, None, None, 0.0),        # started, nothing seen copied yet: no rate, no ETA
    (1000, 400, 4, False, 100.0, 6.0, 0.4),
    (1000, 1000, 10, False, 100.0, 0.0, 1.0),    # copied, waiting for the ISR
    (0, 0, 3, True, None, 0.0, 1.0),             # nothing to copy (sizes unknown), finished
    (0, 0, None, False, None, None, 0.0),
])
def test_progress(to_copy, copied, elapsed_s, finished, rate, eta, fraction):
    started = None if elapsed_s is None else T0
    p = progress(to_copy, copied, started, T0 + timedelta(seconds=elapsed_s or 0), finished)
    assert (p.rate, p.eta_s, p.fraction) == (rate, eta, fraction)


#
# Over the metadata store
#


@pytest.fixture
def cluster(db):
    """Brokers 1-5 running; topic t with 4 partitions on [1, 2] (ISR full, leader 1), min.insync.replicas 2."""
    epochs = {b: services.register_broker(b, f"PLAINTEXT://127.0.0.1:{9090 + b}", None, [])["registration_epoch"]
              for b in (1, 2, 3, 4, 5)}
    create_topic("t", assignments=[[1, 2]] * 4, configs={"min.insync.replicas": "2"})
    return epochs


def partition(number):
    return Partition.objects.get(topic__name="t", partition=number)


def catch_up(epochs, number):
    """The leader proposes every replica of the partition into the ISR (the new ones caught up)."""
    p = partition(number)
    services.alter_partition(p.leader, epochs[p.leader], "t", number, p.leader_epoch, p.partition_epoch, p.replicas)


def sample(number, broker, size, at):
    PartitionReplicaSize.objects.update_or_create(
        broker_id=broker, topic="t", partition=number,
        defaults={"log_dir": "/d", "size_bytes": size, "log_start_offset": 0, "log_end_offset": size // 100,
                  "leader": broker == 1, "sampled_at": at})


def states(execution):
    return [t.state for t in execution.tasks.order_by("partition")]


def test_an_execution_runs_in_batches_under_the_per_broker_limit_to_completion(cluster):
    for n in range(4):
        sample(n, 1, 1000 * (n + 1), T0 - timedelta(hours=1))
    execution = executor.create([PlanEntry("t", n, (1, 3)) for n in range(4)], "spread", throttle=1_000_000,
                                max_moves_per_broker=2)
    assert [t.size_estimate for t in execution.tasks.all()] == [1000, 2000, 3000, 4000]

    executor.advance(T0)  # broker 1 leads every move: two at once, the smallest first
    execution.refresh_from_db()
    assert states(execution) == ["copying", "copying", "pending", "pending"]
    assert partition(0).adding_replicas == [3] and not partition(2).is_reassigning
    assert Topic.objects.get(name="t").configs[FOLLOWER_REPLICAS] == "0:3,1:3"  # throttled per batch
    assert execution.copy_started_at == T0

    sample(0, 3, 600, T0 + timedelta(seconds=1))
    sample(1, 3, 500, T0 - timedelta(seconds=1))  # older than the move: not its copy
    executor.advance(T0 + timedelta(seconds=2))
    execution.refresh_from_db()
    tasks = list(execution.tasks.order_by("partition"))
    assert [(t.bytes_to_copy, t.bytes_copied) for t in tasks[:2]] == [(1000, 600), (2000, 0)]
    assert (execution.bytes_copied, execution.progress().rate) == (600, 300.0)  # 600 B in 2 s

    catch_up(cluster, 0)  # 3 joins the ISR: partition 0 completes, a slot frees, partition 2 starts
    executor.advance(T0 + timedelta(seconds=3))
    execution.refresh_from_db()
    assert states(execution) == ["done", "copying", "copying", "pending"]
    assert execution.tasks.get(partition=0).progress().fraction == 1.0
    assert LEADER_REPLICAS in Topic.objects.get(name="t").configs

    for n in (1, 2):
        catch_up(cluster, n)
    executor.advance(T0 + timedelta(seconds=4))
    catch_up(cluster, 3)
    executor.advance(T0 + timedelta(seconds=5))
    execution.refresh_from_db()
    assert states(execution) == ["done"] * 4
    assert (execution.state, execution.finished_at) == (ExecutionState.COMPLETED, T0 + timedelta(seconds=5))
    assert (execution.bytes_copied, execution.bytes_to_copy) == (10000, 10000)
    assert [partition(n).replicas for n in range(4)] == [[1, 3]] * 4
    assert Topic.objects.get(name="t").configs == {"min.insync.replicas": "2"}  # throttles released


def test_pause_stops_new_moves_and_resume_starts_them_again(cluster):
    execution = executor.create([PlanEntry("t", n, (1, 3)) for n in range(2)], "spread", max_moves_per_broker=1)
    executor.advance(T0)
    executor.pause(execution.pk)
    catch_up(cluster, 0)
    executor.advance(T0 + timedelta(seconds=1))  # the move in progress finishes, nothing new starts
    execution.refresh_from_db()
    assert (execution.state, states(execution)) == (ExecutionState.PAUSED, ["done", "pending"])
    with pytest.raises(KafkaApiError, match="is paused; it cannot be paused"):
        executor.pause(execution.pk)
    executor.resume(execution.pk)
    executor.advance(T0 + timedelta(seconds=2))
    assert states(execution) == ["done", "copying"]


def test_cancel_reverts_moves_in_progress_and_cancels_pending_ones(cluster):
    execution = executor.create([PlanEntry("t", n, (3, 4)) for n in range(3)], "move", throttle=2048,
                                max_moves_per_broker=2)
    executor.advance(T0)
    catch_up(cluster, 0)
    executor.cancel(execution.pk, T0 + timedelta(seconds=1))
    execution.refresh_from_db()
    assert (execution.state, states(execution)) == (ExecutionState.CANCELLED, ["done", "cancelled", "cancelled"])
    assert [partition(n).replicas for n in range(3)] == [[3, 4], [1, 2], [1, 2]]
    assert not any(partition(n).is_reassigning for n in range(3))
    assert Topic.objects.get(name="t").configs == {"min.insync.replicas": "2"}
    with pytest.raises(KafkaApiError, match="is cancelled; it cannot be cancelled"):
        executor.cancel(execution.pk)
    assert executor.advance(T0 + timedelta(seconds=2)) == []


def test_moves_changed_outside_the_execution_end_as_such(cluster):
    from controlplane.controller.reassignment import alter_reassignments
    execution = executor.create([PlanEntry("t", n, (1, 3)) for n in range(2)], "spread")
    executor.advance(T0)
    alter_reassignments([("t", 0, None), ("t", 1, [1, 4])])
    executor.advance(T0 + timedelta(seconds=1))
    execution.refresh_from_db()
    tasks = list(execution.tasks.order_by("partition"))
    assert [(t.state, t.error) for t in tasks] == [
        (TaskState.CANCELLED, "cancelled outside this execution"),
        (TaskState.FAILED, "reassigned outside this execution to [1, 4]")]
    assert execution.state == ExecutionState.FAILED


@pytest.mark.parametrize(("entries", "error", "message"), [
    ([PlanEntry("t", 0, (3,))], "INVALID_REPLICA_ASSIGNMENT", "fewer than its min.insync.replicas=2"),
    ([PlanEntry("t", 0, (1, 9))], "INVALID_REPLICA_ASSIGNMENT", "broker 9"),
    ([PlanEntry("t", 7, (1, 3))], "UNKNOWN_TOPIC_OR_PARTITION", "t-7"),
    ([PlanEntry("t", 0, (1, 2))], "INVALID_REQUEST", "changes no partition"),
    ([PlanEntry("t", 0, (1, 3)), PlanEntry("t", 0, (1, 4))], "INVALID_REQUEST", "more than once"),
])
def test_create_refuses_bad_plans(cluster, entries, error, message):
    with pytest.raises(KafkaApiError, match=message) as refused:
        executor.create(entries, "bad")
    assert refused.value.error == error and not ReassignmentExecution.objects.exists()


def test_one_execution_at_a_time(cluster):
    executor.create([PlanEntry("t", 0, (1, 3))], "first")
    with pytest.raises(KafkaApiError, match="Reassignment .* is running") as refused:
        executor.create([PlanEntry("t", 1, (1, 3))], "second")
    assert refused.value.error == "REASSIGNMENT_IN_PROGRESS"


def test_the_controller_advances_executions_every_interval(cluster):
    clock = [T0]
    controller = Controller("c", lambda: clock[0], executor_interval_ms=1000)
    assert controller.maybe_hold_lease()
    execution = executor.create([PlanEntry("t", 0, (1, 3))], "spread")
    controller.tick()
    assert states(execution) == ["copying"]
    catch_up(cluster, 0)
    clock[0] += timedelta(milliseconds=500)
    controller.tick()  # within the interval: not looked at
    assert states(execution) == ["copying"]
    clock[0] += timedelta(milliseconds=600)
    controller.tick()
    assert states(execution) == ["done"]


#
# REST
#

API = "/api/reassignments/executions/"


@pytest.fixture
def api(cluster):
    client = APIClient()
    client.force_authenticate(user_with_role("ops", Role.OPERATOR))
    client.epochs = cluster
    return client


def test_rest_creates_from_a_plan_shows_progress_and_pauses_resumes_cancels(api):
    created = api.post(API, {"partitions": [{"topic": "t", "partition": n, "replicas": [1, 3]} for n in range(2)],
                             "throttle": 2_000_000, "max_moves_per_broker": 1}, format="json")
    assert created.status_code == 201, created.json()
    body = created.json()
    assert (body["state"], body["created_by"], body["description"], body["throttle"]) == (
        "running", "ops", "plan", 2_000_000)
    assert body["tasks_by_state"] == {"pending": 2, "copying": 0, "in_isr": 0, "done": 0, "cancelled": 0,
                                      "failed": 0}
    execution_id = body["id"]
    executor.advance()
    detail = api.get(f"{API}{execution_id}/").json()
    assert [(t["partition"], t["state"], t["source_replicas"], t["target_replicas"]) for t in detail["tasks"]] == [
        (0, "copying", [1, 2], [1, 3]), (1, "pending", [1, 2], [1, 3])]
    assert set(detail["tasks"][0]) >= {"bytes_to_copy", "bytes_copied", "fraction", "rate", "eta_s"}

    assert api.post(f"{API}{execution_id}/pause/").json()["state"] == "paused"
    assert api.post(f"{API}{execution_id}/pause/").status_code == 409
    assert api.post(f"{API}{execution_id}/resume/").json()["state"] == "running"
    cancelled = api.post(f"{API}{execution_id}/cancel/").json()
    assert (cancelled["state"], [t["state"] for t in cancelled["tasks"]]) == ("cancelled", ["cancelled"] * 2)
    assert [e["id"] for e in api.get(API).json()["results"]] == [execution_id]
    assert list(AuditEntry.objects.filter(user__username="ops").order_by("pk").values_list("action", "target",
                                                                                           "result")) == [
        ("start_reassignment", "partitions:t-0,t-1", "ok"),
        ("pause_reassignment", f"reassignment:{execution_id}", "ok"),
        ("pause_reassignment", f"reassignment:{execution_id}", "failed"),
        ("resume_reassignment", f"reassignment:{execution_id}", "ok"),
        ("cancel_reassignment", f"reassignment:{execution_id}", "ok")]


def test_rest_creates_from_a_proposal(api):
    created = api.post(API, {"proposal": {"goal": "decommission", "brokers": [2]}}, format="json")
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["description"] == "decommission broker 2"
    assert all(2 not in t["target_replicas"] and len(t["target_replicas"]) == 2 for t in body["tasks"])
    assert len(body["tasks"]) == 4


@pytest.mark.parametrize(("body", "status", "error"), [
    ({}, 400, None),
    ({"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 3]}], "proposal": {"goal": "replicas"}}, 400, None),
    ({"proposal": {"goal": "nonsense"}}, 400, "INVALID_REQUEST"),
    ({"partitions": [{"topic": "t", "partition": 0, "replicas": [3]}]}, 400, "INVALID_REPLICA_ASSIGNMENT"),
    ({"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 3]}], "throttle": 10}, 400, "INVALID_REQUEST"),
])
def test_rest_errors(api, body, status, error):
    answer = api.post(API, body, format="json")
    assert answer.status_code == status
    if error:
        assert answer.json()["error"] == error
    assert not ReassignmentExecution.objects.exists()
    assert api.post(f"{API}999/cancel/").status_code == 404


def test_a_viewer_may_read_but_not_control(api):
    execution = executor.create([PlanEntry("t", 0, (1, 3))], "spread")
    viewer = APIClient()
    viewer.force_authenticate(user_with_role("val", Role.VIEWER))
    assert viewer.get(f"{API}{execution.pk}/").status_code == 200
    for verb in ("pause", "cancel"):
        assert viewer.post(f"{API}{execution.pk}/{verb}/").status_code == 403
    execution.refresh_from_db()
    assert execution.state == ExecutionState.RUNNING
