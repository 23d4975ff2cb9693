"""The ORM implementation of monitoring's MonitorStore: the state blob and incidents survive a new store
(a restarted run_lag_monitor), closed incidents stay as history, and calls from other threads leave no
connection open."""

import threading

import pytest
from django.db import connections

from controlplane.alerts.models import LagThreshold, Silence
from controlplane.lag.models import LagIncident
from controlplane.lag.store import OrmMonitorStore, silences, thresholds
from monitoring.config import Threshold
from monitoring.model import Status
from monitoring.notifier.incidents import Announced, Incident


@pytest.mark.django_db
def test_state_and_incidents_survive_a_new_store():
    first = OrmMonitorStore("prod")
    assert first.load_state() is None
    first.save_state(b"\x00blob")
    first.save_state(b"\x01blob")
    opened = Incident("i1", "prod", "billing", 1000, Status.ERR, {"7": Announced(Status.ERR, 1000)})
    first.update_incidents([Incident("i1", "prod", "billing", 1000, Status.WARN),
                            Incident("i2", "prod", "etl", 2000, Status.WARN)], [])
    first.update_incidents([opened], [(Incident("i2", "prod", "etl", 2000, Status.WARN), 5000)])
    again = OrmMonitorStore("prod")
    assert again.load_state() == b"\x01blob"
    assert again.open_incidents() == [opened]
    assert OrmMonitorStore("other").open_incidents() == []
    assert LagIncident.objects.get(incident_id="i2").closed_ms == 5000


@pytest.mark.django_db(transaction=True)
def test_thresholds_and_silences_from_another_thread_close_their_connection():
    LagThreshold.objects.create(group="orders-*", max_lag_seconds=30)
    from django.utils import timezone
    now = timezone.now()
    Silence.objects.create(group="batch-*", starts_at=now, ends_at=now + timezone.timedelta(hours=1))
    Silence.objects.create(group="old", starts_at=now - timezone.timedelta(hours=2),
                           ends_at=now - timezone.timedelta(hours=1))
    seen = {}

    def round_():
        seen["thresholds"] = thresholds((Threshold("billing", max_lag=5),))
        seen["silences"] = [s.group for s in silences()]
        seen["open"] = connections["default"].connection is not None

    worker = threading.Thread(target=round_)
    worker.start()
    worker.join()
    assert seen["thresholds"] == [Threshold("billing", max_lag=5), Threshold("orders-*", "*", None, 30.0)]
    assert seen["silences"] == ["batch-*"] and seen["open"] is False
