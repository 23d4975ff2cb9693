"""Fetch v0-v17: stored batches served verbatim, as storage file regions the connection `sendfile`s.

Long poll: if fewer than `min_bytes` are available (and no partition errored), wait for an append to
one of the fetched partitions or `max_wait`, then read again. `max_bytes` (v3+) bounds the whole response
and `partition_max_bytes` each partition, except that the first non-empty partition always returns at
least one whole batch (KIP-74). Read uncommitted = read committed: there are no transactions.

Fetch sessions (KIP-227, v7+; bookkeeping in `brokerd.replication.session_cache`): a replica fetch with
session_epoch 0 opens one, and its incremental fetches name only the partitions whose position changed; every
other partition of the session is fetched at its cached offset. Only the session's changed partitions are
looked at (appends, high-watermark moves and role changes mark them; a sweep marks each within a few seconds), and
of those the quiet ones (nothing to answer, the follower caught up) are neither read nor answered, so an idle
follower costs next to nothing per fetch; its long poll waits for a change to one of its partitions (not for a
high-watermark move alone: a follower reads to the log end, so that news waits for its next answer, as in Kafka). An
incremental answer names only partitions with news. A consumer asking for a session is answered sessionless
(session id 0), which every client accepts.

Consumers read up to the high watermark. A replica Fetch (`replica_id` >= 0, or `replica_state` from
v15, from a follower's `ReplicaFetcher`) reads up to the log end offset, and its fetch offsets are the
follower's log end offsets: the replica manager records them first (which may move the high watermark
and complete acks=all produces, or expand the ISR). Both check `current_leader_epoch` (v9+;
FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH) and need this broker to lead the partition
(NOT_LEADER_OR_FOLLOWER, with the current leader from v12).

Per-version meaning:

* v0-v3 read legacy message sets: the stored batches are down-converted (`brokerd.records.legacy`;
  magic 0 for v0-v1, magic 1 for v2-v3), the only case where fetched records pass through Python.
* v12+ may send `last_fetched_epoch`: if the fetcher's log diverges from this leader's (its epoch ends
  here before the fetch offset, or is unknown here), the answer is `diverging_epoch` (where that epoch
  ends here) and no records, as Kafka's `Partition.fetchRecords`; the fetcher truncates to it.
* v13+ names topics by id (UNKNOWN_TOPIC_ID if none has it).

The response is laid out by `brokerd.protocol.fetch_response`; `preferred_read_replica` (v11+) is always
-1: this broker serves the read.

A fetch of many partitions (a full one: a follower opening its session, or a consumer's) gives the event loop
back every `PARTITIONS_PER_SLICE` partitions: read at once, one follower's 3,000 empty partitions held every
other request of the broker (a Metadata, the control plane's long poll) up for tens of ms each round. Each
partition is answered from its own state at its turn, as Kafka reads partition by partition.
"""

import asyncio
import uuid

from kio.schema.errors import ErrorCode

from brokerd.metadata.image import NO_TOPIC_ID
from brokerd.protocol import fetch_response as wire
from brokerd.protocol.fetch_request import FINAL_EPOCH, INITIAL_EPOCH, next_epoch
from brokerd.records import legacy
from brokerd.replication.session_cache import CachedPartition, FetchSession
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code
from brokerd.server.response import RawResponse
from brokerd.storage.log import read_bytes
from brokerd.types import TopicPartition

NO_LIMIT = 2**31 - 1
LEGACY_MAX_VERSION = 3
"""The last version that reads legacy message sets (Fetch v4 brought record batches v2)."""
_LEADER_MOVED = (ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch)
PARTITIONS_PER_SLICE = 256
"""Partitions read between two turns of the event loop (see the module docstring)."""


def _replica_id(request) -> int:
    state = getattr(request, "replica_state", None)
    return state.replica_id if state is not None else getattr(request, "replica_id", -1)


def _resolve_topics(request, context: RequestContext) -> list[tuple[str | None, uuid.UUID, list]]:
    """(name or None if unknown, topic id, requested partitions) per requested topic."""
    image = context.services.metadata.image
    resolved = []
    for topic in request.topics:
        topic_id = getattr(topic, "topic_id", NO_TOPIC_ID)
        if context.version >= wire.TOPIC_ID_VERSION:
            known = image.topic_by_id(topic_id)
            resolved.append((None if known is None else known.name, topic_id, list(topic.partitions)))
        else:
            resolved.append((topic.topic, topic_id, list(topic.partitions)))
    return resolved


