"""Fetch v11: stored batches served verbatim, as storage file regions the connection `sendfile`s.

Long poll: if fewer than `min_bytes` are available (and no partition errored), wait for an append to
one of the fetched partitions or `max_wait`, then read again. `max_bytes` bounds the whole response and
`partition_max_bytes` each partition, except that the first non-empty partition always returns at least
one whole batch (KIP-74). No fetch sessions (KIP-227): the response's session_id is always 0, which
every client accepts as "sessionless". Read uncommitted = read committed: there are no transactions.

Consumers read up to the high watermark. A replica Fetch (`replica_id` >= 0, from a follower's
`ReplicaFetcher`) reads up to the log end offset, and its fetch offsets are the follower's log end
offsets: the replica manager records them first (which may move the high watermark and complete
acks=all produces, or expand the ISR). Both check `current_leader_epoch` (FENCED_LEADER_EPOCH /
UNKNOWN_LEADER_EPOCH) and need this broker to lead the partition (NOT_LEADER_OR_FOLLOWER).

The response is encoded by hand (non-flexible v11 layout below) so records never pass through Python
buffers::

    throttle_time_ms i32 | error_code i16 | session_id i32 | [topics] i32 count:
      topic string (i16 length) | [partitions] i32 count:
        partition_index i32 | error_code i16 | high_watermark i64 | last_stable_offset i64 |
        log_start_offset i64 | aborted_transactions i32 count (0) | preferred_read_replica i32 (-1) |
        records i32 length + bytes
"""

import asyncio
import struct
from dataclasses import dataclass

from kio.schema.errors import ErrorCode
from kio.schema.fetch.v11.request import FetchRequest

from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code
from brokerd.server.response import Chunk, FileChunk, RawResponse

_RESPONSE_HEAD = struct.Struct(">ihii")
_TOPIC_HEAD = struct.Struct(">h")
_COUNT = struct.Struct(">i")
_PARTITION = struct.Struct(">ihqqqiii")
_NO_PREFERRED_REPLICA = -1


@dataclass(slots=True)
class _PartitionRead:
    index: int
    error: ErrorCode
    high_watermark: int = -1
    log_start_offset: int = -1
    region: FileChunk | None = None


def _read_all(request: FetchRequest, context: RequestContext, first_pass: bool
              ) -> tuple[list[tuple[str, list[_PartitionRead]]], int, bool]:
    """One pass over every requested partition: (results, bytes found, any error)."""
    partitions = context.services.partitions
    replica_id = request.replica_id
    from_follower = replica_id >= 0
    budget = request.max_bytes
    total = 0
    errored = False
    results = []
    for topic in request.topics:
        reads = []
        for requested in topic.partitions:
            try:
                partition = partitions.get(topic.topic, requested.partition)
                partition.check_leader_epoch(requested.current_leader_epoch)
                if from_follower and first_pass:
                    partitions.record_follower_fetch(partition, replica_id, requested.fetch_offset)
                high_watermark = partition.high_watermark
                limit = min(requested.partition_max_bytes, budget)
                region = None
                if limit > 0 or total == 0:
                    region = partition.read(requested.fetch_offset, max(limit, 1), up_to_log_end=from_follower)
                read = _PartitionRead(requested.partition, ErrorCode.none, high_watermark,
                                      partition.log_start_offset, region)
            except Exception as exc:  # noqa: BLE001 - the error goes on the wire for this partition
                errored = True
                reads.append(_PartitionRead(requested.partition, to_error_code(exc)))
                continue
            if read.region is not None:
                total += read.region.length
                budget -= read.region.length
            reads.append(read)
        results.append((topic.topic, reads))
    return results, total, errored


def _encode(results: list[tuple[str, list[_PartitionRead]]]) -> RawResponse:
    chunks: list[Chunk] = []
    head = bytearray(_RESPONSE_HEAD.pack(0, ErrorCode.none, 0, len(results)))
    for topic, reads in results:
        name = topic.encode()
        head += _TOPIC_HEAD.pack(len(name))
        head += name
        head += _COUNT.pack(len(reads))
        for read in reads:
            length = read.region.length if read.region is not None else 0
            head += _PARTITION.pack(read.index, read.error, read.high_watermark, read.high_watermark,
                                    read.log_start_offset, 0, _NO_PREFERRED_REPLICA, length)
            if length:
                chunks.append(bytes(head))
                chunks.append(read.region)  # type: ignore[arg-type]
                head = bytearray()
    if head:
        chunks.append(bytes(head))
    size = sum(len(c) if isinstance(c, bytes) else c.length for c in chunks)
    return RawResponse(chunks, size)


async def handle(request: FetchRequest, context: RequestContext) -> RawResponse:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + request.max_wait.total_seconds()
    keys = [(t.topic, p.partition) for t in request.topics for p in t.partitions]
    first_pass = True
    while True:
        results, total, errored = _read_all(request, context, first_pass)
        first_pass = False
        remaining = deadline - loop.time()
        if total >= request.min_bytes or errored or remaining <= 0 or not keys:
            context.services.partitions.topic_metrics.record_fetch(results, request.replica_id >= 0)
            return _encode(results)
        await context.services.partitions.waiters.wait(keys, remaining)
