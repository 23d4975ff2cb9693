"""Strom's thresholds (monitoring.thresholds), table-driven."""

import pytest

from monitoring.config import Threshold
from monitoring.model import Status
from monitoring.thresholds import alert_status, mark_breaches
from tests.monitoring.factories import group, partition


@pytest.mark.parametrize(("thresholds", "lag", "seconds", "committed", "breached"), [
    ([], 10**9, 10**6, 100, False),
    ([Threshold(max_lag=100)], 100, None, 100, False),            # not above
    ([Threshold(max_lag=100)], 101, None, 100, True),
    ([Threshold(max_lag_seconds=60)], 0, 60.5, 100, True),
    ([Threshold(max_lag_seconds=60)], 0, None, 100, False),        # unknown seconds exceed nothing
    ([Threshold(max_lag=1)], 0, None, None, False),                # no commit: no lag to exceed
    ([Threshold(group="billing-*", max_lag=1)], 5, None, 100, False),
    ([Threshold(group="bill*", topic="orders", max_lag=1)], 5, None, 100, True),
    ([Threshold(topic="audit", max_lag=1), Threshold(max_lag_seconds=1)], 5, 2.0, 100, True),
])
def test_breaches(thresholds, lag, seconds, committed, breached):
    [marked] = mark_breaches(thresholds, "billing", [partition(lag=lag, seconds=seconds, committed=committed)])
    assert marked.threshold_breached is breached


@pytest.mark.parametrize(("status", "breached", "alert"), [
    (Status.OK, False, Status.OK), (Status.OK, True, Status.ERR), (Status.WARN, True, Status.ERR),
    (Status.STOP, False, Status.ERR), (Status.WARN, False, Status.WARN),
])
def test_alert_status(status, breached, alert):
    assert alert_status(group(partition(status, breached=breached))) is alert
