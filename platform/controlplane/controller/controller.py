"""The controller: the one process that fences dead brokers and moves leadership (KRaft's active controller).

`Controller.tick()` is one iteration of `manage.py run_controller`'s loop (every `STROM_CONTROLLER_TICK_MS`):

1. hold the lease: take it over when it expired (controller_epoch += 1) or renew it once a third of it has
   passed; a controller that cannot renew stops acting until it holds the lease again;
2. fence dead brokers, moving their leaderships to the next in-sync replica and dropping them from ISRs
   (`election.on_broker_gone`): a broker whose session connection was closed from its side (its process
   died: `Broker.connection_lost_at`) and which then missed a heartbeat that other brokers' heartbeats show
   the path carried, or whose last heartbeat is older than the session timeout. Sessions only run while the
   controller watches heartbeats arrive: if no broker's heartbeat gets through (the web process or the
   database is down), nobody is fenced, and once heartbeats resume every broker gets a full session again;
3. elect leaders for partitions without one when the metadata changed (a broker came back, …);
4. with auto leader rebalance, every check interval, move leadership back to preferred replicas of brokers
   whose imbalance exceeds the threshold;
5. every `STROM_EXECUTOR_INTERVAL_MS`, advance the reassignment executions (`executor.advance`).

Every action is one transaction that locks the controller-state row and first checks that this controller
still holds the lease at its epoch (`_guard`), so a stale controller changes nothing. The clock is injected
(`clock()` returns an aware datetime) so tests never sleep. Not thread-safe: one thread runs the loop.
"""

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from controlplane.cluster import metadata
from controlplane.cluster.models import Broker, BrokerState, ControllerState
from controlplane.liveness import services as liveness
from controlplane.liveness.models import BrokerLiveness
from controlplane.topics.models import NO_LEADER, Partition

from . import election, executor
from .models import ACTIVE_STATES, ReassignmentExecution

__all__ = ("Controller", "NotControllerError")

log = logging.getLogger(__name__)


def _dead_registrations(is_dead: Callable[[BrokerLiveness | None], bool], states: tuple[str, ...]
                        ) -> list[tuple[int, int, str, BrokerLiveness | None]]:
    """(broker id, registration epoch, state, liveness) of the brokers in `states` that `is_dead` judges dead:
    the registrations from the metadata store joined with their liveness (another database on SQLite)."""
    registrations = list(Broker.objects.filter(state__in=states).values_list("broker_id", "registration_epoch",
                                                                               "state"))
    rows = liveness.of(broker_id for broker_id, *_ in registrations)
    dead = []
    for broker_id, epoch, state in registrations:
        row = rows.get(broker_id)
        row = row if row is not None and row.registration_epoch == epoch else None
        if is_dead(row):
            dead.append((broker_id, epoch, state, row))
    return dead


class NotControllerError(Exception):
    """This controller does not hold the lease (any more): it must not change anything."""


