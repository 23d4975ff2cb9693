"""State blobs and incident stores (monitoring.persistence)."""

import pytest

from monitoring.model import Status
from monitoring.notifier.incidents import EVERYONE, Announced, Incident
from monitoring.persistence import FileStore, MemoryStore, decode_state, encode_state, incident_from_dict
from monitoring.storage import OffsetStorage

INCIDENT = Incident("abc", "prod", "billing", 1_000, Status.ERR,
                    {"ops": Announced(Status.WARN, 900), "*": Announced(Status.ERR, 950)})


def test_state_round_trip():
    storage = OffsetStorage(intervals=3)
    storage.add_heads("t", [10])
    storage.add_commit("g", "t", 0, 4, 1, 1_000, 1_000)
    snapshot, positions = decode_state(encode_state(storage.to_snapshot(), {0: 12, 42: 7}))
    assert snapshot == storage.to_snapshot() and positions == {0: 12, 42: 7}


@pytest.mark.parametrize("blob", [b"not zlib", __import__("zlib").compress(b'{"format": 99}')])
def test_unreadable_state(blob):
    with pytest.raises(ValueError):
        decode_state(blob)


@pytest.mark.parametrize("make", [lambda path: MemoryStore(), FileStore])
def test_incident_store(tmp_path, make):
    store = make(tmp_path)
    store.update_incidents([INCIDENT, Incident("def", "prod", "audit", 2_000, Status.WARN)], [])
    assert sorted(i.id for i in store.open_incidents()) == ["abc", "def"]
    updated = Incident("def", "prod", "audit", 2_000, Status.ERR)
    store.update_incidents([updated], [(INCIDENT, 5_000)])
    assert store.open_incidents() == [updated]
    store.save_state(b"blob")
    assert store.load_state() == b"blob"


def test_file_store_survives_a_restart(tmp_path):
    FileStore(tmp_path).update_incidents([INCIDENT], [])
    FileStore(tmp_path).save_state(b"\x00state")
    reopened = FileStore(tmp_path)
    assert reopened.open_incidents() == [INCIDENT] and reopened.load_state() == b"\x00state"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["incidents.json", "state.bin"]  # no temporary left


def test_an_incident_saved_before_per_subscriber_announcements_reads_as_told_to_everyone():
    old = {"id": "abc", "cluster": "prod", "group": "billing", "start_ms": 1_000, "status": "ERR",
           "notified_status": "WARN", "notified_ms": 900}
    assert incident_from_dict(old).notified == {EVERYONE: Announced(Status.WARN, 900)}