async def _read_all(request, context: RequestContext, topics: list[tuple[str | None, uuid.UUID, list]],
                    first_pass: bool) -> tuple[list[wire.TopicAnswer], int, bool]:
    """One pass over every requested partition: (answers, bytes found, any error); the event loop runs
    other work after every `PARTITIONS_PER_SLICE` partitions."""
    replicas = context.services.replicas
    replica_id = _replica_id(request)
    from_follower = replica_id >= 0
    legacy_magic = legacy.magic_for_fetch(context.version) if context.version <= LEGACY_MAX_VERSION else None
    budget = getattr(request, "max_bytes", NO_LIMIT)
    total = 0
    errored = False
    answers = []
    visited = 0
    for name, topic_id, requested_partitions in topics:
        answer = wire.TopicAnswer(name or "", topic_id)
        for requested in requested_partitions:
            visited += 1
            if visited % PARTITIONS_PER_SLICE == 0:
                await asyncio.sleep(0)
            if name is None:
                errored = True
                answer.partitions.append(wire.PartitionAnswer(requested.partition, ErrorCode.unknown_topic_id))
                continue
            try:
                partition = replicas.leader_partition(name, requested.partition)
                partition.check_leader_epoch(getattr(requested, "current_leader_epoch", -1))
                if from_follower and first_pass:
                    replicas.record_follower_fetch(partition, replica_id, requested.fetch_offset)
                read = wire.PartitionAnswer(requested.partition, ErrorCode.none, partition.high_watermark,
                                            partition.high_watermark, partition.log_start_offset)
                last_fetched_epoch = getattr(requested, "last_fetched_epoch", -1)
                if last_fetched_epoch >= 0:
                    epoch, end_offset = partition.end_offset_for_epoch(last_fetched_epoch)
                    if epoch < last_fetched_epoch or end_offset < requested.fetch_offset:
                        read.diverging_epoch = (epoch, end_offset)
                        answer.partitions.append(read)
                        continue
                limit = min(requested.partition_max_bytes, budget)
                throttled = from_follower and replicas.leader_quota.is_throttled(
                    (name, requested.partition), in_sync=replica_id in partition.isr)
                if throttled:
                    limit = min(limit, replicas.leader_quota.available())
                if limit > 0 or (total == 0 and not throttled):
                    region = partition.read(requested.fetch_offset, max(limit, 1), up_to_log_end=from_follower)
                    if region is not None:
                        total += region.length
                        budget -= region.length
                        if throttled:
                            replicas.leader_quota.record(region.length)
                        read.records = (region if legacy_magic is None else
                                        legacy.from_batches(read_bytes(region), legacy_magic, requested.fetch_offset))
            except Exception as exc:  # noqa: BLE001 - the error goes on the wire for this partition
                errored = True
                read = wire.PartitionAnswer(requested.partition, to_error_code(exc))
                if read.error_code in _LEADER_MOVED:
                    read.current_leader = _current_leader(context, name, requested.partition)
            answer.partitions.append(read)
        answers.append(answer)
    return answers, total, errored


def _current_leader(context: RequestContext, topic: str, index: int) -> tuple[int, int]:
    assignment = context.services.metadata.image.partition(topic, index)
    return (-1, -1) if assignment is None else (assignment.leader_id, assignment.leader_epoch)


def _node_endpoints(context: RequestContext, answers: list[wire.TopicAnswer]) -> list[wire.NodeEndpoint]:
    """The brokers named as current leaders (v16+, KIP-951), so a client can go there at once."""
    image = context.services.metadata.image
    leaders = {p.current_leader[0] for a in answers for p in a.partitions if p.current_leader is not None}
    return [wire.NodeEndpoint(b.node_id, b.host, b.port, b.rack) for b in image.live_brokers if b.node_id in leaders]


async def handle(request, context: RequestContext) -> RawResponse:
    replica_id = _replica_id(request)
    from_follower = replica_id >= 0
    context.counted_as.append("FetchFollower" if from_follower else "FetchConsumer")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + request.max_wait.total_seconds()
    requested = _resolve_topics(request, context)
    session, incremental, error = _session(request, context, replica_id, requested)
    if error != ErrorCode.none:
        chunks, size = wire.encode_fetch_response(context.version, [], error_code=error)
        return RawResponse(chunks, size)  # type: ignore[arg-type]
    session_id = 0 if session is None else session.id
    keys = [(name, p.partition) for name, _, partitions in requested if name is not None for p in partitions]
    replicas = context.services.replicas
    if session is not None:
        replicas.record_session_fetch(session)
    first_pass = True
    while True:
        if incremental:
            session.watch()  # type: ignore[union-attr]
            topics = await _with_session_news(context, session, requested, replica_id,  # type: ignore[arg-type]
                                              first_pass)
        else:
            topics = requested
        answers, total, errored = await _read_all(request, context, topics, first_pass)
        first_pass = False
        remaining = deadline - loop.time()
        if total >= request.min_bytes or errored or remaining <= 0 or not (keys or incremental):
            if session is not None:
                answers = _remember_sent(session, answers, incremental)
            replicas.topic_metrics.record_fetch(((a.name, a.partitions) for a in answers), from_follower)
            chunks, size = wire.encode_fetch_response(context.version, answers, session_id=session_id,
                                                      node_endpoints=_node_endpoints(context, answers))
            return RawResponse(chunks, size)  # type: ignore[arg-type]
        if incremental:
            await session.wait_for_change(remaining)  # type: ignore[union-attr]
        else:
            await replicas.wait_for_appends(keys, remaining)


