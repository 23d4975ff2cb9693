"""The metadata log against its oracle, the full image: for every kind of change, the delta a broker gets
(applied by brokerd's own applier) turns the image it held into the image now, and it carries only what
changed. Plus retention: a broker behind the retained log, or from another database, gets a snapshot."""

import json

import pytest
from django.utils import timezone

from brokerd.metadata.cluster import apply_body, parse_image
from controlplane.cluster import changelog, metadata, services
from controlplane.cluster.broker_configs import alter_broker_configs
from controlplane.cluster.models import Broker, BrokerState, MetadataChange
from controlplane.controller.election import elect_leaders
from controlplane.controller.reassignment import alter_reassignments
from controlplane.topics import services as topics
from controlplane.topics.models import Partition


def register(broker_id: int) -> int:
    return services.register_broker(broker_id, f"PLAINTEXT://127.0.0.1:{9090 + broker_id}", f"r{broker_id}",
                                    [])["registration_epoch"]


def fence(broker_id: int) -> None:
    """What the controller does to a dead broker (its leaderships move, it leaves the ISRs)."""
    from django.db import transaction

    from controlplane.controller import election

    with transaction.atomic():
        state = metadata.locked_state()
        Broker.objects.filter(broker_id=broker_id).update(state=BrokerState.FENCED)
        election.on_broker_gone(broker_id, election.live_broker_ids())
        metadata.bump(state)


def delta_since(version: int) -> dict:
    return json.loads(changelog.catch_up(version))


def image_now():
    return parse_image(metadata.image())


@pytest.fixture
def cluster(db):
    for broker_id in (1, 2, 3):
        register(broker_id)
    topics.create_topic("orders", 3, 3, configs={"retention.ms": "60000"})


def propose_isr(name: str, partition: int, isr_of) -> None:
    """The leader proposes the ISR `isr_of(partition row)` (AlterPartition)."""
    current = Partition.objects.get(topic__name=name, partition=partition)
    epoch = Broker.objects.get(broker_id=current.leader).registration_epoch
    services.alter_partition(current.leader, epoch, name, partition, current.leader_epoch, current.partition_epoch,
                             isr_of(current))


def shrink_isr(name: str, partition: int) -> None:
    """The leader drops its last follower from the ISR."""
    propose_isr(name, partition, lambda p: [b for b in p.isr if b != p.leader][:-1] + [p.leader])


# (what changes, the record types its delta carries)
CHANGES = [
    (lambda: register(4), {"broker"}),
    (lambda: fence(2), {"broker", "partition_rows"}),
    (lambda: register(2), {"broker", "partition_rows"}),  # re-registration while running: fenced first
    (lambda: topics.create_topic("payments", 2, 2), {"topic", "partition_rows"}),
    (lambda: topics.alter_configs("orders", {"retention.ms": "1000"}), {"topic"}),
    (lambda: topics.create_partitions("orders", 5), {"partition_rows"}),
    (lambda: shrink_isr("orders", 0), {"partition_rows"}),
    (lambda: topics.delete_topic("orders"), {"topic_removed"}),
    # re-created: the removal is merged away, the new topic id tells the broker to drop the old partitions
    (lambda: (topics.delete_topic("orders"), topics.create_topic("orders", 1, 1)), {"topic", "partition_rows"}),
    # issue 13: dynamic broker configs (no trigger: noted by the service) and reassignments
    (lambda: alter_broker_configs([1, -1], {"leader.replication.throttled.rate": "1048576"}), {"broker_configs"}),
    (lambda: alter_reassignments([("orders", 0, [2, 3])]), {"partition_rows"}),
]


@pytest.mark.parametrize(("change", "kinds"), CHANGES)
def test_a_delta_turns_the_old_image_into_the_new_one(cluster, change, kinds):
    before = image_now()
    change()
    delta = delta_since(before.metadata_version)
    assert delta["type"] == "delta" and delta["since"] == before.metadata_version
    assert {r["type"] for r in delta["records"]} == kinds
    assert apply_body(before, delta) == image_now()


def test_a_delta_carries_only_what_changed(cluster):
    topics.create_topic("wide", 200, 3)
    before = image_now()
    shrink_isr("wide", 7)
    records = delta_since(before.metadata_version)["records"]
    assert [(r["type"], r["topic"], [row[0] for row in r["rows"]]) for r in records] == \
        [("partition_rows", "wide", [7])]


