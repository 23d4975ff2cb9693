"""InitProducerId v0: a fresh producer id (epoch 0) for idempotent producers; no transactions yet."""

import datetime

from kio.schema.errors import ErrorCode
from kio.schema.init_producer_id.v0.request import InitProducerIdRequest
from kio.schema.init_producer_id.v0.response import InitProducerIdResponse
from kio.schema.types import ProducerId
from kio.static.primitive import i16

from brokerd.server.context import RequestContext

_NO_THROTTLE = datetime.timedelta(0)


async def handle(request: InitProducerIdRequest, context: RequestContext) -> InitProducerIdResponse:
    if request.transactional_id is not None:
        return InitProducerIdResponse(throttle_time=_NO_THROTTLE,
                                      error_code=ErrorCode.transactional_id_authorization_failed,
                                      producer_id=ProducerId(-1), producer_epoch=i16(-1))
    producer_id = await context.services.metadata.allocate_producer_id()
    return InitProducerIdResponse(throttle_time=_NO_THROTTLE, error_code=ErrorCode.none,
                                  producer_id=ProducerId(producer_id), producer_epoch=i16(0))
