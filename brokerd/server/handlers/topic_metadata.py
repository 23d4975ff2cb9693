"""Metadata v0-v12: brokers, controller, cluster id and topic leadership; auto-creates topics when both the
request and `auto.create.topics.enable` allow it (with `num.partitions`, `default.replication.factor`).

Per-version meaning: v0 asks for every topic with an empty list (v1+: with null; empty means none); v0-v3
cannot refuse auto-creation (v4 adds `allow_auto_topic_creation`); v10+ answers topic ids, v12 may ask by
topic id alone (null name; UNKNOWN_TOPIC_ID if no topic has it); v8+ answers authorized operations when
asked. Fields a version lacks (rack v1, cluster id v2, offline replicas v5, leader epoch v7) are dropped
by the response schema.

An all-topics answer depends only on the image, the version and the operations asked, so it is encoded once per
such key and image (`_AllTopicsBodies`) and framed per request, assembled from each topic entry's encoding, kept
with the entry (`_TopicEntries`); a named-topic request is built per request.
"""

import contextlib
import datetime
import uuid
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32

from brokerd.metadata.errors import MetadataError, UnknownTopicError
from brokerd.metadata.image import NO_TOPIC_ID, ClusterImage, NewTopic, TopicMetadata
from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.messages import encode_element, message_codec
from brokerd.server.context import RequestContext
from brokerd.server.handlers._authorized import CLUSTER_OPERATIONS, TOPIC_OPERATIONS, authorized
from brokerd.server.handlers._errors import to_error_code
from brokerd.server.response import RawResponse
from kafkaspec.topic_names import is_internal

_NO_THROTTLE = datetime.timedelta(0)
MAX_BODIES = 4
"""All-topics bodies kept for the current image (response version × operations asked): a few forms, each up to
~46 bytes per partition (4.6 MB at 100,000 partitions)."""


def _topic_response(context: RequestContext, live: frozenset[int], topic: TopicMetadata, operations: i32) -> object:
    """The Metadata entry of `topic`, built from scratch (the oracle of `_TopicEntries`): `live` are the ids of
    the brokers clients are told about; a replica elsewhere is offline."""
    schema = context.response
    return schema.MetadataResponseTopic(
        error_code=ErrorCode.none, name=TopicName(topic.name), topic_id=topic.uuid, is_internal=is_internal(topic.name),
        topic_authorized_operations=operations,
        partitions=tuple(
            schema.MetadataResponsePartition(
                error_code=ErrorCode.none, partition_index=i32(p.partition), leader_id=BrokerId(p.leader_id),
                leader_epoch=i32(p.leader_epoch), replica_nodes=tuple(BrokerId(n) for n in p.replicas),
                isr_nodes=tuple(BrokerId(n) for n in p.isr),
                offline_replicas=tuple(BrokerId(n) for n in p.replicas if n not in live),
            )
            for p in topic.partitions
        ),
    )


@dataclass(slots=True)
class _TopicForms:
    """One topic's built entries, by (response schema, operations), and what they were built from."""

    topic: TopicMetadata
    replicas: frozenset[int]
    """Every broker holding one of its replicas."""
    offline: frozenset[int]
    """`replicas` not live when the entries were built: their offline_replicas."""
    by_form: dict[tuple[object, int], object] = field(default_factory=dict)
    encoded: dict[tuple[object, int], bytes] = field(default_factory=dict)
    """The kio encoding of an entry of `by_form`, once an all-topics body needed it."""

    def serves(self, topic: TopicMetadata) -> bool:
        """Whether the entries answer for `topic`: the one they were built from, or the same id and equal
        partitions (configs are not in an entry). Keeps `topic` so that later requests take the identity check."""
        held = self.topic
        if held is topic:
            return True
        if held.topic_id != topic.topic_id or held.partitions != topic.partitions:
            return False
        self.topic = topic
        return True


