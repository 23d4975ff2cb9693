"""Which version of each API Strom implements, and the wider range it advertises in ApiVersions.

Source: `kafka-protocol.md` §4 (measured against kafka-python 3.0.12, librdkafka 2.16 and 2.0.2 (kcat),
aiokafka 0.14). Every client picks min(its max, our advertised max), so only `implemented` ever arrives
from those clients. The lower bounds are wider than what we implement on purpose:

* librdkafka < 2.11.1 enables gzip/snappy/lz4 only if Produce's range contains 0, zstd only if Produce ∋ 7
  and Fetch ∋ 10, record batches only if Produce ∋ 3 and Fetch ∋ 4, idempotence only if InitProducerId ∋ 0;
* kafka-python infers the broker version from probe points (Fetch 11 ⇒ 2.3) and falls back to legacy
  message sets and no idempotence below 0.11.

A request at an advertised-but-not-implemented version is answered with UNSUPPORTED_VERSION.
"""

from dataclasses import dataclass

from kio.schema.api_versions.v0.response import ApiVersion
from kio.static.primitive import i16

from brokerd.protocol.api_keys import ApiKey


@dataclass(frozen=True, slots=True)
class ApiVersionRange:
    """`implemented` is the one version decoded; [min_advertised, max_advertised] is what ApiVersions says."""

    api_key: ApiKey
    implemented: int
    min_advertised: int
    max_advertised: int


_K = ApiKey
SUPPORTED_APIS: dict[int, ApiVersionRange] = {
    r.api_key: r
    for r in (
        ApiVersionRange(_K.API_VERSIONS, 0, 0, 0),
        ApiVersionRange(_K.METADATA, 4, 0, 4),
        ApiVersionRange(_K.PRODUCE, 7, 0, 7),
        ApiVersionRange(_K.INIT_PRODUCER_ID, 0, 0, 0),
        ApiVersionRange(_K.LIST_OFFSETS, 2, 1, 2),
        ApiVersionRange(_K.FETCH, 11, 4, 11),
        ApiVersionRange(_K.FIND_COORDINATOR, 1, 0, 1),
        ApiVersionRange(_K.JOIN_GROUP, 5, 0, 5),
        ApiVersionRange(_K.SYNC_GROUP, 3, 0, 3),
        ApiVersionRange(_K.HEARTBEAT, 1, 0, 1),
        ApiVersionRange(_K.LEAVE_GROUP, 1, 0, 1),
        ApiVersionRange(_K.OFFSET_COMMIT, 3, 2, 3),
        ApiVersionRange(_K.OFFSET_FETCH, 3, 1, 3),
        ApiVersionRange(_K.CREATE_TOPICS, 3, 2, 3),
        ApiVersionRange(_K.DELETE_TOPICS, 3, 1, 3),
        ApiVersionRange(_K.DESCRIBE_CONFIGS, 1, 1, 1),
        ApiVersionRange(_K.ALTER_CONFIGS, 1, 0, 1),
        ApiVersionRange(_K.INCREMENTAL_ALTER_CONFIGS, 0, 0, 0),
        ApiVersionRange(_K.CREATE_PARTITIONS, 1, 0, 1),
        ApiVersionRange(_K.DESCRIBE_GROUPS, 3, 0, 3),
        ApiVersionRange(_K.LIST_GROUPS, 1, 0, 1),
        ApiVersionRange(_K.DELETE_GROUPS, 1, 0, 1),
        ApiVersionRange(_K.OFFSET_DELETE, 0, 0, 0),
        ApiVersionRange(_K.DELETE_RECORDS, 1, 0, 1),
        ApiVersionRange(_K.OFFSET_FOR_LEADER_EPOCH, 3, 0, 3),
        ApiVersionRange(_K.ELECT_LEADERS, 1, 0, 1),
        ApiVersionRange(_K.DESCRIBE_CLUSTER, 1, 1, 1),
        ApiVersionRange(_K.ALTER_PARTITION_REASSIGNMENTS, 0, 0, 0),
        ApiVersionRange(_K.LIST_PARTITION_REASSIGNMENTS, 0, 0, 0),
    )
}


def advertised_api_versions() -> tuple[ApiVersion, ...]:
    """The ApiVersions v0 body's `api_keys` list."""
    return tuple(ApiVersion(api_key=i16(r.api_key), min_version=i16(r.min_advertised),
                            max_version=i16(r.max_advertised)) for r in SUPPORTED_APIS.values())
