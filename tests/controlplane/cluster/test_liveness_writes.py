"""Liveness writes against a metadata change holding SQLite's write lock (`metadata.liveness_write`): a heartbeat
and the controller's lease renewal wait only briefly for the lock, then give up (so an abandoned heartbeat frees
its web thread), and what does commit is stamped with the time it got the lock, not the time it arrived. The
controller's loop does not take the lock when nothing needs it.

Real transactions on separate connections (threads), so `transaction=True`; the threads are synchronised by events
(the lock is held; a writer issued its BEGIN and waits), never by sleeps, and the bounds are generous (the lock
wait under test is 300 ms, the busy timeout it replaces 20 s).
"""

import threading
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from controlplane.cluster import metadata, services
from controlplane.cluster.models import Broker, ControllerState
from controlplane.controller.controller import Controller

pytestmark = pytest.mark.django_db(transaction=True)

ON_SQLITE = connection.vendor == "sqlite"
sqlite_only = pytest.mark.skipif(not ON_SQLITE, reason="SQLite's one write lock; `make test` runs these in its "
                                                       "SQLite pass (marker sqlite_lock)")

LOCK_WAIT_MS = 300
BOUND_S = 5.0
"""A liveness write returns within this while the lock is held (it waited up to 20 s before)."""


@pytest.fixture
def short_wait(settings):
    settings.STROM_LIVENESS_LOCK_WAIT_MS = LOCK_WAIT_MS


@pytest.fixture
def hold_lock() -> Iterator:
    """`hold_lock()` starts a metadata change holding the write lock (`locked_state()` in an open transaction)
    in another thread and returns the event that ends it."""
    release = threading.Event()
    holders = []

    def start() -> threading.Event:
        held = threading.Event()

        def hold() -> None:
            try:
                with transaction.atomic():
                    metadata.locked_state()
                    held.set()
                    release.wait(60)
            finally:
                connection.close()

        holders.append(threading.Thread(target=hold, daemon=True))
        holders[-1].start()
        assert held.wait(BOUND_S)
        return release

    yield start
    release.set()
    for holder in holders:
        holder.join(BOUND_S)


def in_thread(work, began: threading.Event) -> tuple[threading.Thread, list]:
    """Run `work` in a thread whose connection sets `began` when it issues BEGIN (then waits for the lock);
    the list gets its result or exception."""
    outcome: list = []

    def signal_begin(execute, sql, params, many, context):
        if sql.lstrip().upper().startswith("BEGIN"):
            began.set()
        return execute(sql, params, many, context)

    def run() -> None:
        try:
            with connection.execute_wrapper(signal_begin):
                outcome.append(work())
        except Exception as e:  # handed to the test
            outcome.append(e)
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


@pytest.mark.sqlite_lock
@sqlite_only
def test_a_heartbeat_gives_up_on_a_held_lock_and_one_that_waited_is_stamped_when_it_commits(
        short_wait, hold_lock, settings):
    epoch = services.register_broker(1, "PLAINTEXT://127.0.0.1:9092", None, [])["registration_epoch"]
    release = hold_lock()
    began = time.monotonic()
    with pytest.raises(metadata.WriteLockBusy) as busy:
        services.heartbeat(1, epoch)
    assert busy.value.status == 503 and time.monotonic() - began < BOUND_S

    settings.STROM_LIVENESS_LOCK_WAIT_MS = int(BOUND_S * 1000)  # this one waits for the release
    waiting = threading.Event()
    thread, outcome = in_thread(lambda: services.heartbeat(1, epoch), waiting)
    assert waiting.wait(BOUND_S)
    released_at = timezone.now()
    release.set()
    thread.join(BOUND_S)
    assert outcome and outcome[0]["state"] == "running"
    assert Broker.objects.get(broker_id=1).last_heartbeat >= released_at


@pytest.mark.sqlite_lock
@sqlite_only
def test_the_lease_is_kept_while_the_lock_is_held_and_renewed_from_when_it_got_it(short_wait, hold_lock, settings):
    start = timezone.now()
    now = [start]
    controller = Controller("c1", clock=lambda: now[0], lease_ms=3000)
    assert controller.maybe_hold_lease()
    release = hold_lock()
    now[0] = start + timedelta(seconds=1.5)  # renewal due, lease still valid
    began = time.monotonic()
    assert controller.maybe_hold_lease()
    controller.tick()  # nothing to fence, elect or execute: the loop does not wait for the lock
    assert time.monotonic() - began < 2 * BOUND_S
    now[0] = start + timedelta(seconds=3.5)  # expired while the lock stayed busy
    assert not controller.maybe_hold_lease()

    settings.STROM_LIVENESS_LOCK_WAIT_MS = int(BOUND_S * 1000)  # this renewal waits for the release
    waiting = threading.Event()
    thread, outcome = in_thread(controller.maybe_hold_lease, waiting)
    assert waiting.wait(BOUND_S)
    now[0] = start + timedelta(seconds=10)  # the lock is obtained only now
    release.set()
    thread.join(BOUND_S)
    assert outcome == [True]
    assert ControllerState.objects.get().lease_expires_at == start + timedelta(seconds=13)


@pytest.mark.skipif(ON_SQLITE, reason="PostgreSQL's row locks (the control-plane tests' PostgreSQL pass)")
def test_on_postgresql_a_heartbeat_does_not_wait_for_a_metadata_change(hold_lock):
    """Row locks: a metadata change holds the controller-state row, a heartbeat updates only its broker's row."""
    epoch = services.register_broker(1, "PLAINTEXT://127.0.0.1:9092", None, [])["registration_epoch"]
    hold_lock()
    before = timezone.now()
    began = time.monotonic()
    assert services.heartbeat(1, epoch)["state"] == "running"
    assert time.monotonic() - began < BOUND_S
    assert Broker.objects.get(broker_id=1).last_heartbeat >= before