class Controller:
    def __init__(self, identity: str | None = None, clock: Callable[[], datetime] = timezone.now, *,
                 lease_ms: int | None = None, session_timeout_ms: int | None = None,
                 heartbeat_interval_ms: int | None = None,
                 auto_rebalance: bool | None = None, imbalance_check_interval_s: int | None = None,
                 imbalance_percent: int | None = None, executor_interval_ms: int | None = None):
        self.identity = identity or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.clock = clock
        def given_or(value, setting):
            return getattr(settings, setting) if value is None else value

        self.lease = timedelta(milliseconds=given_or(lease_ms, "STROM_CONTROLLER_LEASE_MS"))
        self.session_timeout = timedelta(milliseconds=given_or(session_timeout_ms, "STROM_BROKER_SESSION_TIMEOUT_MS"))
        self.heartbeat_interval = timedelta(milliseconds=given_or(heartbeat_interval_ms,
                                                                  "STROM_BROKER_HEARTBEAT_INTERVAL_MS"))
        # The heartbeat path counts as down once no broker's heartbeat arrived for two intervals (a whole
        # round missed), always well inside one session so that an outage is noticed before anyone expires.
        self.path_silence = min(2 * self.heartbeat_interval, self.session_timeout / 2)
        self.auto_rebalance = given_or(auto_rebalance, "STROM_AUTO_LEADER_REBALANCE_ENABLE")
        self.imbalance_check_interval = timedelta(seconds=given_or(
            imbalance_check_interval_s, "STROM_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS"))
        self.imbalance_percent = given_or(imbalance_percent, "STROM_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE")
        self.executor_interval = timedelta(milliseconds=given_or(executor_interval_ms, "STROM_EXECUTOR_INTERVAL_MS"))
        self.next_execution_look_at: datetime | None = None
        self.epoch: int | None = None  # controller epoch while holding the lease
        self.lease_expires_at: datetime | None = None
        self.watching_since: datetime | None = None
        """Start of the current stretch in which this controller saw heartbeats arrive without a gap."""
        self._last_watch: datetime | None = None
        self._newest_heartbeat: datetime | None = None
        """The newest heartbeat of any broker at our last look (`watch_heartbeats`)."""
        self._path_down = False
        self.next_rebalance_at: datetime | None = None
        self._elected_at_version = -1

    @property
    def is_active(self) -> bool:
        return self.epoch is not None

    #
    # The lease
    #

    def maybe_hold_lease(self) -> bool:
        """Take over an expired lease or renew ours when a third of it passed; True while we hold it.

        The write waits only briefly for SQLite's write lock (`metadata.liveness_write`): while a metadata
        change holds it, nobody can take the lease over either, so we keep holding it until it expires and
        try again next tick. The new expiry counts from when the lock was obtained, not from before the wait.
        """
        now = self.clock()
        if self.is_active and self.lease_expires_at - now > self.lease * 2 / 3:
            return True
        try:
            return self._hold_lease()
        except metadata.WriteLockBusy:
            return self.is_active and self.lease_expires_at > self.clock()

    def _hold_lease(self) -> bool:
        with metadata.liveness_write():
            state = metadata.locked_state()
            now = self.clock()
            if self.is_active and state.active_controller_id == self.identity and state.controller_epoch == self.epoch:
                ControllerState.objects.filter(pk=state.pk, active_controller_id=self.identity,
                                               controller_epoch=self.epoch).update(lease_expires_at=now + self.lease)
                self.lease_expires_at = now + self.lease
                return True
            if self.is_active:
                log.warning("controller %s lost the lease (epoch %s) to %s (epoch %s)", self.identity, self.epoch,
                            state.active_controller_id, state.controller_epoch)
                self.epoch = None
            expired = Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lte=now) | Q(active_controller_id="")
            unchanged = ControllerState.objects.filter(expired, pk=state.pk, controller_epoch=state.controller_epoch)
            taken = unchanged.update(
                active_controller_id=self.identity, controller_epoch=state.controller_epoch + 1,
                lease_expires_at=now + self.lease)
            if not taken:
                return False
        self.epoch = state.controller_epoch + 1
        self.watching_since = self._last_watch = None  # a new controller watches every session from the start
        self.lease_expires_at = now + self.lease
        self.next_rebalance_at = now + self.imbalance_check_interval
        self._elected_at_version = -1
        log.warning("controller %s is active with epoch %s", self.identity, self.epoch)
        return True

    def resign(self) -> None:
        """Give the lease up (clean shutdown) so a successor need not wait for it to expire."""
        if not self.is_active:
            return
        with transaction.atomic():
            state = metadata.locked_state()
            ControllerState.objects.filter(pk=state.pk, active_controller_id=self.identity,
                                           controller_epoch=self.epoch).update(lease_expires_at=None)
        self.epoch = None

    def _guard(self) -> ControllerState:
        """Lock the controller state and check we still hold the lease; inside `transaction.atomic()`."""
        state = metadata.locked_state()
        if not self.is_active or state.active_controller_id != self.identity or state.controller_epoch != self.epoch:
            self.epoch = None  # somebody else took over: take part again only through maybe_hold_lease()
            raise NotControllerError(f"controller {self.identity} lost the lease to {state.active_controller_id} "
                                     f"(epoch {state.controller_epoch})")
        if state.lease_expires_at is None or state.lease_expires_at <= self.clock():
            raise NotControllerError(f"the lease of controller {self.identity} expired; it must renew it first")
        return state

    #
    # Actions
    #

    def watch_heartbeats(self) -> datetime | None:
        """Since when heartbeats have been seen arriving without a gap; None while the path is silent.

        The heartbeat path (brokers → web process → database) is alive while the newest heartbeat of any
        broker is younger than `path_silence`. A gap longer than that between two of our own looks (a
        paused controller, a takeover) also restarts the stretch: we only count what we watched.
        """
        now = self.clock()
        newest = self._newest_heartbeat = liveness.newest_heartbeat()
        continuous = self._last_watch is not None and now - self._last_watch < self.path_silence
        self._last_watch = now
        if newest is None or now - newest >= self.path_silence:
            if self.watching_since is not None:
                log.warning("no broker heartbeat for %s: the heartbeat path is down; nobody is fenced until "
                            "heartbeats arrive again", now - newest if newest else self.path_silence)
                self._path_down = True
            self.watching_since = None
        elif self.watching_since is None or not continuous:
            if self._path_down:
                log.warning("broker heartbeats arrive again; every broker gets a full session")
                self._path_down = False
            self.watching_since = now
        return self.watching_since

    def fence_expired_brokers(self) -> list[int]:
        """Fence running (or shutting-down) brokers that died; returns their ids.

        Dead means: the broker's session connection was closed from its side and none of its heartbeats
        followed while the path carried heartbeats for at least one heartbeat interval after the loss (the
        newest heartbeat of any broker is stamped that much later), or no heartbeat for a session while we
        watched heartbeats arrive (`watch_heartbeats`). Nothing is fenced while the heartbeat path is silent.

        The hang-up's deadline runs on the heartbeats' clock, not ours: when the web process or the database
        is slow (SQLite's write lock held for seconds), every heartbeat commits late, and a live broker whose
        session request timed out must not be fenced for a heartbeat that is merely queued with the others.
        """
        now = self.clock()
        watching_since = self.watch_heartbeats()
        if watching_since is None:
            return []
        is_dead = self._death_rule(now, watching_since)
        alive_states = (BrokerState.RUNNING, BrokerState.SHUTTING_DOWN)
        if not _dead_registrations(is_dead, alive_states):
            return []
        fenced = []
        with transaction.atomic():
            state = self._guard()
            # Liveness read again under the lock (its database never waits for it), so a heartbeat that
            # committed since the look above wins; conditional on the registration, so does a re-registration.
            for broker_id, epoch, broker_state, row in _dead_registrations(is_dead, alive_states):
                if Broker.objects.filter(broker_id=broker_id, state=broker_state,
                                         registration_epoch=epoch).update(state=BrokerState.FENCED):
                    election.on_broker_gone(broker_id, election.live_broker_ids())
                    fenced.append((broker_id, row))
            if fenced:
                metadata.bump(state)
        for broker_id, row in fenced:
            lost_at, arrived_at, last_heartbeat = ((row.connection_lost_at, row.heartbeat_arrived_at,
                                                    row.last_heartbeat) if row else (None, None, None))
            if lost_at is not None and (arrived_at is None or arrived_at < lost_at):
                log.warning("fenced broker %s: its connection closed %s ago and no heartbeat followed", broker_id,
                            now - lost_at)
            else:
                log.warning("fenced broker %s: no heartbeat for %s", broker_id, now - last_heartbeat
                            if last_heartbeat else self.session_timeout)
        return [broker_id for broker_id, _ in fenced]

    def _death_rule(self, now: datetime, watching_since: datetime) -> Callable[[BrokerLiveness | None], bool]:
        """Whether a registration with this liveness (None: none written) is dead, judged at `now`."""
        heard_until = min(now, self._newest_heartbeat)  # not None: watching_since is set
        lost_cutoff = heard_until - self.heartbeat_interval
        session_cutoff = now - self.session_timeout
        silence_counts = watching_since < session_cutoff  # a full session watched: silence is the broker's own

        def is_dead(row: BrokerLiveness | None) -> bool:
            if row is None or row.last_heartbeat is None:
                return silence_counts
            lost = row.connection_lost_at
            # Arrival, not write: a heartbeat sent before the death may be written after the hang-up was seen.
            hung_up = (lost is not None and lost <= lost_cutoff
                       and (row.heartbeat_arrived_at is None or row.heartbeat_arrived_at < lost))
            return hung_up or (silence_counts and row.last_heartbeat < session_cutoff)

        return is_dead

    def elect_offline_partitions(self) -> bool:
        """Elect leaders for leaderless partitions, once per metadata version (nothing else can help them)."""
        version = metadata.current_version()
        if version == self._elected_at_version:
            return False
        if not Partition.objects.filter(leader=NO_LEADER).exists():
            self._elected_at_version = version
            return False
        with transaction.atomic():
            state = self._guard()
            changed = election.elect_offline_partitions(election.live_broker_ids())
            if changed:
                metadata.bump(state)
            self._elected_at_version = state.metadata_version
        return changed

    def maybe_rebalance_leaders(self) -> int:
        """Kafka's auto leader rebalance, every check interval; returns how many partitions moved."""
        now = self.clock()
        if not self.auto_rebalance or self.next_rebalance_at is None or now < self.next_rebalance_at:
            return 0
        self.next_rebalance_at = now + self.imbalance_check_interval
        return self.rebalance_leaders()

    def rebalance_leaders(self) -> int:
        with transaction.atomic():
            state = self._guard()
            moved = election.rebalance_preferred_leaders(election.live_broker_ids(), self.imbalance_percent)
            if moved:
                metadata.bump(state)
        if moved:
            log.warning("moved %d partition(s) back to their preferred leaders", moved)
        return moved

    def maybe_advance_executions(self) -> list[int]:
        """Advance the reassignment executions every executor interval; returns those looked at. Takes the
        write lock only while an execution is active (it is the metadata lock heartbeats also need)."""
        now = self.clock()
        if self.next_execution_look_at is not None and now < self.next_execution_look_at:
            return []
        self.next_execution_look_at = now + self.executor_interval
        if not ReassignmentExecution.objects.filter(state__in=ACTIVE_STATES).exists():
            return []
        with transaction.atomic():
            self._guard()
            return executor.advance(now)

    def tick(self) -> None:
        if not self.maybe_hold_lease():
            return
        try:
            self.fence_expired_brokers()
            self.elect_offline_partitions()
            self.maybe_rebalance_leaders()
            self.maybe_advance_executions()
        except NotControllerError:
            log.warning("controller %s stopped acting: lease lost", self.identity)

    def run(self, stop: threading.Event, tick_ms: int | None = None) -> None:
        """Tick until `stop` is set; database errors are logged and retried on the next tick."""
        interval = (tick_ms or settings.STROM_CONTROLLER_TICK_MS) / 1000
        try:
            while not stop.is_set():
                try:
                    self.tick()
                except DatabaseError:
                    log.exception("controller tick failed; retrying")
                    connection.close()
                stop.wait(interval)
        finally:
            try:
                self.resign()
            except DatabaseError:
                log.exception("could not resign the lease")
