"""The controller with an injected clock: lease exclusivity, fencing and elections, stale controllers, rebalance,
and the on-demand election from the CLI and REST API."""

from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from controlplane.cluster import services
from controlplane.cluster.models import Broker, BrokerState, ControllerState
from controlplane.controller.controller import Controller, NotControllerError
from controlplane.liveness.models import BrokerLiveness
from controlplane.topics.models import Partition, Topic
from controlplane.topics.services import alter_configs, create_topic

SESSION_MS = 2000
HEARTBEAT_MS = 250
LEASE_MS = 3000
TICK_MS = 100


class ManualClock:
    def __init__(self):
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += timedelta(milliseconds=ms)


@pytest.fixture
def clock():
    return ManualClock()


def make_controller(clock, name="a", **kwargs):
    return Controller(name, clock, lease_ms=LEASE_MS, session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS,
                      auto_rebalance=False, **kwargs)


@pytest.fixture
def brokers(db, clock):
    """Brokers 1, 2, 3 registered at clock time; topic t: partitions [1,2,3], [2,3,1], [3,1,2]."""
    epochs = {b: services.register_broker(b, f"PLAINTEXT://127.0.0.1:{9090 + b}", None, [], now=clock())
              ["registration_epoch"] for b in (1, 2, 3)}
    create_topic("t", assignments=[[1, 2, 3], [2, 3, 1], [3, 1, 2]])
    return epochs


def heartbeat_all(clock, epochs, but=()):
    for broker_id, epoch in epochs.items():
        if broker_id not in but:
            services.heartbeat(broker_id, epoch, now=clock())


