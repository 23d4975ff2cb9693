"""ApiVersions v0-v4: the advertised version table (`brokerd.protocol.api_versions`).

v3+ (flexible; the response header stays v0, KIP-511) names the client software, which must match
Kafka's pattern (INVALID_REQUEST otherwise). No feature flags are answered: tagged fields that hold their
defaults are left out, as librdkafka 2.0.2 cannot read some of them (kafka-protocol.md §3.4).
"""

import datetime
import re

from kio.schema.errors import ErrorCode
from kio.static.primitive import i16

from brokerd.protocol.api_versions import SUPPORTED_APIS
from brokerd.server.context import RequestContext

_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
"""Kafka's `ApiVersionsRequest.isValid` pattern for client software name and version."""


def _valid(request) -> bool:
    name = getattr(request, "client_software_name", None)
    if name is None:
        return True
    return bool(_SOFTWARE.fullmatch(name) and _SOFTWARE.fullmatch(request.client_software_version))


async def handle(request, context: RequestContext) -> object:
    schema = context.response
    api_keys = tuple(schema.ApiVersion(api_key=i16(r.api_key), min_version=i16(r.min_version),
                                       max_version=i16(r.max_version)) for r in SUPPORTED_APIS.values())
    error = ErrorCode.none if _valid(request) else ErrorCode.invalid_request
    return schema.ApiVersionsResponse(error_code=error, api_keys=api_keys, throttle_time=datetime.timedelta(0))
