"""brokerd's metadata-log applier: every record type, deltas that do not apply (another version, a gap in a
topic's partitions, an unknown record), and the store falling back to a snapshot. The control plane's side,
against the full image as oracle, is tests/controlplane/cluster/test_changelog.py."""

import asyncio
import dataclasses
import gc
import json
import threading

import pytest

from brokerd.metadata import cluster
from brokerd.metadata.cluster import ClusterMetadataStore, apply_body, image_off_loop, parse_image
from brokerd.metadata.delta import DeltaGapError
from brokerd.metadata.errors import ControlPlaneError

from .test_cluster import FakePlane, image, settings, until

TOPIC_ID = "4f0e2a6c-7d1b-4c4e-9a51-0d1f6b3e2a10"
OTHER_ID = "00000000-0000-4000-8000-000000000001"
THIRD_ID = "00000000-0000-4000-8000-000000000002"


def delta(since: int, version: int, *records: dict, cluster_id: str = "c1") -> dict:
    return {"type": "delta", "cluster_id": cluster_id, "controller_id": 1, "since": since,
            "metadata_version": version, "records": list(records)}


def partition(index: int, leader: int | None = 2, topic: str = "t", topic_id: str = TOPIC_ID,
              objects: bool = False) -> dict:
    """A partition_rows record of one partition (`objects`: the `partitions` record of changes recorded before)."""
    if objects:
        return {"type": "partitions", "topic": topic, "topic_id": topic_id, "partitions": [
            {"partition": index, "replicas": [1, 2, 3], "isr": [2, 3], "leader": leader, "leader_epoch": 5,
             "partition_epoch": 8}]}
    return {"type": "partition_rows", "topic": topic, "topic_id": topic_id,
            "rows": [[index, [1, 2, 3], [2, 3], leader, 5, 8, [], []]]}


def broker(broker_id: int, state: str = "running") -> dict:
    return {"type": "broker", "broker_id": broker_id, "listeners": f"PLAINTEXT://127.0.0.1:{9000 + broker_id}",
            "rack": "r1", "state": state, "registration_epoch": 2}


BASE = parse_image(image(1))
CASES = [
    ([broker(4)], lambda img: img.broker(4).port == 9004 and img.broker(4).rack == "r1"),
    ([broker(1, "fenced")], lambda img: img.broker(1).fenced and img.controller_id == 2),
    ([{"type": "broker_removed", "broker_id": 3}], lambda img: img.broker(3) is None),
    ([{"type": "topic", "name": "t", "topic_id": TOPIC_ID, "configs": {"retention.ms": "5"}}],
     lambda img: img.topics["t"].configs == {"retention.ms": "5"} and len(img.topics["t"].partitions) == 1),
    ([{"type": "topic", "name": "u", "topic_id": OTHER_ID, "configs": {}}, partition(0, topic="u", topic_id=OTHER_ID)],
     lambda img: img.partition("u", 0).leader_id == 2 and img.topic_by_id(img.topics["u"].uuid).name == "u"),
    ([{"type": "topic_removed", "name": "t", "topic_id": TOPIC_ID}], lambda img: "t" not in img.topics),
    ([{"type": "topic_removed", "name": "t", "topic_id": OTHER_ID}], lambda img: "t" in img.topics),
    ([partition(0)], lambda img: (img.partition("t", 0).leader_id, img.partition("t", 0).isr) == (2, (2, 3))),
    ([partition(0, objects=True)], lambda img: img.partition("t", 0) == apply_body(BASE, delta(1, 2, partition(0)))
     .partition("t", 0) and img.partition("t", 0).partition_epoch == 8),
    ([partition(1, objects=True), partition(2)], lambda img: len(img.topics["t"].partitions) == 3),
    ([partition(1), partition(2, leader=None)], lambda img: img.partition("t", 2).leader_id == -1),
    # re-created under the same name: the old partitions go, the new ones follow
    ([{"type": "topic", "name": "t", "topic_id": OTHER_ID, "configs": {}}, partition(0, topic_id=OTHER_ID)],
     lambda img: img.topics["t"].topic_id == OTHER_ID and len(img.topics["t"].partitions) == 1),
    # a partition record of a topic since re-created or removed is skipped
    ([partition(0, leader=3, topic_id=OTHER_ID)], lambda img: img.partition("t", 0).leader_id == 1),
    ([partition(0, topic="gone")], lambda img: "gone" not in img.topics),
]


