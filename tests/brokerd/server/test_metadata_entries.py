"""Metadata responses at scale: a topic's entries are built once per topic state (and response version and
operations) and kept across metadata changes that leave the topic alone, against the uncached build
(`_topic_response`) as oracle over a table of image changes applied as the broker applies them
(`brokerd.metadata.cluster.apply_body`: deltas keep unchanged topics' objects, a snapshot rebuilds all). And the
all-topics answer is encoded once per image, version and operations: byte for byte the uncached answer's frame
over the same table, never the body of an older image, and named-topic requests are built per request."""

import asyncio
from types import SimpleNamespace

import pytest
from kio.index import load_request_schema, load_response_schema
from kio.static.primitive import i32

from brokerd.metadata.cluster import apply_body, parse_image
from brokerd.protocol.messages import frame_response, message_codec
from brokerd.protocol.responses import response_schema
from brokerd.server.handlers import topic_metadata
from brokerd.server.handlers._authorized import CLUSTER_OPERATIONS, NOT_REQUESTED, TOPIC_OPERATIONS
from brokerd.server.handlers.topic_metadata import _topic_response, _TopicEntries
from brokerd.server.response import RawResponse

METADATA = 3
FORMS = [(version, operations) for version in (1, 5, 12) for operations in (i32(-2147483648), TOPIC_OPERATIONS)]
"""(response version, authorized operations): v1 lacks offline replicas, v5 has them, v12 topic ids."""
IDS = {name: f"00000000-0000-4000-8000-{n:012d}" for n, name in enumerate(("a", "b", "c", "d"), start=1)}
RECREATED_ID = "00000000-0000-4000-8000-000000000099"


def context(version: int, image=None) -> SimpleNamespace:
    """What the handler reads of a request's context; `image` is the broker's current image."""
    return SimpleNamespace(response=response_schema(load_response_schema(METADATA, version)), version=version,
                           services=SimpleNamespace(metadata=SimpleNamespace(image=image),
                                                    config=SimpleNamespace(auto_create_topics_enable=False)))


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


class _Unwalkable(dict):
    """Entries that may be looked up and dropped by name, never walked."""

    def __iter__(self):
        raise AssertionError("walked every cached topic")

    keys = values = items = __iter__


def test_following_a_delta_drops_deleted_topics_without_a_pass_over_the_cached_ones():
    entries, before = _TopicEntries(), parse_image(snapshot())
    served(entries, before)
    after = apply_body(before, delta({"type": "topic_removed", "name": "b", "topic_id": IDS["b"]},
                                     partitions("a", partition(1, leader=2))))
    entries._topics = _Unwalkable(entries._topics)
    entry = entries.get(context(12), after, after.topics["a"], TOPIC_OPERATIONS)
    assert entry.partitions[1].leader_id == 2
    assert dict.keys(entries._topics) == {"a", "c"}


def test_an_image_two_deltas_on_still_drops_deleted_topics():
    entries, before = _TopicEntries(), parse_image(snapshot())
    served(entries, before)
    between = apply_body(before, delta({"type": "topic_removed", "name": "b", "topic_id": IDS["b"]}))
    after = apply_body(between, {**delta(partitions("a", partition(1, leader=2))), "since": 2, "metadata_version": 3})
    served(entries, after)  # `between` never followed: its change is not `after`'s
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


ANSWER_FORMS = [(0, False), (1, False), (5, False), (9, False), (9, True), (12, False), (12, True)]
"""(request version, operations asked): v8+ can ask for authorized operations, v9+ is flexible (header tags)."""
EVERY_FORM = [(version, False) for version in range(13)] + [(version, True) for version in range(8, 13)]
CORRELATION_ID = 7


@pytest.fixture
def fresh_caches(monkeypatch):
    """The handler's module-level caches, empty for this test."""
    monkeypatch.setattr(topic_metadata, "_entries", _TopicEntries())
    monkeypatch.setattr(topic_metadata, "_bodies", topic_metadata._AllTopicsBodies())


def all_topics_request(version: int, operations: bool) -> object:
    request = response_schema(load_request_schema(METADATA, version)).MetadataRequest
    return request(topics=() if version == 0 else None, include_topic_authorized_operations=operations,
                   include_cluster_authorized_operations=operations)


def answer(version: int, image, request) -> object:
    return asyncio.run(topic_metadata.handle(request, context(version, image)))


def served_frame(version: int, image, operations: bool) -> tuple[bytes, bytes]:
    """(the frame the dispatcher sends for the handler's all-topics answer, the body it framed)."""
    response = answer(version, image, all_topics_request(version, operations))
    assert isinstance(response, RawResponse)
    body, = response.chunks
    assert response.size == len(body)
    return frame_response(CORRELATION_ID, response.size) + body, body


