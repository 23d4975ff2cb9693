"""DescribeCluster v0-v1 (flexible): cluster id, controller and brokers (v1 may ask for endpoint type 1 =
brokers only; v0 always means brokers)."""

import datetime

from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32

from brokerd.server.context import RequestContext

BROKER_ENDPOINTS = 1


async def handle(request, context: RequestContext) -> object:
    image = context.services.metadata.image
    schema = context.response
    endpoint_type = getattr(request, "endpoint_type", BROKER_ENDPOINTS)
    if endpoint_type != BROKER_ENDPOINTS:
        return schema.DescribeClusterResponse(throttle_time=datetime.timedelta(0),
                                       error_code=ErrorCode.unsupported_endpoint_type,
                                       error_message="Only broker endpoints (1) are served",
                                       endpoint_type=i8(endpoint_type), cluster_id=image.cluster_id,
                                       brokers=())
    return schema.DescribeClusterResponse(
        throttle_time=datetime.timedelta(0), error_code=ErrorCode.none, endpoint_type=i8(BROKER_ENDPOINTS),
        cluster_id=image.cluster_id, controller_id=BrokerId(image.controller_id),
        brokers=tuple(schema.DescribeClusterBroker(broker_id=BrokerId(b.node_id), host=b.host, port=i32(b.port),
                                            rack=b.rack) for b in image.live_brokers),
    )