@pytest.mark.parametrize(("records", "check"), CASES)
def test_each_record_type_is_applied(records, check):
    applied = apply_body(BASE, delta(1, 2, *records))
    assert applied.metadata_version == 2 and check(applied)


@pytest.mark.parametrize("records", [records for records, _ in CASES])
def test_an_image_made_by_a_delta_knows_which_topics_it_changed(records):
    """Against the oracle: the topics whose entry is not the base's object, and the index by id of the image built
    whole (`dataclasses.replace` builds it from scratch)."""
    base = apply_body(BASE, delta(1, 2, {"type": "topic", "name": "v", "topic_id": THIRD_ID, "configs": {}}))
    applied = apply_body(base, delta(2, 3, *records))
    names = base.topics.keys() | applied.topics.keys()
    assert applied.changed_topics_since(base) == {n for n in names if applied.topics.get(n) is not base.topics.get(n)}
    whole = dataclasses.replace(applied)
    assert whole.changed_topics_since(base) is None and applied.changed_topics_since(BASE) is None
    for topic in (*base.topics.values(), *applied.topics.values()):
        assert applied.topic_by_id(topic.uuid) is whole.topic_by_id(topic.uuid)


def test_an_image_made_by_a_delta_does_not_keep_its_base_alive():
    base = apply_body(BASE, delta(1, 2, partition(0, leader=3)))
    applied = apply_body(base, delta(2, 3, partition(0, leader=2)))
    gc.collect()
    assert applied.changed_topics_since(base) == {"t"}
    del base
    gc.collect()
    assert applied._derivation.base() is None


def test_an_empty_delta_only_moves_the_version():
    applied = apply_body(BASE, delta(1, 3))
    assert applied.metadata_version == 3 and applied.topics == BASE.topics and applied.brokers == BASE.brokers


@pytest.mark.parametrize(("body", "reason"), [
    (delta(2, 3, partition(0)), "from version 2"),  # missing version 2: a newer delta than we can take
    (delta(0, 0), "to 0"),  # older than the image
    (delta(1, 2, partition(2)), "after 1 partitions"),  # a gap in the partition indexes
    (delta(1, 2, {"type": "feature_level"}), "unknown metadata record"),
    (delta(1, 2, {"type": "partition_rows", "topic": "t", "topic_id": TOPIC_ID, "rows": [[0, 1, [1], 1, 5, 8]]}),
     "malformed partition row"),
    (delta(1, 2, cluster_id="other"), "cluster"),
])
def test_a_delta_that_does_not_apply_is_refused(body, reason):
    with pytest.raises(DeltaGapError, match=reason):
        apply_body(BASE, body)


def test_a_delta_applies_to_an_image_newer_than_its_start():
    newer = apply_body(BASE, delta(1, 2, partition(0, leader=3)))
    assert apply_body(newer, delta(1, 4, partition(0, leader=2))).partition("t", 0).leader_id == 2


def test_a_snapshot_replaces_the_image():
    assert apply_body(BASE, {"type": "snapshot", **image(9, leader=3)}) == parse_image(image(9, leader=3))


class DeltaPlane(FakePlane):
    """The fake control plane answering `since=N` with `self.deltas[N]` when it has one."""

    def __init__(self) -> None:
        super().__init__()
        self.deltas: dict[int, dict] = {}

    def answer_for(self, query: dict) -> dict:
        since = query.get("since")
        return self.deltas.get(int(since), self.image) if since is not None else self.image


