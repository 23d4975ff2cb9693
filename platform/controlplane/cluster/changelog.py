"""The metadata log: what each committed change changed, and what a broker at some version needs to catch up
(KRaft's metadata log and snapshots, over the tables of the metadata store).

**Recording.** Database triggers (`TRIGGERS`, installed after every `migrate`) note each insert, update and
delete of a broker (its registration fields, not heartbeats), topic or partition row in `ChangedRow`, inside
the transaction that makes it. `record(version)`, called by `metadata.bump()` under the controller-state lock,
turns the noted rows into records, stores them as the `MetadataChange` of that version and forgets the notes.
So every change is captured whoever made it, and a change's records are exactly its rows' new state.

**Records** (JSON objects, each the new state of one thing):

- `{"type": "broker", "broker_id", "listeners", "rack", "state", "registration_epoch"}`
- `{"type": "broker_removed", "broker_id"}`
- `{"type": "topic", "name", "topic_id", "configs"}`: a new topic (an id the broker does not hold under that
  name: the old topic of that name is gone, and its partitions follow as partition records) or new configs
- `{"type": "broker_configs", "broker_configs": {"<id>" | "default": {k: v}}}`: every dynamic broker config
  override (the whole map, which is small), after a change noted by `note_broker_configs`
- `{"type": "topic_removed", "name", "topic_id"}`
- `{"type": "partition_rows", "topic", "topic_id", "rows": [[partition, replicas, isr, leader, leader_epoch,
  partition_epoch, adding_replicas, removing_replicas], …]}`: changed partitions of one topic, each row the
  values of the image's partition entry in `PARTITION_FIELDS` order — grouped by topic and without a key name
  per partition, so a failover changing every partition's ISR costs about a quarter of the image's size (100,000
  partitions: 3.9 MB, where one object per partition made it 15.25 MB)
- `{"type": "partitions", "topic", "topic_id", "partitions": [{…PARTITION_FIELDS}, …]}`: the same as objects,
  what changes recorded before `partition_rows` hold; still served (merged into `partition_rows`) and applied

Within a change: brokers, removed topics, topics, then partitions by topic name and index. Applying the records
of versions N+1..V in order to the image of version N gives the image of version V; so does applying them to
any image read after version N (an image read while changes commit is at least as new as its version says),
which is why a snapshot may be served together with the changes after its version.

**Serving** (`catch_up`): a broker that holds version N gets the records of N+1..current, merged (a key's last
record wins: the broker only needs the newest state of each broker, topic and partition); a broker with no
version, one older than the oldest retained change, or from another database gets the full image (a
snapshot). Bodies are built once per (N, version) and process, then served to every broker asking the same.

**Retention** (`prune`): the newest changes holding at most `STROM_METADATA_LOG_RETENTION_RECORDS` records
(at least the newest change) are kept; older ones are compacted into the snapshot, which is the tables
themselves.
"""

import json
import threading
from collections import OrderedDict
from collections.abc import Iterator

from django.conf import settings
from django.db import connection
from django.db.models import Min, QuerySet, TextField
from django.db.models.functions import Cast

from controlplane.topics.models import Partition, Topic

from .models import CLUSTER_DEFAULT, Broker, BrokerConfig, BrokerState, ChangedRow, ControllerState, MetadataChange

__all__ = ("PARTITION_FIELDS", "TRIGGERS", "broker_configs_image", "broker_record", "catch_up", "install_triggers",
           "merged", "note_broker_configs", "prune", "record", "snapshot_body", "topic_partitions")

PARTITION_FIELDS = ("partition", "replicas", "isr", "leader", "leader_epoch", "partition_epoch", "adding_replicas",
                    "removing_replicas")
"""A partition's state as brokers see it, in the image and in partition records."""
PRUNE_EVERY_VERSIONS = 64
"""`record` applies retention every this many versions."""
CACHED_BODIES = 16
"""Bodies kept per process: each broker asks for the same few (since, version) pairs."""

#
# Recording
#

