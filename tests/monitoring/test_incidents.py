"""Announcement decisions (monitoring.notifier.incidents.decide), table-driven: one row per transition for
one subscriber, then per-subscriber thresholds and reminder intervals over a sequence of rounds."""

import itertools

import pytest

from monitoring.evaluator import not_found
from monitoring.model import Status
from monitoring.notifier.incidents import Announced, EventKind, Incident, NotifyPolicy, Silence, decide
from tests.monitoring.factories import group, partition

T0 = 1_700_000_000_000


def result_with(status: Status, breached: bool = False, name: str = "billing"):
    if status is Status.NOTFOUND:
        return not_found("prod", name, T0)
    partition_status = {Status.OK: Status.OK, Status.WARN: Status.WARN, Status.ERR: Status.STOP}[status]
    return group(partition(partition_status, breached=breached), name=name)


def incident(status: Status, notified: Status | None = None, notified_ms: int = T0) -> Incident:
    """An open incident; `notified`: what subscriber "ops" was told at `notified_ms` (None: nothing)."""
    told = {"ops": Announced(notified, notified_ms)} if notified else {}
    return Incident("inc-1", "prod", "billing", T0, status, told)


REMIND = NotifyPolicy(reminder_interval_ms=60_000)
ERR_ONLY = NotifyPolicy(min_status=Status.ERR)
NO_CLOSE = NotifyPolicy(send_close=False)
SILENCE = Silence("bill*", ends_ms=T0 + 100_000)

# (previous incident, group status, threshold breached, now offset ms, policy, silences,
#  expected event or None, expected incident (status, notified_status) or None)
CASES = [
    (None, Status.OK, False, 0, NotifyPolicy(), (), None, None),                          # healthy: nothing
    (None, Status.WARN, False, 0, NotifyPolicy(), (), EventKind.OPEN, (Status.WARN, Status.WARN)),
    (None, Status.ERR, False, 0, NotifyPolicy(), (), EventKind.OPEN, (Status.ERR, Status.ERR)),
    (None, Status.OK, True, 0, NotifyPolicy(), (), EventKind.OPEN, (Status.ERR, Status.ERR)),  # threshold → ERR
    (None, Status.WARN, False, 0, ERR_ONLY, (), None, (Status.WARN, None)),                # opened, untold
    (None, Status.ERR, False, 0, ERR_ONLY, (), EventKind.OPEN, (Status.ERR, Status.ERR)),
    (None, Status.NOTFOUND, False, 0, NotifyPolicy(), (), None, None),
    (None, Status.ERR, False, 0, NotifyPolicy(), (SILENCE,), None, (Status.ERR, None)),    # silenced open
    (incident(Status.ERR), Status.ERR, False, 150_000, NotifyPolicy(), (SILENCE,), EventKind.OPEN,
     (Status.ERR, Status.ERR)),                                                            # silence over
    (incident(Status.WARN, Status.WARN), Status.WARN, False, 10 * 60_000, NotifyPolicy(), (), None,
     (Status.WARN, Status.WARN)),                                                          # unchanged: quiet
    (incident(Status.WARN, Status.WARN), Status.ERR, False, 1, NotifyPolicy(), (), EventKind.UPDATE,
     (Status.ERR, Status.ERR)),                                                            # changed: update
    (incident(Status.ERR, Status.ERR), Status.WARN, False, 1, NotifyPolicy(), (), EventKind.UPDATE,
     (Status.WARN, Status.WARN)),
    (incident(Status.ERR, Status.ERR), Status.WARN, False, 1, NotifyPolicy(), (SILENCE,), None,
     (Status.WARN, Status.ERR)),                                                           # change held back
    (incident(Status.ERR, Status.ERR), Status.ERR, False, 59_999, REMIND, (), None, (Status.ERR, Status.ERR)),
    (incident(Status.ERR, Status.ERR), Status.ERR, False, 60_000, REMIND, (), EventKind.REMINDER,
     (Status.ERR, Status.ERR)),
    (incident(Status.ERR, Status.ERR), Status.OK, False, 1, NotifyPolicy(), (), EventKind.CLOSE, None),
    (incident(Status.ERR, Status.ERR), Status.OK, False, 1, NotifyPolicy(), (SILENCE,), EventKind.CLOSE, None),
    (incident(Status.ERR, Status.ERR), Status.NOTFOUND, False, 1, NotifyPolicy(), (), EventKind.CLOSE, None),
    (incident(Status.ERR, Status.ERR), Status.OK, False, 1, NO_CLOSE, (), None, None),
    (incident(Status.ERR), Status.OK, False, 1, NotifyPolicy(), (), None, None),           # never announced
    (incident(Status.WARN), Status.ERR, False, 1, ERR_ONLY, (), EventKind.OPEN, (Status.ERR, Status.ERR)),
    (incident(Status.ERR, Status.ERR), Status.WARN, False, 1, ERR_ONLY, (), EventKind.UPDATE,
     (Status.WARN, Status.WARN)),                                                          # told: follows it
    (incident(Status.WARN, Status.WARN), Status.WARN, False, 10 * 60_000, ERR_ONLY, (), None,
     (Status.WARN, Status.WARN)),
]


@pytest.mark.parametrize(("previous", "status", "breached", "after_ms", "policy", "silences", "event", "expected"),
                         CASES, ids=[f"row-{i}" for i in range(len(CASES))])
