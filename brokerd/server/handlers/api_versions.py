"""ApiVersions v0: the advertised version table (`brokerd.protocol.api_versions`)."""

from kio.schema.api_versions.v0.request import ApiVersionsRequest
from kio.schema.api_versions.v0.response import ApiVersionsResponse
from kio.schema.errors import ErrorCode

from brokerd.protocol.api_versions import advertised_api_versions
from brokerd.server.context import RequestContext

_RESPONSE = ApiVersionsResponse(error_code=ErrorCode.none, api_keys=advertised_api_versions())


async def handle(request: ApiVersionsRequest, context: RequestContext) -> ApiVersionsResponse:
    return _RESPONSE
