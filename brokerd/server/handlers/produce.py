"""Produce v0-v11: one batch per partition, appended as leader; acks 0 sends no response.

Per batch, never per record: the request's batches go to `ReplicaManager.append_records` in one call, which
owns the whole append with its acks semantics (the 61-byte header checked once, the CRC by storage, record
bodies stored as received; for acks=-1 (all) the min.insync.replicas check and the wait until the high
watermark passes each batch, within the request's `timeout`) and answers each partition with its offsets or
an error carrying its Kafka error. Internal topics (`__consumer_offsets`) are written by their coordinators
only: clients get INVALID_TOPIC_EXCEPTION, as in Kafka.

Per-version meaning (Kafka 3.9's `ProduceRequest.validateRecords` and `LogValidator`):

* v0-v2 may carry a legacy message set (magic 0/1, pre-0.11 clients): it is up-converted into one v2
  batch (`brokerd.records.legacy`) before the append; v3+ must carry a magic-2 batch (INVALID_RECORD).
* zstd needs v7+ (UNSUPPORTED_COMPRESSION_TYPE below).
* v8+ answers the record that broke a record-level rule (`record_errors`, `error_message`).
* v10+ names the current leader and its endpoint on NOT_LEADER_OR_FOLLOWER (KIP-951).

The request is read by `brokerd.protocol.produce_request` (by hand, not kio: only the fields used here), the
response laid out by `brokerd.protocol.produce_response`, which writes only the fields the request's version
has (throttle time v1, log append time v2, log start offset v5, ...).
"""

from kio.schema.errors import ErrorCode

from brokerd.protocol import produce_response as wire
from brokerd.protocol.produce_request import ProduceRequest
from brokerd.records import batch as rb
from brokerd.records import legacy
from brokerd.records.errors import CorruptRecordError, InvalidRecordError, UnsupportedCompressionTypeError
from brokerd.replication.partition import AppendResult
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code
from brokerd.server.response import NO_RESPONSE, RawResponse
from kafkaspec.topic_names import is_internal

_VALID_ACKS = (0, 1, -1)
_PENDING = wire.PartitionResult(-1, ErrorCode.unknown_server_error)
"""Holds an appended entry's place until its outcome is known."""
LEGACY_MAX_VERSION = 2
"""The last version that may carry a legacy (magic 0/1) message set."""
ZSTD_MIN_VERSION = 7


def _records_for_append(records: bytearray | None, version: int) -> bytearray | bytes:
    """The v2 batch to append: a legacy message set up-converted (v0-v2; INVALID_RECORD on v3+, as Kafka); zstd
    refused below v7; no records at all is CORRUPT_MESSAGE."""
    if records is None:
        raise CorruptRecordError("a partition entry without records")
    if legacy.is_message_set(records):
        if version > LEGACY_MAX_VERSION:
            raise InvalidRecordError(f"Produce v{version} carries record batches v2 (magic 2) only")
        return legacy.to_batch(records)
    if version < ZSTD_MIN_VERSION and len(records) >= rb.HEADER_SIZE and rb.read_header(records).codec == rb.ZSTD:
        raise UnsupportedCompressionTypeError(f"Produce v{version} may not carry zstd batches (v7+ may)")
    return records


class _Answer:
    """The partition results of one request; the endpoints of the leaders its NOT_LEADER_OR_FOLLOWER answers name."""

    def __init__(self, context: RequestContext) -> None:
        self._context = context
        self._endpoints: dict[int, wire.NodeEndpoint] = {}

    def error(self, topic: str, index: int, error: ErrorCode, exc: Exception | None = None) -> wire.PartitionResult:
        record_index = getattr(exc, "record_index", None)
        message = None if exc is None else str(exc) or None
        return wire.PartitionResult(
            index, error, record_errors=() if record_index is None else ((record_index, str(exc)),),
            error_message=message,
            current_leader=self._current_leader(topic, index) if error == ErrorCode.not_leader_or_follower else None)

    def _current_leader(self, topic: str, index: int) -> tuple[int, int]:
        image = self._context.services.metadata.image
        assignment = image.partition(topic, index)
        if assignment is None:
            return (-1, -1)
        broker = image.broker(assignment.leader_id)
        if broker is not None:
            self._endpoints[broker.node_id] = wire.NodeEndpoint(broker.node_id, broker.host, broker.port, broker.rack)
        return (assignment.leader_id, assignment.leader_epoch)

    def response(self, topics: list[tuple[str, list[wire.PartitionResult]]]) -> RawResponse:
        body = wire.encode_produce_response(self._context.version, topics, list(self._endpoints.values()))
        return RawResponse([body], len(body))


async def handle(request: ProduceRequest, context: RequestContext) -> object:
    version = context.version
    answer = _Answer(context)
    if request.transactional_id is not None:
        refusal: ErrorCode | None = ErrorCode.transactional_id_authorization_failed
    elif request.acks not in _VALID_ACKS:
        refusal = ErrorCode.invalid_required_acks
    else:
        refusal = None
    responses: list[tuple[str, list[wire.PartitionResult]]] = []
    entries: list[tuple[str, int, bytes | bytearray]] = []  # (topic, partition, batch) for the replica manager
    answered_at: list[tuple[list[wire.PartitionResult], int]] = []  # per entry: its topic's results, its position
    for topic in request.topic_data:
        results: list[wire.PartitionResult] = []
        internal = is_internal(topic.name)
        for data in topic.partition_data:
            if refusal is not None or internal:
                results.append(answer.error(topic.name, data.index, refusal or ErrorCode.invalid_topic_exception))
                continue
            try:
                records = _records_for_append(data.records, version)
            except Exception as exc:  # noqa: BLE001 - the error goes on the wire for this partition
                results.append(answer.error(topic.name, data.index, to_error_code(exc), exc))
                continue
            entries.append((topic.name, data.index, records))
            answered_at.append((results, len(results)))
            results.append(_PENDING)
        responses.append((topic.name, results))
    outcomes = await context.services.replicas.append_records(entries, request.acks,
                                                              request.timeout_ms,
                                                              on_appended=context.release)
    if request.acks == 0:
        return NO_RESPONSE
    for (name, index, _), (results, position), outcome in zip(entries, answered_at, outcomes, strict=True):
        if isinstance(outcome, AppendResult):
            results[position] = wire.PartitionResult(index, ErrorCode.none, outcome.base_offset,
                                                     outcome.log_append_time_ms, outcome.log_start_offset)
        else:
            results[position] = answer.error(name, index, to_error_code(outcome), outcome)
    return answer.response(responses)