def oracle_frame(version: int, image, operations: bool) -> bytes:
    """The uncached answer: every entry built from scratch, the response encoded by kio as a whole."""
    schema, live = context(version).response, frozenset(b.node_id for b in image.live_brokers)
    topic_operations = TOPIC_OPERATIONS if operations else NOT_REQUESTED
    response = schema.MetadataResponse(
        brokers=tuple(schema.MetadataResponseBroker(node_id=b.node_id, host=b.host, port=i32(b.port), rack=b.rack)
                      for b in image.live_brokers),
        cluster_id=image.cluster_id, controller_id=image.controller_id,
        topics=tuple(_topic_response(context(version), live, t, topic_operations) for t in image.topics.values()),
        cluster_authorized_operations=CLUSTER_OPERATIONS if operations else NOT_REQUESTED)
    return message_codec(METADATA, version).encode_response(CORRELATION_ID, response)


@pytest.mark.parametrize(("body", "_rebuilt"), [pytest.param(body, rebuilt, id=name) for name, body, rebuilt
                                                in CHANGES])
@pytest.mark.usefixtures("fresh_caches")
def test_all_topics_answers_are_the_uncached_frame_and_never_an_older_images(body, _rebuilt):
    before = parse_image(snapshot())
    after = apply_body(before, body)
    for version, operations in EVERY_FORM:
        for image in (before, after, before):  # each image's body is asked right after the other's was kept
            frame, _ = served_frame(version, image, operations)
            assert frame == oracle_frame(version, image, operations), (version, operations, image is after)


@pytest.mark.usefixtures("fresh_caches")
def test_a_new_images_body_encodes_only_the_changed_topics_entries():
    image = parse_image(snapshot())
    served_frame(12, image, True)
    key = (context(12).response, TOPIC_OPERATIONS)
    kept = {name: forms.encoded[key] for name, forms in topic_metadata._entries._topics.items()}
    moved = apply_body(image, delta(partitions("a", partition(1, leader=2))))
    frame, _ = served_frame(12, moved, True)
    assert frame == oracle_frame(12, moved, True)
    again = {name: forms.encoded[key] for name, forms in topic_metadata._entries._topics.items()}
    assert [name for name in again if again[name] is not kept[name]] == ["a"]  # the same bytes objects for b, c


@pytest.mark.usefixtures("fresh_caches")
def test_a_repeat_all_topics_request_is_not_encoded_again_and_a_new_image_is():
    image = parse_image(snapshot())
    _, first = served_frame(12, image, True)
    _, repeat = served_frame(12, image, True)
    assert repeat is first  # the same bytes object: served from the cache, not re-encoded
    assert served_frame(12, image, False)[1] is not first  # another form: its own body
    moved = apply_body(image, delta(partitions("a", partition(1, leader=2))))
    _, after = served_frame(12, moved, True)
    assert after != first
    assert served_frame(12, moved, True)[1] is after


@pytest.mark.usefixtures("fresh_caches")
def test_bodies_are_kept_for_a_few_forms_of_the_current_image_only():
    image = parse_image(snapshot())
    for version, operations in ANSWER_FORMS:
        served_frame(version, image, operations)
    bodies = topic_metadata._bodies._bodies
    assert topic_metadata.MAX_BODIES == 4
    assert [version for version, _, _ in bodies] == [9, 9, 12, 12]  # the newest 4 forms kept, the oldest dropped
    served_frame(1, apply_body(image, delta(broker(4))), False)
    assert list(bodies) == [(1, NOT_REQUESTED, NOT_REQUESTED)]


@pytest.mark.usefixtures("fresh_caches")
def test_named_topic_requests_are_built_per_request_and_leave_the_bodies_alone():
    image = parse_image(snapshot())
    served_frame(12, image, False)
    kept = dict(topic_metadata._bodies._bodies)
    schema = response_schema(load_request_schema(METADATA, 12))
    request = schema.MetadataRequest(topics=(schema.MetadataRequestTopic(name="a", topic_id=None),
                                             schema.MetadataRequestTopic(name="nope", topic_id=None)),
                                     allow_auto_topic_creation=False)
    response = answer(12, image, request)
    assert not isinstance(response, RawResponse)
    assert [t.name for t in response.topics] == ["a", "nope"]
    assert response.topics[1].error_code != 0
    assert response.topics[0] == _topic_response(context(12), frozenset((1, 2, 3)), image.topics["a"], NOT_REQUESTED)
    assert topic_metadata._bodies._bodies == kept