_SQLITE_TRIGGERS = (
    """CREATE TRIGGER IF NOT EXISTS strom_partition_inserted AFTER INSERT ON topics_partition BEGIN
       INSERT INTO cluster_changedrow (kind, row_id, name, topic_id) VALUES ('partition', NEW.id, '', ''); END""",
    """CREATE TRIGGER IF NOT EXISTS strom_partition_updated AFTER UPDATE ON topics_partition BEGIN
       INSERT INTO cluster_changedrow (kind, row_id, name, topic_id) VALUES ('partition', NEW.id, '', ''); END""",
    """CREATE TRIGGER IF NOT EXISTS strom_topic_inserted AFTER INSERT ON topics_topic BEGIN
       INSERT INTO cluster_changedrow (kind, row_id, name, topic_id) VALUES ('topic', NEW.id, '', ''); END""",
    """CREATE TRIGGER IF NOT EXISTS strom_topic_updated AFTER UPDATE ON topics_topic BEGIN
       INSERT INTO cluster_changedrow (kind, row_id, name, topic_id) VALUES ('topic', NEW.id, '', ''); END""",
    """CREATE TRIGGER IF NOT EXISTS strom_topic_deleted AFTER DELETE ON topics_topic BEGIN
       INSERT INTO cluster_changedrow (kind, row_id, name, topic_id)
       VALUES ('topic_removed', OLD.id, OLD.name, OLD.topic_id); END""",
    """CREATE TRIGGER IF NOT EXISTS strom_broker_inserted AFTER INSERT ON cluster_broker BEGIN
       INSERT INTO cluster_changedrow (kind, row_id, name, topic_id) VALUES ('broker', NEW.id, '', ''); END""",
    """CREATE TRIGGER IF NOT EXISTS strom_broker_updated
       AFTER UPDATE OF listeners, rack, state, registration_epoch ON cluster_broker BEGIN
       INSERT INTO cluster_changedrow (kind, row_id, name, topic_id) VALUES ('broker', NEW.id, '', ''); END""",
    """CREATE TRIGGER IF NOT EXISTS strom_broker_deleted AFTER DELETE ON cluster_broker BEGIN
       INSERT INTO cluster_changedrow (kind, row_id, name, topic_id)
       VALUES ('broker_removed', OLD.id, OLD.broker_id, ''); END""",
)

_POSTGRES_TRIGGERS = (
    """CREATE OR REPLACE FUNCTION strom_partition_changed() RETURNS trigger AS $$ BEGIN
       INSERT INTO cluster_changedrow (kind, row_id, name, topic_id) VALUES ('partition', NEW.id, '', '');
       RETURN NULL; END $$ LANGUAGE plpgsql""",
    """CREATE OR REPLACE FUNCTION strom_topic_changed() RETURNS trigger AS $$ BEGIN
       IF TG_OP = 'DELETE' THEN
         INSERT INTO cluster_changedrow (kind, row_id, name, topic_id)
         VALUES ('topic_removed', OLD.id, OLD.name, OLD.topic_id::text);
       ELSE
         INSERT INTO cluster_changedrow (kind, row_id, name, topic_id) VALUES ('topic', NEW.id, '', '');
       END IF;
       RETURN NULL; END $$ LANGUAGE plpgsql""",
    """CREATE OR REPLACE FUNCTION strom_broker_changed() RETURNS trigger AS $$ BEGIN
       IF TG_OP = 'DELETE' THEN
         INSERT INTO cluster_changedrow (kind, row_id, name, topic_id)
         VALUES ('broker_removed', OLD.id, OLD.broker_id::text, '');
       ELSE
         INSERT INTO cluster_changedrow (kind, row_id, name, topic_id) VALUES ('broker', NEW.id, '', '');
       END IF;
       RETURN NULL; END $$ LANGUAGE plpgsql""",
    "DROP TRIGGER IF EXISTS strom_partition_changed ON topics_partition",
    """CREATE TRIGGER strom_partition_changed AFTER INSERT OR UPDATE ON topics_partition
       FOR EACH ROW EXECUTE FUNCTION strom_partition_changed()""",
    "DROP TRIGGER IF EXISTS strom_topic_changed ON topics_topic",
    """CREATE TRIGGER strom_topic_changed AFTER INSERT OR UPDATE OR DELETE ON topics_topic
       FOR EACH ROW EXECUTE FUNCTION strom_topic_changed()""",
    "DROP TRIGGER IF EXISTS strom_broker_changed ON cluster_broker",
    """CREATE TRIGGER strom_broker_changed
       AFTER INSERT OR DELETE OR UPDATE OF listeners, rack, state, registration_epoch ON cluster_broker
       FOR EACH ROW EXECUTE FUNCTION strom_broker_changed()""",
)

