"""Produce v7: one magic-2 batch per partition, appended as leader; acks 0 sends no response.

Per batch, never per record: the partition layer reads the 61-byte header and storage checks the CRC;
record bodies (compressed or not) are stored as received. acks=-1 equals acks=1 while the ISR is only
the leader (standalone).
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

from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code
from brokerd.server.response import NO_RESPONSE

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
    responses = []
    for topic in request.topic_data:
        results = []
        for data in topic.partition_data:
            if refusal is not None:
                results.append(_error(data.index, refusal))
                continue
            if data.records is None:
                results.append(_error(data.index, ErrorCode.corrupt_message))
                continue
            try:
                result = partitions.get(topic.name, data.index).append(data.records)
            except Exception as exc:  # noqa: BLE001 - the error goes on the wire for this partition
                results.append(_error(data.index, to_error_code(exc)))
                continue
            results.append(PartitionProduceResponse(
                index=i32(data.index), error_code=ErrorCode.none, base_offset=i64(result.base_offset),
                log_append_time=(None if result.log_append_time_ms < 0 else
                                 datetime.datetime.fromtimestamp(result.log_append_time_ms / 1000, _UTC)),
                log_start_offset=i64(result.log_start_offset),
            ))
        responses.append(TopicProduceResponse(name=topic.name, partition_responses=tuple(results)))
    if request.acks == 0:
        return NO_RESPONSE
    return ProduceResponse(responses=tuple(responses), throttle_time=_NO_THROTTLE)