def test_decisions(previous, status, breached, after_ms, policy, silences, event, expected):
    ids = (f"id-{i}" for i in itertools.count())
    now = T0 + after_ms
    decision = decide(result_with(status, breached), previous, now, {"ops": policy}, silences,
                      make_id=lambda: next(ids))
    assert [n.kind for n in decision.notifications] == ([event] if event else [])
    if expected is None:
        assert decision.incident is None
    else:
        assert (decision.incident.status, decision.incident.notified_status) == expected
        assert decision.incident.id == (previous.id if previous else "id-0")
        if event:
            assert decision.incident.notified_ms == now
    for n in decision.notifications:
        assert n.sent_ms == now and n.incident.group == "billing" and n.event_id.startswith("id-")
        assert n.subscriber == "ops"


def test_a_new_incident_starts_now_and_every_event_has_its_own_id():
    policies = {"ops": NotifyPolicy()}
    open_ = decide(result_with(Status.WARN), None, T0, policies)
    update = decide(result_with(Status.ERR), open_.incident, T0 + 5, policies)
    close = decide(result_with(Status.OK), update.incident, T0 + 9, policies)
    events = [*open_.notifications, *update.notifications, *close.notifications]
    assert open_.incident.start_ms == T0 and update.incident.start_ms == T0
    assert len({n.event_id for n in events}) == 3 and len({n.incident.id for n in events}) == 1


EVERY_MINUTE = NotifyPolicy(reminder_interval_ms=60_000)

# Rounds of one group under several subscribers at once: the silences, (ms after T0, group status) per
# round, and per round the (subscriber, event) pairs announced. "quiet" has no reminder interval,
# "minutely" one of 60 s, "paging" only opens at ERR and is reminded every 60 s.
ROUND_CASES = [
    ("no reminder when unset, one after the interval, not before",
     (),
     [(0, Status.WARN), (59_999, Status.WARN), (60_000, Status.WARN), (119_999, Status.WARN),
      (120_000, Status.WARN), (10 * 60_000, Status.WARN)],
     [{("quiet", "open"), ("minutely", "open")}, set(), {("minutely", "reminder")}, set(),
      {("minutely", "reminder")}, {("minutely", "reminder")}]),
    ("a status change is an update and restarts the interval",
     (),
     [(0, Status.WARN), (30_000, Status.ERR), (60_000, Status.ERR), (90_000, Status.ERR)],
     [{("quiet", "open"), ("minutely", "open")},
      {("quiet", "update"), ("minutely", "update"), ("paging", "open")}, set(),
      {("minutely", "reminder"), ("paging", "reminder")}]),
    ("after CLOSE no reminder, and a new problem is a new OPEN",
     (),
     [(0, Status.ERR), (10_000, Status.OK), (70_000, Status.OK), (200_000, Status.OK), (210_000, Status.WARN)],
     [{("quiet", "open"), ("minutely", "open"), ("paging", "open")},
      {("quiet", "close"), ("minutely", "close"), ("paging", "close")}, set(), set(),
      {("quiet", "open"), ("minutely", "open")}]),
    ("below its threshold a subscriber hears nothing, not even a close",
     (),
     [(0, Status.WARN), (120_000, Status.WARN), (130_000, Status.OK)],
     [{("quiet", "open"), ("minutely", "open")}, {("minutely", "reminder")},
      {("quiet", "close"), ("minutely", "close")}]),
    ("a silence holds reminders back; they resume after it",
     (Silence("billing", starts_ms=T0 + 50_000, ends_ms=T0 + 100_000),),
     [(0, Status.ERR), (60_000, Status.ERR), (100_000, Status.ERR)],
     [{("quiet", "open"), ("minutely", "open"), ("paging", "open")}, set(),
      {("minutely", "reminder"), ("paging", "reminder")}]),
]


@pytest.mark.parametrize(("silences", "rounds", "expected"), [c[1:] for c in ROUND_CASES],
                         ids=[c[0] for c in ROUND_CASES])
def test_each_subscriber_has_its_threshold_and_reminder_interval(silences, rounds, expected):
    policies = {"quiet": NotifyPolicy(), "minutely": EVERY_MINUTE,
                "paging": NotifyPolicy(min_status=Status.ERR, reminder_interval_ms=60_000)}
    current, announced = None, []
    for after_ms, status in rounds:
        decision = decide(result_with(status), current, T0 + after_ms, policies, silences)
        current = decision.incident
        announced.append({(n.subscriber, str(n.kind)) for n in decision.notifications})
    assert announced == expected


@pytest.mark.parametrize(("silence", "cluster", "group", "now", "covered"), [
    (Silence("billing", ends_ms=T0 + 10), "prod", "billing", T0, True),
    (Silence("billing", ends_ms=T0 + 10), "prod", "billing", T0 + 10, False),     # end is exclusive
    (Silence("billing", ends_ms=T0 + 10, starts_ms=T0 + 5), "prod", "billing", T0, False),
    (Silence("bill*", ends_ms=T0 + 10), "prod", "billing-eu", T0, True),
    (Silence("bill*", ends_ms=T0 + 10, cluster="staging"), "prod", "billing", T0, False),
    (Silence("billing", ends_ms=T0 + 10), "prod", "billing-eu", T0, False),
])
def test_silences(silence, cluster, group, now, covered):
    assert silence.covers(cluster, group, now) is covered