class _TopicEntries:
    """The topic entries of Metadata responses, built once per topic state rather than per request: a client's
    all-topics Metadata at 100,000 partitions would otherwise build 100,000 partition entries each time, and
    rebuilding all of them after every metadata change would hold the loop for seconds.

    An entry depends on the topic (`TopicMetadata`), the response version (`context.response`), the authorized
    operations and, through offline_replicas, which of the topic's replicas are on live brokers. So, per topic
    name, the entries are kept across images while:

    * the image's topic is the one they were built from (a delta keeps unchanged topics' objects) or has the
      same id and equal partitions (a snapshot or a standalone change rebuilds every object; comparing is
      O(partitions) but far cheaper than building);
    * the topic's offline replicas are unchanged (checked when the live brokers change).

    Cost per image change: O(changed topics) when the image was made by a delta from the one followed before
    (`ClusterImage.changed_topics_since`), else O(cached topics) dictionary checks (topics deleted are dropped
    then, so memory is bounded by the current image's topics times the forms asked), plus a build of each changed
    topic on first use. `_topic_response` is the oracle: every entry served equals what it builds from the current
    image."""

    def __init__(self) -> None:
        self._image: ClusterImage | None = None
        self._live: frozenset[int] = frozenset()
        self._topics: dict[str, _TopicForms] = {}

    def get(self, context: RequestContext, image: ClusterImage, topic: TopicMetadata, operations: i32) -> object:
        forms = self._forms(image, topic)
        key = (context.response, operations)
        entry = forms.by_form.get(key)
        if entry is None:
            entry = forms.by_form[key] = _topic_response(context, self._live, topic, operations)
        return entry

    def encoded(self, context: RequestContext, image: ClusterImage, topic: TopicMetadata, operations: i32) -> bytes:
        """The entry `get` answers, as kio encodes it in an array (kept as long as the entry)."""
        forms = self._forms(image, topic)
        key = (context.response, operations)
        encoded = forms.encoded.get(key)
        if encoded is None:
            encoded = forms.encoded[key] = encode_element(self.get(context, image, topic, operations))
        return encoded

    def _forms(self, image: ClusterImage, topic: TopicMetadata) -> _TopicForms:
        if image is not self._image:
            self._follow(image)
        forms = self._topics.get(topic.name)
        if forms is None or not forms.serves(topic):
            replicas = frozenset(n for p in topic.partitions for n in p.replicas)
            forms = self._topics[topic.name] = _TopicForms(topic, replicas, replicas - self._live)
        return forms

    def _follow(self, image: ClusterImage) -> None:
        """Drop what `image` makes stale: topics it no longer holds, and, if the live brokers changed, topics
        whose offline replicas changed. Holding `image` keeps its identity from being reused."""
        live = frozenset(b.node_id for b in image.live_brokers)
        topics = image.topics
        changed = image.changed_topics_since(self._image) if self._image is not None else None
        if live == self._live and changed is not None:  # a delta from the image followed before
            stale = [name for name in changed if name not in topics and name in self._topics]
        elif live == self._live:
            stale = [name for name in self._topics if name not in topics]
        else:
            stale = [name for name, forms in self._topics.items()
                     if name not in topics or forms.replicas - live != forms.offline]
        for name in stale:
            del self._topics[name]
        self._image, self._live = image, live


_entries = _TopicEntries()


def _error_topic(context: RequestContext, name: str | None, topic_id: uuid.UUID, error: ErrorCode) -> object:
    return context.response.MetadataResponseTopic(error_code=error, name=name, topic_id=topic_id, partitions=())


async def _requested_topic(context: RequestContext, requested, auto_create: bool, operations: i32) -> object:
    metadata = context.services.metadata
    name = requested.name
    if name is None:  # v12: by topic id
        topic_id = getattr(requested, "topic_id", NO_TOPIC_ID)
        topic = metadata.image.topic_by_id(topic_id)
        if topic is None:
            return _error_topic(context, None, topic_id, ErrorCode.unknown_topic_id)
        return _entries.get(context, metadata.image, topic, operations)
    topic = metadata.image.topics.get(name)
    if topic is None and auto_create:
        try:
            topic = await metadata.create_topic(NewTopic(name=name, num_partitions=-1, replication_factor=-1,
                                                         configs={}),
                                                origin=context.origin)
            await context.services.replicas.created()  # this broker's replicas of it serve from the answer on
        except Exception as exc:  # noqa: BLE001 - the error goes on the wire per topic
            if getattr(exc, "kafka_error", None) != "TOPIC_ALREADY_EXISTS":
                return _error_topic(context, name, NO_TOPIC_ID, to_error_code(exc))
            # Created meanwhile (cluster: our image lags the control plane): read it again; if it is
            # still not here, a retriable LEADER_NOT_AVAILABLE, as Kafka answers a new topic.
            with contextlib.suppress(MetadataError):
                await metadata.refresh()
            topic = metadata.image.topics.get(name)
            if topic is None:
                return _error_topic(context, name, NO_TOPIC_ID, ErrorCode.leader_not_available)
    if topic is None:
        return _error_topic(context, name, NO_TOPIC_ID, to_error_code(UnknownTopicError()))
    return _entries.get(context, metadata.image, topic, operations)