def test_the_changes_of_many_versions_arrive_merged(cluster):
    before = image_now()
    changes = [change for change, kinds in CHANGES if kinds != {"topic_removed"}]  # "orders" is re-created last
    for change in changes:
        change()
    delta = delta_since(before.metadata_version)
    assert delta["metadata_version"] == metadata.current_version() >= before.metadata_version + len(changes)
    keys = [(r["type"] in ("topic", "topic_removed"), r.get("name"), r.get("broker_id")) for r in delta["records"]
            if r["type"] != "partition_rows"]
    keys += [(r["topic"], row[0]) for r in delta["records"] if r["type"] == "partition_rows" for row in r["rows"]]
    assert len(keys) == len(set(keys))  # one record per broker, topic and partition: the newest
    assert apply_body(before, delta) == image_now()


def test_an_empty_delta_when_nothing_changed(cluster):
    version = metadata.current_version()
    assert delta_since(version) == {"type": "delta", "cluster_id": image_now().cluster_id,
                                    "controller_id": 1, "since": version, "metadata_version": version,
                                    "records": []}


def test_heartbeats_record_nothing(cluster):
    version = metadata.current_version()
    services.heartbeat(1, Broker.objects.get(broker_id=1).registration_epoch, now=timezone.now())
    assert metadata.current_version() == version
    assert delta_since(version)["records"] == []


def test_a_broker_behind_the_retained_log_gets_a_snapshot(cluster):
    old = image_now()
    topics.create_topic("a", 1, 1)
    topics.create_topic("b", 1, 1)
    assert MetadataChange.objects.filter(version__gt=old.metadata_version).count() == 2
    dropped = changelog.prune(metadata.current_version(), retained_records=1)
    assert dropped > 0 and MetadataChange.objects.filter(version__lte=old.metadata_version + 1).count() == 0
    body = delta_since(old.metadata_version)
    assert body["type"] == "snapshot"
    assert apply_body(old, body) == image_now()
    assert delta_since(metadata.current_version() - 1)["type"] == "delta"  # the newest change is kept


@pytest.mark.parametrize("since", [None, -1, 10_000])
def test_no_version_or_another_databases_version_gets_a_snapshot(cluster, since):
    body = json.loads(changelog.catch_up(since))
    assert body["type"] == "snapshot" and parse_image(body) == image_now()


def test_retention_keeps_the_newest_records(cluster):
    for name in "abcdef":
        topics.create_topic(name, 1, 1)  # 2 records each
    newest = metadata.current_version()
    changelog.prune(newest, retained_records=5)
    assert list(MetadataChange.objects.values_list("version", flat=True)) == [newest - 1, newest]


def test_leader_elections_are_recorded(cluster):
    fence(1)
    register(1)
    for partition in range(3):
        propose_isr("orders", partition, lambda p: p.replicas)  # broker 1 caught up
    before = image_now()
    elect_leaders("preferred", None)
    delta = delta_since(before.metadata_version)
    assert {r["type"] for r in delta["records"]} == {"partition_rows"}
    assert apply_body(before, delta) == image_now()
    assert all(p.leader_id == p.replicas[0] for p in image_now().topics["orders"].partitions)


def test_new_partitions_changed_again_arrive_in_index_order(cluster):
    before = image_now()
    topics.create_partitions("orders", 6)
    shrink_isr("orders", 4)  # its last record is newer than those of partitions 3 and 5
    delta = delta_since(before.metadata_version)
    assert [row[0] for r in delta["records"] for row in r["rows"]] == [3, 4, 5]
    assert apply_body(before, delta) == image_now()


def as_recorded_before_partition_rows(change: MetadataChange) -> None:
    """Rewrite a stored change's `partition_rows` records as the `partitions` records of the format before."""
    records = json.loads(change.records)
    for record in records:
        if record["type"] == "partition_rows":
            record["type"] = "partitions"
            record["partitions"] = [dict(zip(changelog.PARTITION_FIELDS, row, strict=True))
                                    for row in record.pop("rows")]
    change.records = json.dumps(records)
    change.save(update_fields=["records"])


@pytest.mark.parametrize("changes", [1, 3])
def test_changes_recorded_before_partition_rows_still_apply(cluster, changes):
    """A retained change stored as `partitions` records: served as it is (one change) or merged with newer
    ones (several) into `partition_rows`; either way the broker ends at the image now."""
    before = image_now()
    fence(2)
    as_recorded_before_partition_rows(MetadataChange.objects.get(version=metadata.current_version()))
    for index in range(changes - 1):
        shrink_isr("orders", index)
    delta = delta_since(before.metadata_version)
    assert {r["type"] for r in delta["records"]} == {"broker", "partitions" if changes == 1 else "partition_rows"}
    assert apply_body(before, delta) == image_now()
