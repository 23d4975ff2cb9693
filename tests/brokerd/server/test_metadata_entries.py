"""Metadata responses at scale: a topic's entries are built once per topic state (and response version and
operations) and kept across metadata changes that leave the topic alone, against the uncached build
(`_topic_response`) as oracle over a table of image changes applied as the broker applies them
(`brokerd.metadata.cluster.apply_body`: deltas keep unchanged topics' objects, a snapshot rebuilds all)."""

from types import SimpleNamespace

import pytest
from kio.index import load_response_schema
from kio.static.primitive import i32

from brokerd.metadata.cluster import apply_body, parse_image
from brokerd.protocol.responses import response_schema
from brokerd.server.handlers._authorized import TOPIC_OPERATIONS
from brokerd.server.handlers.topic_metadata import _topic_response, _TopicEntries

METADATA = 3
FORMS = [(version, operations) for version in (1, 5, 12) for operations in (i32(-2147483648), TOPIC_OPERATIONS)]
"""(response version, authorized operations): v1 lacks offline replicas, v5 has them, v12 topic ids."""
IDS = {name: f"00000000-0000-4000-8000-{n:012d}" for n, name in enumerate(("a", "b", "c", "d"), start=1)}
RECREATED_ID = "00000000-0000-4000-8000-000000000099"


def context(version: int) -> SimpleNamespace:
    return SimpleNamespace(response=response_schema(load_response_schema(METADATA, version)))


def broker(broker_id: int, state: str = "running") -> dict:
    return {"type": "broker", "broker_id": broker_id, "listeners": f"PLAINTEXT://127.0.0.1:{9000 + broker_id}",
            "state": state}


def partition(index: int, leader: int = 1, isr: tuple = (1, 2, 3), replicas: tuple = (1, 2, 3)) -> dict:
    return {"partition": index, "replicas": list(replicas), "isr": list(isr), "leader": leader, "leader_epoch": 1}


def partitions(topic: str, *entries: dict, topic_id: str | None = None) -> dict:
    return {"type": "partitions", "topic": topic, "topic_id": topic_id or IDS[topic], "partitions": list(entries)}


def snapshot(version: int = 1) -> dict:
    """Topics a, b, c of 3 partitions on brokers 1-3; c's replicas are on 1 and 2 only."""
    topics = [{"name": name, "topic_id": IDS[name],
               "partitions": [partition(i, replicas=(1, 2) if name == "c" else (1, 2, 3)) for i in range(3)]}
              for name in ("a", "b", "c")]
    return {"cluster_id": "c1", "controller_id": 1, "metadata_version": version,
            "brokers": [{"broker_id": b, "listeners": f"PLAINTEXT://127.0.0.1:{9000 + b}"} for b in (1, 2, 3)],
            "topics": topics}


def delta(*records: dict) -> dict:
    return {"type": "delta", "cluster_id": "c1", "controller_id": 1, "since": 1, "metadata_version": 2,
            "records": list(records)}


# (name, the change's body, the topics whose entries must be rebuilt)
CHANGES = [
    ("leader move", delta(partitions("a", partition(1, leader=2))), {"a"}),
    ("isr shrinks", delta(partitions("b", partition(0, isr=(1, 2)))), {"b"}),
    ("broker 3 fenced: offline replicas", delta(broker(3, "fenced")), {"a", "b"}),
    ("broker 3 removed", delta({"type": "broker_removed", "broker_id": 3}), {"a", "b"}),
    ("broker 4 joins", delta(broker(4)), set()),
    ("topic added", delta({"type": "topic", "name": "d", "topic_id": IDS["d"], "configs": {}},
                          partitions("d", partition(0))), {"d"}),
    ("topic deleted", delta({"type": "topic_removed", "name": "b", "topic_id": IDS["b"]}), set()),
    ("topic re-created", delta({"type": "topic_removed", "name": "b", "topic_id": IDS["b"]},
                               {"type": "topic", "name": "b", "topic_id": RECREATED_ID, "configs": {}},
                               partitions("b", partition(0), topic_id=RECREATED_ID)), {"b"}),
    ("topic configs only", delta({"type": "topic", "name": "c", "topic_id": IDS["c"], "configs": {"x": "1"}}), set()),
    ("snapshot of the same state", snapshot(version=2), set()),
    ("snapshot with a leader move", {**snapshot(version=2), "topics": [
        {**t, "partitions": [partition(0, leader=3)] + t["partitions"][1:]} if t["name"] == "c" else t
        for t in snapshot()["topics"]]}, {"c"}),
]


def served(entries: _TopicEntries, image) -> dict:
    """Every (topic, form) entry the cache serves for `image`, checked against the oracle."""
    live = frozenset(b.node_id for b in image.live_brokers)
    answers = {}
    for name, topic in image.topics.items():
        for version, operations in FORMS:
            entry = entries.get(context(version), image, topic, operations)
            assert entry == _topic_response(context(version), live, topic, operations), (name, version)
            answers[name, version, operations] = entry
    return answers


@pytest.mark.parametrize(("body", "rebuilt"), [pytest.param(body, rebuilt, id=name) for name, body, rebuilt
                                               in CHANGES])
def test_entries_equal_the_oracle_and_only_changed_topics_are_rebuilt(body, rebuilt):
    entries, before = _TopicEntries(), parse_image(snapshot())
    first = served(entries, before)
    after = apply_body(before, body)
    second = served(entries, after)
    kept = {name for (name, _v, _o), entry in second.items() if first.get((name, _v, _o)) is entry}
    assert set(after.topics) - kept == rebuilt


def test_entries_of_deleted_topics_are_dropped():
    entries, before = _TopicEntries(), parse_image(snapshot())
    served(entries, before)
    served(entries, apply_body(before, delta({"type": "topic_removed", "name": "b", "topic_id": IDS["b"]})))
    assert set(entries._topics) == {"a", "c"}


def test_a_one_partition_change_rebuilds_one_topic_of_many():
    entries = _TopicEntries()
    body = snapshot()
    body["topics"] = [{"name": f"t{n}", "topic_id": f"00000000-0000-4000-8000-{n:012d}",
                       "partitions": [partition(i) for i in range(10)]} for n in range(200)]
    before = parse_image(body)
    v12 = context(12)
    first = {name: entries.get(v12, before, t, TOPIC_OPERATIONS) for name, t in before.topics.items()}
    after = apply_body(before, delta(partitions("t7", partition(4, leader=3), topic_id=before.topics["t7"].topic_id)))
    second = {name: entries.get(v12, after, t, TOPIC_OPERATIONS) for name, t in after.topics.items()}
    assert [name for name in second if second[name] is not first[name]] == ["t7"]
    assert second["t7"].partitions[4].leader_id == 3
