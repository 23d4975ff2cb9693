"""InitProducerId v0-v5: a fresh producer id (epoch 0) for idempotent producers; no transactions yet.
An idempotent producer that names its current id and epoch (v3+, KIP-360) gets a fresh id too, as Kafka
answers non-transactional producers. Ids
come from the metadata store (cluster: blocks from the control plane); while the control plane is
unreachable the answer is COORDINATOR_NOT_AVAILABLE, which clients retry."""

import datetime

from kio.schema.errors import ErrorCode
from kio.schema.types import ProducerId
from kio.static.primitive import i16

from brokerd.metadata.errors import MetadataError
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code

_NO_THROTTLE = datetime.timedelta(0)


async def handle(request, context: RequestContext) -> object:
    response = context.response.InitProducerIdResponse
    if request.transactional_id is not None:
        return response(throttle_time=_NO_THROTTLE, error_code=ErrorCode.transactional_id_authorization_failed,
                        producer_id=ProducerId(-1), producer_epoch=i16(-1))
    try:
        producer_id = await context.services.metadata.allocate_producer_id()
    except MetadataError as exc:  # the control plane is unreachable: a retriable error clients wait out
        return response(throttle_time=_NO_THROTTLE,
                        error_code=(ErrorCode.coordinator_not_available
                                    if exc.kafka_error == "REQUEST_TIMED_OUT" else to_error_code(exc)),
                        producer_id=ProducerId(-1), producer_epoch=i16(-1))
    return response(throttle_time=_NO_THROTTLE, error_code=ErrorCode.none, producer_id=ProducerId(producer_id),
                    producer_epoch=i16(0))