TRIGGERS = {"sqlite": _SQLITE_TRIGGERS, "postgresql": _POSTGRES_TRIGGERS}
"""The triggers filling `ChangedRow`, by database vendor. Installed after every migrate, because SQLite drops
a table's triggers when a migration rebuilds the table."""


def install_triggers(using_connection=connection) -> None:
    """Create (or re-create) the triggers; idempotent."""
    with using_connection.cursor() as cursor:
        for statement in TRIGGERS[using_connection.vendor]:
            cursor.execute(statement)


def broker_record(broker: dict) -> dict:
    """A broker's entry in the image (and, with a type, its record) from a `values()` row."""
    return {"broker_id": broker["broker_id"], "listeners": broker["listeners"], "rack": broker["rack"] or None,
            "state": broker["state"], "registration_epoch": broker["registration_epoch"]}


BROKER_COLUMNS = ("broker_id", "listeners", "rack", "state", "registration_epoch")


def _changed_records() -> tuple[list[str], int]:
    """The records, as JSON texts, of the rows the triggers noted in this transaction (their current
    state), and their count (a partition entry counts as one)."""
    noted = ChangedRow.objects.values("row_id")
    records: list[dict] = []
    for broker in Broker.objects.filter(pk__in=noted.filter(kind="broker")).order_by("broker_id").values(
            *BROKER_COLUMNS):
        records.append({"type": "broker", **broker_record(broker)})
    live_brokers = set(Broker.objects.values_list("broker_id", flat=True))
    removed_brokers = {int(n) for n in ChangedRow.objects.filter(kind="broker_removed").values_list("name", flat=True)}
    records += [{"type": "broker_removed", "broker_id": b} for b in sorted(removed_brokers - live_brokers)]
    if ChangedRow.objects.filter(kind="broker_configs").exists():
        records.append({"type": "broker_configs", "broker_configs": broker_configs_image()})
    removed = {}
    for name, topic_id in ChangedRow.objects.filter(kind="topic_removed").values_list("name", "topic_id"):
        removed[name] = _dashed(topic_id)
    records += [{"type": "topic_removed", "name": n, "topic_id": t} for n, t in sorted(removed.items())]
    for name, topic_id, configs in Topic.objects.filter(pk__in=noted.filter(kind="topic")).order_by("name") \
            .values_list("name", "topic_id", "configs"):
        records.append({"type": "topic", "name": name, "topic_id": str(topic_id), "configs": dict(configs)})
    texts = [json.dumps(r, separators=(",", ":")) for r in records]
    count = len(texts)
    changed = Partition.objects.filter(pk__in=noted.filter(kind="partition"))
    for name, topic_id, _, rows in topic_partitions(changed, _PARTITION_ROW):
        texts.append(f'{{"type":"partition_rows","topic":{json.dumps(name)},"topic_id":"{topic_id}",'
                     f'"rows":[{",".join(rows)}]}}')
        count += len(rows)
    return texts, count


def topic_partitions(partitions: QuerySet[Partition], entry: str | None = None
                     ) -> Iterator[tuple[str, str, str, list[str]]]:
    """(topic name, topic id, configs as JSON text, partition entries as JSON texts) per topic of `partitions`,
    by topic name and partition index. Each entry holds `PARTITION_FIELDS`, as the image's object or, with
    `entry=_PARTITION_ROW`, as a record's row; the JSON columns are copied as the database returns them, never
    decoded: at 100,000 partitions this is a small part of what decoding them into model instances and
    encoding them again cost."""
    entry = entry or _PARTITION_ENTRY
    rows = partitions.order_by("topic__name", "partition").values_list(
        "topic__name", _text("topic__topic_id"), _text("topic__configs"), "partition", _text("replicas"),
        _text("isr"), "leader", "leader_epoch", "partition_epoch", _text("adding_replicas"),
        _text("removing_replicas"))
    name = None
    topic_id = configs = ""
    entries: list[str] = []
    for row in rows.iterator(chunk_size=10_000):
        if row[0] != name:
            if name is not None:
                yield name, topic_id, configs, entries
            name, topic_id, configs, entries = row[0], _dashed(row[1]), row[2], []
        entries.append(entry % row[3:])
    if name is not None:
        yield name, topic_id, configs, entries