def run(controller, clock, epochs, ms, but=()):
    """`ms` of normal operation: every TICK_MS every broker but `but` heartbeats and the controller ticks."""
    for _ in range(ms // TICK_MS):
        clock.advance(TICK_MS)
        heartbeat_all(clock, epochs, but)
        controller.tick()


def states():
    return dict(Broker.objects.values_list("broker_id", "state"))


def partitions():
    return {p.partition: p for p in Partition.objects.all()}


def version():
    return ControllerState.current().metadata_version


#
# Lease
#

@pytest.mark.django_db
def test_only_one_of_two_controllers_is_active_and_the_other_takes_over_after_expiry(clock):
    a, b = make_controller(clock, "a"), make_controller(clock, "b")
    assert a.maybe_hold_lease() and not b.maybe_hold_lease()
    assert (a.epoch, b.epoch) == (1, None)
    for _ in range(10):  # a renews before expiry: b never gets in
        clock.advance(LEASE_MS // 2)
        assert a.maybe_hold_lease() and not b.maybe_hold_lease()
    clock.advance(LEASE_MS + 1)  # a stops renewing (paused, dead)
    assert b.maybe_hold_lease() and b.epoch == 2
    state = ControllerState.current()
    assert (state.active_controller_id, state.controller_epoch) == ("b", 2)
    assert not a.maybe_hold_lease() and not a.is_active  # a learns it lost the lease and stops acting


@pytest.mark.django_db
def test_resigning_hands_over_at_once(clock):
    a, b = make_controller(clock, "a"), make_controller(clock, "b")
    assert a.maybe_hold_lease()
    a.resign()
    assert b.maybe_hold_lease() and b.epoch == 2


def test_stale_controller_changes_nothing(brokers, clock):
    a, b = make_controller(clock, "a"), make_controller(clock, "b")
    assert a.maybe_hold_lease()
    clock.advance(LEASE_MS + 1)
    assert b.maybe_hold_lease()
    services.connection_lost(1, brokers[1], now=clock())  # broker 1 died; b has not acted yet
    clock.advance(HEARTBEAT_MS)
    heartbeat_all(clock, brokers, but=(1,))
    before = (version(), list(Broker.objects.values_list("state", flat=True)),
              list(Partition.objects.values_list("leader", "isr", "leader_epoch", "partition_epoch")))
    for action in (a.fence_expired_brokers, a.rebalance_leaders):
        with pytest.raises(NotControllerError):
            action()
    Partition.objects.filter(partition=0).update(leader=-1)
    with pytest.raises(NotControllerError):
        a.elect_offline_partitions()
    Partition.objects.filter(partition=0).update(leader=1)
    after = (version(), list(Broker.objects.values_list("state", flat=True)),
             list(Partition.objects.values_list("leader", "isr", "leader_epoch", "partition_epoch")))
    assert after == before and not a.is_active


def test_controller_whose_lease_expired_does_not_act_until_it_renews(brokers, clock):
    a = make_controller(clock)
    assert a.maybe_hold_lease()
    clock.advance(TICK_MS)
    services.connection_lost(1, brokers[1], now=clock())
    clock.advance(LEASE_MS)
    heartbeat_all(clock, brokers, but=(1,))
    with pytest.raises(NotControllerError):
        a.fence_expired_brokers()
    assert Broker.objects.filter(state=BrokerState.RUNNING).count() == 3
    a.tick()  # renews (nobody took over), then acts
    assert states() == {1: BrokerState.FENCED, 2: BrokerState.RUNNING, 3: BrokerState.RUNNING}


#
# Fencing and election
#

def test_heartbeating_brokers_are_never_fenced(brokers, clock):
    controller = make_controller(clock)
    for _ in range(100):
        clock.advance(250)
        heartbeat_all(clock, brokers)
        controller.tick()
    assert Broker.objects.filter(state=BrokerState.RUNNING).count() == 3
    assert {p.leader_epoch for p in Partition.objects.all()} == {0}


def test_dead_leader_is_fenced_after_the_session_timeout_and_the_next_isr_member_leads(brokers, clock):
    controller = make_controller(clock)
    controller.tick()
    run(controller, clock, brokers, SESSION_MS)
    before = version()
    for _ in range(SESSION_MS // TICK_MS):
        clock.advance(TICK_MS)
        heartbeat_all(clock, brokers, but=(1,))
        controller.tick()
        assert Broker.objects.get(broker_id=1).state == BrokerState.RUNNING
    clock.advance(TICK_MS)
    heartbeat_all(clock, brokers, but=(1,))
    controller.tick()
    assert Broker.objects.get(broker_id=1).state == BrokerState.FENCED
    p = partitions()
    assert (p[0].leader, p[0].isr, p[0].leader_epoch, p[0].partition_epoch) == (2, [2, 3], 1, 1)
    assert (p[1].leader, p[1].isr, p[1].leader_epoch, p[1].partition_epoch) == (2, [2, 3], 0, 1)
    assert (p[2].leader, p[2].isr, p[2].leader_epoch, p[2].partition_epoch) == (3, [3, 2], 0, 1)
    assert version() == before + 1  # one transaction


def test_last_isr_member_dying_leaves_the_partition_offline_until_it_returns(brokers, clock):
    create_topic("solo", assignments=[[1, 2]])
    Partition.objects.filter(topic__name="solo").update(isr=[1])
    controller = make_controller(clock)
    controller.tick()
    run(controller, clock, brokers, SESSION_MS + TICK_MS, but=(1,))
    solo = Partition.objects.get(topic__name="solo")
    assert (solo.leader, solo.isr, solo.leader_epoch) == (-1, [1], 1)
    # broker 1 comes back: it registers again and leads the partitions whose ISR holds it
    services.register_broker(1, "PLAINTEXT://127.0.0.1:9091", None, [], now=clock())
    solo.refresh_from_db()
    assert (solo.leader, solo.isr, solo.leader_epoch) == (1, [1], 2)
    assert partitions()[0].leader == 2  # partitions that have a leader keep it


def test_unclean_topic_elects_an_out_of_sync_replica(brokers, clock):
    create_topic("lossy", assignments=[[1, 2]], configs={"unclean.leader.election.enable": "true"})
    Partition.objects.filter(topic__name="lossy").update(isr=[1])
    controller = make_controller(clock)
    controller.tick()
    run(controller, clock, brokers, SESSION_MS + TICK_MS, but=(1,))
    lossy = Partition.objects.get(topic__name="lossy")
    assert (lossy.leader, lossy.isr) == (2, [2])


def test_offline_partitions_are_elected_when_the_topic_allows_unclean_election_later(brokers, clock):
    create_topic("later", assignments=[[1, 2]])
    Partition.objects.filter(topic__name="later").update(isr=[1], leader=-1)
    Broker.objects.filter(broker_id=1).update(state=BrokerState.FENCED)
    controller = make_controller(clock)
    controller.tick()
    assert Partition.objects.get(topic__name="later").leader == -1
    alter_configs("later", {"unclean.leader.election.enable": "true"})
    controller.tick()
    assert Partition.objects.get(topic__name="later").leader == 2


def test_restart_within_the_session_moves_leadership_away_first(brokers, clock):
    services.register_broker(1, "PLAINTEXT://127.0.0.1:9091", None, [], now=clock())
    p = partitions()
    assert (p[0].leader, p[0].isr) == (2, [2, 3])
    assert all(1 not in q.isr for q in p.values())
    assert Broker.objects.get(broker_id=1).registration_epoch == 2


def test_zombie_broker_changes_nothing(brokers, clock):
    services.register_broker(1, "PLAINTEXT://127.0.0.1:9091", None, [], now=clock())  # new incarnation, epoch 2
    Partition.objects.filter(partition=0).update(leader=1, isr=[1, 2, 3], leader_epoch=5, partition_epoch=5)
    before = list(Partition.objects.values_list("isr", "partition_epoch"))
    for call in (lambda: services.heartbeat(1, 1, now=clock()),
                 lambda: services.alter_partition(1, 1, "t", 0, 5, 5, [1]),
                 lambda: services.allocate_producer_ids(1, 1)):
        with pytest.raises(Exception) as error:
            call()
        assert error.value.error == "STALE_BROKER_EPOCH"
    assert list(Partition.objects.values_list("isr", "partition_epoch")) == before
    assert services.alter_partition(1, 2, "t", 0, 5, 5, [1])["isr"] == [1]


def test_new_controller_gives_brokers_a_full_session(brokers, clock):
    clock.advance(10 * SESSION_MS)
    heartbeat_all(clock, brokers, but=(1,))  # broker 1 has been silent for long: nobody watched it
    controller = make_controller(clock)
    controller.tick()
    assert Broker.objects.filter(state=BrokerState.RUNNING).count() == 3
    run(controller, clock, brokers, SESSION_MS, but=(1,))
    assert Broker.objects.filter(state=BrokerState.RUNNING).count() == 3
    run(controller, clock, brokers, TICK_MS, but=(1,))
    assert states() == {1: BrokerState.FENCED, 2: BrokerState.RUNNING, 3: BrokerState.RUNNING}


def test_heartbeat_path_down_longer_than_the_session_fences_nobody(brokers, clock):
    """The web process (which serves heartbeats) is down for ten sessions, then back: no broker is fenced,
    no leader moves, and a broker that does not come back is fenced a full session after the others did."""
    controller = make_controller(clock)
    controller.tick()
    run(controller, clock, brokers, SESSION_MS)
    before = list(Partition.objects.values_list("leader", "isr", "leader_epoch", "partition_epoch"))
    run(controller, clock, brokers, 10 * SESSION_MS, but=(1, 2, 3))  # no heartbeat gets through
    assert controller.watching_since is None
    assert Broker.objects.filter(state=BrokerState.RUNNING).count() == 3
    run(controller, clock, brokers, TICK_MS, but=(2, 3))  # back: broker 1's heartbeat arrives first
    run(controller, clock, brokers, TICK_MS, but=(3,))  # broker 3 never comes back
    run(controller, clock, brokers, SESSION_MS - 2 * TICK_MS, but=(3,))
    assert Broker.objects.filter(state=BrokerState.RUNNING).count() == 3
    assert list(Partition.objects.values_list("leader", "isr", "leader_epoch", "partition_epoch")) == before
    run(controller, clock, brokers, 2 * TICK_MS, but=(3,))
    assert states() == {1: BrokerState.RUNNING, 2: BrokerState.RUNNING, 3: BrokerState.FENCED}


def test_a_paused_controller_counts_no_silence_it_did_not_watch(brokers, clock):
    controller = make_controller(clock)
    controller.tick()
    run(controller, clock, brokers, SESSION_MS)
    clock.advance(3 * SESSION_MS)  # the controller did not run; meanwhile only broker 1 heartbeated
    services.heartbeat(1, brokers[1], now=clock())
    controller.tick()
    assert Broker.objects.filter(state=BrokerState.RUNNING).count() == 3


def test_broker_whose_connection_closed_and_missed_a_heartbeat_is_fenced_at_once(brokers, clock):
    controller = make_controller(clock)
    controller.tick()
    run(controller, clock, brokers, SESSION_MS)
    clock.advance(10)
    services.connection_lost(1, brokers[1], now=clock())  # the web process saw broker 1's long poll close
    run(controller, clock, brokers, HEARTBEAT_MS - TICK_MS // 2, but=(1,))
    assert Broker.objects.get(broker_id=1).state == BrokerState.RUNNING  # its next heartbeat may still come
    run(controller, clock, brokers, TICK_MS, but=(1,))
    assert states() == {1: BrokerState.FENCED, 2: BrokerState.RUNNING, 3: BrokerState.RUNNING}
    assert partitions()[0].leader == 2


def test_closed_connection_followed_by_a_heartbeat_fences_nobody(brokers, clock):
    """A live broker whose long poll timed out keeps heartbeating: the closed connection is not held against it."""
    controller = make_controller(clock)
    controller.tick()
    run(controller, clock, brokers, SESSION_MS)
    services.connection_lost(1, brokers[1], now=clock())
    run(controller, clock, brokers, 10 * SESSION_MS)
    assert Broker.objects.filter(state=BrokerState.RUNNING).count() == 3


# Broker 1's session closes at 0 ms; every broker heartbeated until 10 ms before. Each row: the heartbeats that
# commit afterwards as (broker, stamp in ms after the loss), the time of the controller's last look, and whether
# broker 1 is fenced by then. A heartbeat is stamped when it reached the web process; a congested web process
# or database (SQLite's write lock held by a long transaction) commits it later, as the 0-ms rows model.
HANG_UP_ROWS = [
    ("others heartbeat on time, broker 1 does not", [(2, 250), (3, 250)], 250, True),
    ("others heartbeat on time, broker 1 does not: checked later", [(2, 250), (3, 250), (2, 400), (3, 400)], 400,
     True),
    ("no heartbeat committed since the loss (all queued behind the write lock)", [], 400, False),
    ("others' heartbeats committed, but none an interval after the loss", [(2, 100), (3, 200)], 400, False),
    ("broker 1's own heartbeat follows the loss", [(1, 200), (2, 250), (3, 250)], 450, False),
    ("broker 1's heartbeat stamped before the others', committed after them", [(2, 300), (3, 300), (1, 100)], 450,
     False),
]


@pytest.mark.parametrize(("commits", "until_ms", "fenced"), [row[1:] for row in HANG_UP_ROWS],
                         ids=[row[0] for row in HANG_UP_ROWS])
def test_a_closed_session_fences_only_after_a_heartbeat_interval_the_path_carried(brokers, clock, commits, until_ms,
                                                                                  fenced):
    controller = make_controller(clock)
    controller.tick()
    run(controller, clock, brokers, SESSION_MS)
    clock.advance(10)
    lost_at = clock()
    services.connection_lost(1, brokers[1], now=lost_at)
    pending = sorted(commits, key=lambda c: c[1])
    for elapsed in range(0, until_ms + 1, 50):  # the controller looks every 50 ms
        clock.now = lost_at + timedelta(milliseconds=elapsed)
        for broker_id, stamp_ms in list(pending):
            if max(stamp_ms, commit_ms(commits, broker_id, stamp_ms)) <= elapsed:
                services.heartbeat(broker_id, brokers[broker_id], now=lost_at + timedelta(milliseconds=stamp_ms))
                pending.remove((broker_id, stamp_ms))
        controller.tick()
    assert controller.watching_since is not None  # the path never counted as down: the rule alone decided
    assert (Broker.objects.get(broker_id=1).state == BrokerState.FENCED) is fenced
    assert Broker.objects.filter(broker_id__in=(2, 3), state=BrokerState.RUNNING).count() == 2


@pytest.mark.parametrize(("arrived_ms", "committed_ms", "fenced"), [
    (-100, 300, True),   # sent before the death, written after the hang-up (a busy web process)
    (100, 300, False),   # sent after the hang-up was seen: the broker lives (its session request timed out)
    (-100, -50, True),   # the plain case: the last heartbeat came and went before the hang-up
], ids=["arrived_before_committed_after", "arrived_after", "arrived_and_committed_before"])
def test_a_heartbeat_follows_a_hang_up_only_if_it_arrived_after_it(brokers, clock, arrived_ms, committed_ms, fenced):
    """`last_heartbeat` is the write time (`liveness.heartbeat` stamps it once it holds the liveness database's
    lock); whether a heartbeat followed the loss is decided by its arrival (`heartbeat_arrived_at`), on the web
    process's clock like the hang-up itself."""
    controller = make_controller(clock)
    controller.tick()
    run(controller, clock, brokers, SESSION_MS)
    lost_at = clock() + timedelta(milliseconds=200)
    clock.now = lost_at + timedelta(milliseconds=arrived_ms)
    services.heartbeat(1, brokers[1], now=clock())
    BrokerLiveness.objects.filter(broker_id=1).update(last_heartbeat=lost_at + timedelta(milliseconds=committed_ms))
    services.connection_lost(1, brokers[1], now=lost_at)
    clock.now = max(clock.now, lost_at)
    run(controller, clock, brokers, HEARTBEAT_MS + 2 * TICK_MS, but=(1,))
    assert (Broker.objects.get(broker_id=1).state == BrokerState.FENCED) is fenced
    assert Broker.objects.filter(broker_id__in=(2, 3), state=BrokerState.RUNNING).count() == 2


def commit_ms(commits: list[tuple[int, int]], broker_id: int, stamp_ms: int) -> int:
    """When a heartbeat commits: in row order (a heartbeat listed after later-stamped ones waited for the lock)."""
    index = commits.index((broker_id, stamp_ms))
    return max(stamp for _, stamp in commits[:index + 1])


def test_connection_loss_of_an_old_registration_is_not_recorded(brokers, clock):
    services.register_broker(1, "PLAINTEXT://127.0.0.1:9091", None, [], now=clock())
    assert not services.connection_lost(1, brokers[1], now=clock())
    assert BrokerLiveness.objects.get(broker_id=1).connection_lost_at is None


#
# Preferred leaders: automatic rebalance, CLI, REST
#

def test_auto_rebalance_moves_leaders_back_after_the_check_interval(brokers, clock):
    Partition.objects.filter(partition=0).update(leader=2)
    controller = Controller("a", clock, lease_ms=LEASE_MS, session_timeout_ms=SESSION_MS, auto_rebalance=True,
                            imbalance_check_interval_s=300, imbalance_percent=10)
    controller.tick()
    assert partitions()[0].leader == 2
    clock.advance(299_000)
    heartbeat_all(clock, brokers)
    controller.tick()
    assert partitions()[0].leader == 2
    clock.advance(1_000)
    heartbeat_all(clock, brokers)
    controller.tick()
    assert (partitions()[0].leader, partitions()[0].leader_epoch) == (1, 1)


def test_rebalance_respects_the_imbalance_threshold(brokers, clock):
    create_topic("many", assignments=[[1, 2]] * 10)
    Partition.objects.filter(topic__name="many", partition=0).update(leader=2)  # broker 1: 1 of 11 = 9% < 10%
    controller = make_controller(clock, imbalance_percent=10)
    controller.maybe_hold_lease()
    assert controller.rebalance_leaders() == 0
    Partition.objects.filter(topic__name="many", partition=1).update(leader=2)  # 2 of 11 = 18%
    assert controller.rebalance_leaders() == 2
    assert {p.leader for p in Partition.objects.filter(topic__name="many")} == {1}


def test_elect_leaders_command(brokers, local_superuser):
    Partition.objects.filter(partition__in=(0, 1)).update(leader=3)
    out = StringIO()
    call_command("elect_leaders", "--topic", "t", "--partition", "0", stdout=out)
    assert out.getvalue().strip() == "t-0: elected"
    call_command("elect_leaders", stdout=out)
    assert "t-1: elected" in out.getvalue()
    assert [p.leader for p in partitions().values()] == [1, 2, 3]
    with pytest.raises(CommandError):
        call_command("elect_leaders", "--partition", "1")


def test_elect_leaders_rest_endpoint(api_client, brokers):
    Partition.objects.filter(partition=2).update(leader=1)
    response = api_client.post("/api/elect-leaders/", {"election_type": "preferred",
                                                        "partitions": [{"topic": "t", "partition": 2}]}, format="json")
    assert response.status_code == 200
    assert response.json() == {"results": [{"topic": "t", "partition": 2, "error": None}]}
    assert partitions()[2].leader == 3
    assert api_client.post("/api/elect-leaders/", {"election_type": "x"}, format="json").status_code == 400


def test_elect_leaders_rest_endpoint_needs_login(client, brokers):
    assert client.post("/api/elect-leaders/", {}, content_type="application/json").status_code in (401, 403)
    assert Topic.objects.count() == 1