def _response(context: RequestContext, image: ClusterImage, topics: tuple, cluster_operations: i32) -> object:
    schema = context.response
    return schema.MetadataResponse(
        throttle_time=_NO_THROTTLE,
        brokers=tuple(schema.MetadataResponseBroker(node_id=BrokerId(b.node_id), host=b.host, port=i32(b.port),
                                                    rack=b.rack)
                      for b in image.live_brokers),
        cluster_id=image.cluster_id,
        controller_id=BrokerId(image.controller_id),
        topics=topics,
        cluster_authorized_operations=cluster_operations,
    )


class _AllTopicsBodies:
    """The encoded bodies of all-topics answers, kept for one image: a client polling all-topics Metadata would
    otherwise have kio encode every partition entry per request (~0.2 s at 10,000 partitions, ~2 s at 100,000, on
    the broker's loop). A body is assembled from the topic entries' encodings (`_TopicEntries.encoded`, kept across
    images with the entries; `MessageCodec.encode_response_body_with`), so the first request on a new image encodes
    only the changed topics' entries.

    Such an answer is a function of the image (brokers, controller, cluster id, topics), the response version and
    the operations asked (`_authorized`: without an authorizer they do not depend on the principal; an
    authorizer would add the principal to the key), with no throttle. So a body is keyed by (version, topic
    operations, cluster operations) and served while the broker's image is the object it was encoded from
    (images are immutable; every change makes a new one); the first request on a new image drops the bodies
    of the old one. At most `MAX_BODIES` are kept, the oldest dropped first. Invariant: a body served equals
    the encoding of the uncached answer for the current image (the tests' oracle)."""

    def __init__(self) -> None:
        self._image: ClusterImage | None = None
        self._bodies: dict[tuple[int, int, int], bytes] = {}

    def get(self, context: RequestContext, image: ClusterImage, operations: i32, cluster_operations: i32) -> bytes:
        if image is not self._image:
            self._bodies.clear()
            self._image = image  # held: its identity is not reused while it is compared against
        key = (context.version, operations, cluster_operations)
        body = self._bodies.get(key)
        if body is None:
            topics = [_entries.encoded(context, image, t, operations) for t in image.topics.values()]
            response = _response(context, image, (), cluster_operations)
            body = message_codec(ApiKey.METADATA, context.version).encode_response_body_with(response, "topics", topics)
            if len(self._bodies) >= MAX_BODIES:
                del self._bodies[next(iter(self._bodies))]
            self._bodies[key] = body
        return body


_bodies = _AllTopicsBodies()


async def handle(request, context: RequestContext) -> object:
    services = context.services
    operations = authorized(getattr(request, "include_topic_authorized_operations", False), TOPIC_OPERATIONS)
    cluster_operations = authorized(getattr(request, "include_cluster_authorized_operations", False),
                                    CLUSTER_OPERATIONS)
    if request.topics is None or (context.version == 0 and not request.topics):  # all topics
        body = _bodies.get(context, services.metadata.image, operations, cluster_operations)
        return RawResponse([body], len(body))
    auto_create = getattr(request, "allow_auto_topic_creation", True) and services.config.auto_create_topics_enable
    topics = tuple([await _requested_topic(context, requested, auto_create, operations)
                    for requested in request.topics])
    return _response(context, services.metadata.image, topics, cluster_operations)
