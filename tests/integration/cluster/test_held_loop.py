"""Issue 17: a broker whose event loop is held for several sessions keeps its registration, because its
heartbeats go out from a thread of their own (`brokerd.metadata.heartbeats`); a broker that is stopped altogether
(SIGSTOP: every thread) is still fenced by the session timeout, and registers again once it runs.

Broker 1 runs as `tests.support.held_loop_broker`: SIGUSR1 makes its loop's thread sleep three session timeouts,
as a callback applying a large metadata change would hold it. With the heartbeats on the loop (before) the
controller fenced it two seconds into the hold.
"""

import os
import signal

import pytest

from tests.support.cluster import broker_cluster
from tests.support.controlplane import control_plane
from tests.support.held_loop_broker import HOLD_ENV
from tests.support.polling import wait_until

SESSION_TIMEOUT_MS = 2000
"""Strom's default `broker.session.timeout.ms`."""
HOLD_MS = 3 * SESSION_TIMEOUT_MS


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    monkeypatch.setenv(HOLD_ENV, str(HOLD_MS))  # the brokers' environment
    with control_plane(tmp_path) as plane, broker_cluster(
            plane, tmp_path, 3, modules={1: "tests.support.held_loop_broker"}) as running:
        yield running


def registration(cluster, broker_id: int) -> tuple[str, int]:
    """(state, registration epoch) of the broker in the control plane's metadata."""
    [entry] = [b for b in cluster.plane.metadata()["brokers"] if b["broker_id"] == broker_id]
    return entry["state"], entry["registration_epoch"]


def log_has(cluster, broker_id: int, text: str) -> bool:
    return text in cluster.brokers[broker_id].log_file.read_text(errors="replace")


def test_a_held_loop_keeps_its_session_and_a_stopped_broker_loses_it(cluster):
    held = cluster.brokers[1].process
    before = registration(cluster, 1)
    assert before[0] == "running"
    held.send_signal(signal.SIGUSR1)
    wait_until(lambda: log_has(cluster, 1, "loop held from now"), 10, message="the hold to start")
    seen = []

    def hold_ended() -> bool:  # meanwhile, every look at the metadata finds the same registration running
        seen.append(registration(cluster, 1))
        return log_has(cluster, 1, "loop free again")

    wait_until(hold_ended, HOLD_MS / 1000 + 10, interval_s=0.1, message="the hold to end")
    seen.append(registration(cluster, 1))
    assert len(seen) > 10 and set(seen) == {before}, set(seen)

    os.kill(held.pid, signal.SIGSTOP)
    try:
        wait_until(lambda: registration(cluster, 1)[0] == "fenced", 3 * SESSION_TIMEOUT_MS / 1000,
                   message="the stopped broker fenced")
    finally:
        os.kill(held.pid, signal.SIGCONT)
    wait_until(lambda: registration(cluster, 1) == ("running", before[1] + 1), 20,
               message="the broker registered again once running")