@pytest.fixture
def plane():
    fake = DeltaPlane()
    fake.thread.start()
    yield fake
    fake.publish(image(10_000))
    fake.server.shutdown()


def test_the_store_applies_deltas_and_falls_back_to_a_snapshot(plane):
    async def scenario():
        store = ClusterMetadataStore(settings(plane.url))
        await store.start()
        try:
            assert store.image.metadata_version == 1
            plane.deltas[1] = delta(1, 2, partition(0, leader=3))
            plane.publish({**image(2, leader=3), "topics": []})  # the snapshot differs: the delta must be used
            await until(lambda: store.image.metadata_version == 2)
            assert store.image.partition("t", 0).leader_id == 3
            plane.deltas[2] = delta(2, 3, partition(4))  # does not apply: the store loads the snapshot
            plane.publish(image(3, leader=2))
            await until(lambda: store.image.metadata_version == 3)
            assert store.image == parse_image(image(3, leader=2))
            snapshots = [path for _, path, _ in plane.requests if "/metadata/changes" in path and "since=" not in path]
            assert len(snapshots) == 2  # the first load and the fallback
        finally:
            await store.stop()

    asyncio.run(scenario())


@pytest.mark.parametrize(("answer", "expected"), [
    (delta(1, 2, partition(0, leader=3)), apply_body(BASE, delta(1, 2, partition(0, leader=3)))),
    ({"type": "snapshot", **image(9, leader=3)}, parse_image(image(9, leader=3))),
    (delta(1, 1), None),  # nothing new
])
def test_an_answer_decoded_off_the_loop_gives_the_image_decoded_in_place(answer, expected):
    assert image_off_loop(BASE, json.dumps(answer, indent=1).encode()) == expected
    assert gc.isenabled()


@pytest.mark.parametrize("raw", [b'{"type": "delta", "since": 1', b"[]", b"<html>Bad gateway</html>"])
def test_a_malformed_answer_decoded_off_the_loop_is_an_error_and_collection_resumes(raw):
    with pytest.raises(ControlPlaneError):
        image_off_loop(BASE, raw)
    assert gc.isenabled()


@pytest.mark.parametrize("raw", [b'{"type": "delta", "since": 1', b"[]", b"<html>Bad gateway</html>"])
def test_a_small_malformed_answer_is_an_error_not_an_empty_image(monkeypatch, raw):
    """Decoded in place (under `DECODE_OFF_LOOP_MIN_BYTES`): an answer that is not a JSON object never replaces
    the image (an empty one would drop every topic's replicas)."""
    async def scenario():
        store = ClusterMetadataStore(settings("http://127.0.0.1:9"))
        store._image = BASE
        with pytest.raises(ControlPlaneError):
            await store._image_after(raw)
        assert store.image is BASE

    asyncio.run(scenario())


def test_a_large_answer_is_decoded_and_applied_on_a_worker_thread(plane, monkeypatch):
    monkeypatch.setattr(cluster, "DECODE_OFF_LOOP_MIN_BYTES", 0)
    on_loop_thread = []
    applied = cluster.apply_body

    def recording(image, body):
        on_loop_thread.append(threading.current_thread() is threading.main_thread())
        return applied(image, body)

    monkeypatch.setattr(cluster, "apply_body", recording)

    async def scenario():
        store = ClusterMetadataStore(settings(plane.url))
        await store.start()
        try:
            plane.deltas[1] = delta(1, 2, partition(0, leader=3))
            plane.publish({**image(2, leader=3), "topics": []})  # the snapshot differs: the delta must be used
            await until(lambda: store.image.metadata_version == 2)
            assert store.image.partition("t", 0).leader_id == 3
        finally:
            await store.stop()

    asyncio.run(scenario())
    assert on_loop_thread and not any(on_loop_thread)  # the first snapshot and the delta, both off the loop