_PARTITION_ENTRY = ('{"partition":%d,"replicas":%s,"isr":%s,"leader":%d,"leader_epoch":%d,"partition_epoch":%d,'
                    '"adding_replicas":%s,"removing_replicas":%s}')
"""A partition's entry (`PARTITION_FIELDS`) from its row: the JSON columns as text."""
_PARTITION_ROW = "[%d,%s,%s,%d,%d,%d,%s,%s]"
"""A partition's row in a `partition_rows` record: `PARTITION_FIELDS`' values in order."""


def _text(column: str) -> Cast:
    """A column as the database's text (a JSON column's JSON, a UUID's hex or dashed form)."""
    return Cast(column, TextField())


def broker_configs_image() -> dict[str, dict[str, str]]:
    """Dynamic broker config overrides keyed by broker id as a string, "default" for the cluster default."""
    return {"default" if c.broker_id == CLUSTER_DEFAULT else str(c.broker_id): dict(c.configs)
            for c in BrokerConfig.objects.all() if c.configs}


def note_broker_configs() -> None:
    """Note, in the caller's transaction, that dynamic broker configs changed (they have no trigger)."""
    ChangedRow.objects.create(kind="broker_configs", row_id=0, name="", topic_id="")


def _dashed(hex_id: str) -> str:
    """SQLite stores a UUIDField as 32 hex digits (PostgreSQL's text form is dashed already); records carry
    the canonical dashed form."""
    if "-" in hex_id:
        return hex_id
    return f"{hex_id[:8]}-{hex_id[8:12]}-{hex_id[12:16]}-{hex_id[16:20]}-{hex_id[20:]}"


def record(version: int) -> int:
    """Store this transaction's changes as the metadata log entry of `version`; returns the record count (a
    partition entry counts as one record).
    Caller: `metadata.bump()`, under the controller-state lock."""
    records, count = _changed_records()
    ChangedRow.objects.all().delete()
    MetadataChange.objects.create(version=version, records=f"[{','.join(records)}]", record_count=count)
    if version % PRUNE_EVERY_VERSIONS == 0:
        prune(version)
    return count


def prune(version: int, retained_records: int | None = None) -> int:
    """Drop the changes older than the newest ones holding `retained_records` records (setting
    `STROM_METADATA_LOG_RETENTION_RECORDS`; an empty change counts as one); the change of `version` is always
    kept. Returns how many changes were dropped."""
    if retained_records is None:
        retained_records = settings.STROM_METADATA_LOG_RETENTION_RECORDS
    total = 0
    for change_version, count in MetadataChange.objects.order_by("-version").values_list(
            "version", "record_count").iterator(chunk_size=1000):
        total += max(count, 1)
        if total > retained_records and change_version < version:
            return MetadataChange.objects.filter(version__lte=change_version).delete()[0]
    return 0


#
# Serving
#

_RANK = {"broker": 0, "broker_removed": 0, "broker_configs": 0, "topic_removed": 1, "topic": 2}
"""Records go out in this order of kinds (then the partitions), so a topic precedes its partitions."""
_ROW_DEFAULTS = {"adding_replicas": [], "removing_replicas": []}
"""What a `partitions` record's entry lacks when it was stored before those fields existed."""


def _keyed(change: list[dict]):
    """(key, entry) per broker, topic and partition of a change; a partition's entry is (topic, topic id,
    its row), from a `partition_rows` record or a `partitions` one."""
    for entry in change:
        kind = entry["type"]
        if kind in ("broker", "broker_removed"):
            yield ("broker", entry["broker_id"]), entry
        elif kind == "broker_configs":
            yield ("broker_configs",), entry
        elif kind in ("topic", "topic_removed"):
            yield ("topic", entry["name"]), entry
        elif kind == "partition_rows":
            for row in entry["rows"]:
                yield ("partition", entry["topic"], row[0]), (entry["topic"], entry["topic_id"], row)
        else:
            for fields in entry["partitions"]:
                row = [fields[f] if f in fields else _ROW_DEFAULTS[f] for f in PARTITION_FIELDS]
                yield ("partition", entry["topic"], row[0]), (entry["topic"], entry["topic_id"], row)