# --- fetch sessions (KIP-227; the bookkeeping is brokerd.replication.session_cache) ----------------------------

def _session(request, context: RequestContext, replica_id: int, requested: list[tuple[str | None, uuid.UUID, list]]
             ) -> tuple[FetchSession | None, bool, ErrorCode]:
    """(the session this fetch is in or opens (None: sessionless), whether it is incremental, the top-level
    error). Only replica fetches open sessions; a consumer asking for one is answered sessionless (id 0)."""
    if context.version < wire.SESSION_VERSION:
        return None, False, ErrorCode.none
    cache = context.services.replicas.fetch_sessions
    session_id, epoch = request.session_id, request.session_epoch
    named = [(name, partitions) for name, _, partitions in requested if name is not None]
    if epoch in (FINAL_EPOCH, INITIAL_EPOCH):
        if session_id:
            cache.remove(session_id)
        session = cache.create(replica_id) if epoch == INITIAL_EPOCH and replica_id >= 0 else None
        if session is not None:
            session.update(named, ())
        return session, False, ErrorCode.none
    session = cache.get(session_id)
    if session is None or session.replica_id != replica_id:
        return None, False, ErrorCode.fetch_session_id_not_found
    if session.epoch != epoch:
        return None, False, ErrorCode.invalid_fetch_session_epoch
    session.epoch = next_epoch(epoch)
    session.update(named, _forgotten(request, context))
    return session, True, ErrorCode.none


def _forgotten(request, context: RequestContext) -> list[TopicPartition]:
    image = context.services.metadata.image
    keys = []
    for topic in request.forgotten_topics_data:
        if context.version >= wire.TOPIC_ID_VERSION:
            known = image.topic_by_id(topic.topic_id)
            if known is None:
                continue
            name = known.name
        else:
            name = topic.topic
        keys.extend(TopicPartition(name, int(index)) for index in topic.partitions)
    return keys


async def _with_session_news(context: RequestContext, session: FetchSession, requested: list, replica_id: int,
                             first_pass: bool) -> list[tuple[str | None, uuid.UUID, list]]:
    """The requested partitions, and every other changed partition of the session unless it is quiet (see
    `brokerd.replication.session_cache`): a quiet one leaves `changed` and, on the first pass, counts as fetched
    at its cached offset, without being read or answered. Many may be changed (a session's first incremental fetch,
    a sweep's slice): the event loop runs other work every `PARTITIONS_PER_SLICE` of them."""
    replicas = context.services.replicas
    asked = {(name, p.partition) for name, _, partitions in requested if name is not None for p in partitions}
    news: dict[str, list[CachedPartition]] = {}
    for visited, key in enumerate(list(session.changed), 1):
        if visited % PARTITIONS_PER_SLICE == 0:
            await asyncio.sleep(0)
        cached = session.partitions.get(key)
        if key in asked or cached is None:  # asked: read below; None: forgotten by a later fetch meanwhile
            continue
        partition = replicas.replica(*key)
        if (partition is not None and partition.is_leader
                and cached.current_leader_epoch in (-1, partition.leader_epoch)
                and cached.fetch_offset == partition.log_end_offset
                and cached.sent_high_watermark == partition.high_watermark
                and cached.sent_log_start_offset == partition.log_start_offset
                and replica_id in partition.isr):
            if first_pass:
                replicas.record_follower_fetch(partition, replica_id, cached.fetch_offset)
            session.changed.discard(key)
            continue
        news.setdefault(key.topic, []).append(cached)
    topics = list(requested)
    image = context.services.metadata.image
    for name, partitions in news.items():
        known = image.topics.get(name)
        topics.append((name, NO_TOPIC_ID if known is None else known.uuid, partitions))
    return topics


def _remember_sent(session: FetchSession, answers: list[wire.TopicAnswer], incremental: bool
                   ) -> list[wire.TopicAnswer]:
    """Record in `session` the high watermark and log start offset each answer gives; in an incremental fetch
    keep only the answers with news for the follower (records, an error or a diverging epoch, or a high
    watermark or log start offset it has not been sent)."""
    kept = []
    for answer in answers:
        partitions = []
        for p in answer.partitions:
            cached = session.partitions.get(TopicPartition(answer.name, p.index))
            if cached is None:  # not in the session (an unknown topic id): always answered
                partitions.append(p)
                continue
            news = (p.records is not None or p.error_code != ErrorCode.none or p.diverging_epoch is not None
                    or p.high_watermark != cached.sent_high_watermark
                    or p.log_start_offset != cached.sent_log_start_offset)
            cached.sent_high_watermark, cached.sent_log_start_offset = p.high_watermark, p.log_start_offset
            if news or not incremental:
                partitions.append(p)
        if partitions:
            answer.partitions = partitions
            kept.append(answer)
    return kept
