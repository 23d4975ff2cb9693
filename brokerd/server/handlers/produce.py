"""Produce v7: one magic-2 batch per partition, appended as leader; acks 0 sends no response.

Per batch, never per record: the partition layer reads the 61-byte header and storage checks the CRC;
record bodies (compressed or not) are stored as received. acks=-1 (all) first checks the ISR against
`min.insync.replicas` (NOT_ENOUGH_REPLICAS, nothing appended), appends, then waits in the replica
manager's purgatory until the high watermark passes the batch (NOT_ENOUGH_REPLICAS_AFTER_APPEND if the
ISR shrank below the minimum meanwhile, REQUEST_TIMED_OUT after the request's `timeout`,
NOT_LEADER_OR_FOLLOWER if leadership moved). With a one-replica ISR that is immediate. Internal topics
(`__consumer_offsets`) are written by their coordinators only: clients get INVALID_TOPIC_EXCEPTION, as in Kafka.
"""

import datetime

from kio.schema.errors import ErrorCode
from kio.schema.produce.v7.request import ProduceRequest
from kio.schema.produce.v7.response import (
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)
from kio.static.primitive import i32, i64

from brokerd.protocol.errors import error_code
from brokerd.replication.replica_manager import PendingAck
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code
from brokerd.server.response import NO_RESPONSE
from kafkaspec.topic_names import is_internal

_NO_THROTTLE = datetime.timedelta(0)
_VALID_ACKS = (0, 1, -1)
_UTC = datetime.UTC


def _error(index: int, error: ErrorCode) -> PartitionProduceResponse:
    return PartitionProduceResponse(index=i32(index), error_code=error, base_offset=i64(-1))


async def handle(request: ProduceRequest, context: RequestContext) -> ProduceResponse | object:
    partitions = context.services.partitions
    if request.transactional_id is not None:
        refusal: ErrorCode | None = ErrorCode.transactional_id_authorization_failed
    elif request.acks not in _VALID_ACKS:
        refusal = ErrorCode.invalid_required_acks
    else:
        refusal = None
    responses: list[tuple[str, list[PartitionProduceResponse]]] = []
    pending: list[tuple[list[PartitionProduceResponse], int, PendingAck]] = []
    for topic in request.topic_data:
        results = []
        internal = is_internal(topic.name)
        for data in topic.partition_data:
            if refusal is not None or internal:
                results.append(_error(data.index, refusal or ErrorCode.invalid_topic_exception))
                continue
            if data.records is None:
                results.append(_error(data.index, ErrorCode.corrupt_message))
                continue
            try:
                partition = partitions.get(topic.name, data.index)
                min_isr = partitions.min_insync_replicas(topic.name)
                result = partition.append(data.records, request.acks, min_isr)
            except Exception as exc:  # noqa: BLE001 - the error goes on the wire for this partition
                results.append(_error(data.index, to_error_code(exc)))
                continue
            if request.acks == -1:
                pending.append((results, len(results), PendingAck(partition, result, min_isr)))
            results.append(PartitionProduceResponse(
                index=i32(data.index), error_code=ErrorCode.none, base_offset=i64(result.base_offset),
                log_append_time=(None if result.log_append_time_ms < 0 else
                                 datetime.datetime.fromtimestamp(result.log_append_time_ms / 1000, _UTC)),
                log_start_offset=i64(result.log_start_offset),
            ))
        responses.append((topic.name, results))
    if request.acks == 0:
        return NO_RESPONSE
    if pending:
        outcomes = await partitions.wait_for_acks([p for _, _, p in pending],
                                                  int(request.timeout.total_seconds() * 1000))
        for (results, position, _), outcome in zip(pending, outcomes, strict=True):
            if outcome is not None:
                results[position] = _error(results[position].index, error_code(outcome))
    return ProduceResponse(responses=tuple(TopicProduceResponse(name=name, partition_responses=tuple(results))
                                           for name, results in responses), throttle_time=_NO_THROTTLE)
