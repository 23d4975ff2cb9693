"""Liveness writes against a metadata change holding the metadata store's write lock: a heartbeat and a hang-up
record are written at once (broker liveness has its own database on SQLite: `controlplane.liveness`); the
controller's lease renewal (`metadata.liveness_write`, still in the metadata store) waits only briefly for the lock,
then gives up, and a renewal that does commit counts from when it got the lock. The controller's loop does not take
the lock when nothing needs it.

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
from controlplane.cluster.models import ControllerState
from controlplane.controller.controller import Controller
from controlplane.liveness import services as liveness

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
def test_a_heartbeat_and_a_hang_up_are_written_while_a_metadata_change_holds_the_write_lock(hold_lock):
    """Liveness has its own database on SQLite (on PostgreSQL its own rows, which no metadata change locks): both
    are written, and visible to the controller, before the change holding the metadata store's lock ends. (Before,
    the heartbeat waited for the lock and gave up with a 503 after `STROM_LIVENESS_LOCK_WAIT_MS`.)"""
    epoch = services.register_broker(1, "PLAINTEXT://127.0.0.1:9092", None, [])["registration_epoch"]
    hold_lock()
    before = timezone.now()
    began = time.monotonic()
    assert services.heartbeat(1, epoch)["state"] == "running"
    assert services.connection_lost(1, epoch)
    assert time.monotonic() - began < BOUND_S
    row = liveness.of([1])[1]
    assert row.last_heartbeat >= before and row.heartbeat_arrived_at >= before
    assert row.connection_lost_at >= row.heartbeat_arrived_at
    assert liveness.newest_heartbeat() == row.last_heartbeat


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