def merged(changes: list[list[dict]]) -> list[dict]:
    """The records of consecutive changes as one change: each key's last record, ordered by kind (`_RANK`)
    and then as those last records came; partitions by topic name and index (so new partitions come in
    index order), grouped again by topic as `partition_rows` records (`partitions` ones converted). Correct
    because records are whole new states, and an applier takes a partition entry only for the topic id it
    names (one of a topic that was since removed or re-created is skipped)."""
    last: dict[tuple, tuple[int, object]] = {}
    for index, (key, entry) in enumerate(item for change in changes for item in _keyed(change)):
        last[key] = (index, entry)
    records: list[dict] = []
    partitions: list[dict] = []
    for key, (_, entry) in sorted(last.items(), key=lambda item: item[1][0]):
        if key[0] != "partition":
            records.append(entry)
    for key in sorted(key for key in last if key[0] == "partition"):
        topic, topic_id, row = last[key][1]
        if not partitions or (partitions[-1]["topic"], partitions[-1]["topic_id"]) != (topic, topic_id):
            partitions.append({"type": "partition_rows", "topic": topic, "topic_id": topic_id, "rows": []})
        partitions[-1]["rows"].append(row)
    records.sort(key=lambda entry: _RANK[entry["type"]])
    return records + partitions


def _header(state: dict) -> dict:
    running = Broker.objects.filter(state=BrokerState.RUNNING).aggregate(lowest=Min("broker_id"))["lowest"]
    # Every broker forwards admin requests to the control plane (as KRaft brokers do), so the "controller"
    # brokers name in Metadata responses is any running broker: the lowest id, so that all agree.
    return {"cluster_id": state["cluster_id"], "controller_id": -1 if running is None else running}


def _current() -> dict:
    """The version and what tells two databases (or a flushed test database) apart: the cluster id and the
    time of the last bump."""
    state = ControllerState.objects.filter(singleton=True).values("cluster_id", "metadata_version",
                                                                  "updated_at").first()
    if state is None:
        current = ControllerState.current()
        state = {"cluster_id": current.cluster_id, "metadata_version": current.metadata_version,
                 "updated_at": current.updated_at}
    return state


def snapshot_body() -> bytes:
    """A snapshot: `{"type": "snapshot", …the full image}`."""
    from .metadata import image_json  # the image is metadata's; it imports this module to record changes

    return f'{{"type":"snapshot",{image_json()[1:]}'.encode()


def _delta_body(state: dict, since: int) -> bytes | None:
    """`{"type": "delta", "since": N, "metadata_version": V, …, "records": […]}`; None unless every change
    of N+1..V is retained."""
    version = state["metadata_version"]
    rows = list(MetadataChange.objects.filter(version__gt=since, version__lte=version).order_by("version")
                .values_list("version", "records"))
    if [v for v, _ in rows] != list(range(since + 1, version + 1)):
        return None
    if len(rows) == 1:
        records = rows[0][1]
    else:
        records = json.dumps(merged([json.loads(text) for _, text in rows]), separators=(",", ":"))
    header = json.dumps({"type": "delta", **_header(state), "since": since, "metadata_version": version},
                        separators=(",", ":"))
    return f'{header[:-1]},"records":{records}}}'.encode()


class _Bodies:
    """The last `CACHED_BODIES` bodies by (since, version, cluster id, time of the bump), built once however
    many brokers ask."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bodies: OrderedDict[tuple, bytes] = OrderedDict()

    def get(self, key: tuple, build) -> bytes:
        with self._lock:
            body = self._bodies.get(key)
            if body is None:
                body = build()
                self._bodies[key] = body
                while len(self._bodies) > CACHED_BODIES:
                    self._bodies.popitem(last=False)
            else:
                self._bodies.move_to_end(key)
            return body


_bodies = _Bodies()


def catch_up(since: int | None) -> bytes:
    """The body that brings a broker holding version `since` (None: nothing) to the current version: a delta
    (empty when nothing changed), or a snapshot when the changes since then are not all retained (or `since`
    is ahead of this database: another cluster's version)."""
    state = _current()
    version = state["metadata_version"]
    identity = (version, state["cluster_id"], state["updated_at"])
    if since is not None and 0 <= since <= version:
        body = _bodies.get((since, *identity), lambda: _delta_body(state, since) or b"")
        if body:
            return body
    return _bodies.get((-1, *identity), snapshot_body)
