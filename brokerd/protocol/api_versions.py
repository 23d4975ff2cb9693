"""The version range of each API Strom serves: Kafka 3.9's, from its minimum to its maximum.

Every version in a range is decoded and answered (with the kio schemas of that version, `messages`)
and covered by the conformance table (`tests/brokerd/protocol/test_conformance.py`), so ApiVersions
advertises exactly these ranges. The ranges are Kafka 3.9's `validVersions` (the message JSON kio 0.6.2
is generated from): clients pick min(their max, ours), or the version their configuration names
(sarama's `Version`), and Kafka 3.9 answers all of them. Old versions keep the probe points old clients
test for (librdkafka < 2.11.1: Produce ∋ 0 for gzip/snappy/lz4, Produce ∋ 7 and Fetch ∋ 10 for zstd;
kafka-python infers the broker version from them).

A request outside its range gets UNSUPPORTED_VERSION (ApiVersions: a v0 body with the table, KIP-511).
"""

from dataclasses import dataclass

from kio.schema.api_versions.v0.response import ApiVersion
from kio.static.primitive import i16

from brokerd.protocol.api_keys import ApiKey


@dataclass(frozen=True, slots=True)
class ApiVersionRange:
    """[min_version, max_version]: every version served, and what ApiVersions says."""

    api_key: ApiKey
    min_version: int
    max_version: int

    def __contains__(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


_K = ApiKey
SUPPORTED_APIS: dict[int, ApiVersionRange] = {
    r.api_key: r
    for r in (
        ApiVersionRange(_K.PRODUCE, 0, 11),
        ApiVersionRange(_K.FETCH, 0, 17),
        ApiVersionRange(_K.LIST_OFFSETS, 0, 9),
        ApiVersionRange(_K.METADATA, 0, 12),
        ApiVersionRange(_K.OFFSET_COMMIT, 0, 9),
        ApiVersionRange(_K.OFFSET_FETCH, 0, 9),
        ApiVersionRange(_K.FIND_COORDINATOR, 0, 6),
        ApiVersionRange(_K.JOIN_GROUP, 0, 9),
        ApiVersionRange(_K.HEARTBEAT, 0, 4),
        ApiVersionRange(_K.LEAVE_GROUP, 0, 5),
        ApiVersionRange(_K.SYNC_GROUP, 0, 5),
        ApiVersionRange(_K.DESCRIBE_GROUPS, 0, 5),
        ApiVersionRange(_K.LIST_GROUPS, 0, 5),
        ApiVersionRange(_K.API_VERSIONS, 0, 4),
        ApiVersionRange(_K.CREATE_TOPICS, 0, 7),
        ApiVersionRange(_K.DELETE_TOPICS, 0, 6),
        ApiVersionRange(_K.DELETE_RECORDS, 0, 2),
        ApiVersionRange(_K.INIT_PRODUCER_ID, 0, 5),
        ApiVersionRange(_K.OFFSET_FOR_LEADER_EPOCH, 0, 4),
        ApiVersionRange(_K.DESCRIBE_CONFIGS, 0, 4),
        ApiVersionRange(_K.ALTER_CONFIGS, 0, 2),
        ApiVersionRange(_K.DESCRIBE_LOG_DIRS, 0, 4),
        ApiVersionRange(_K.CREATE_PARTITIONS, 0, 3),
        ApiVersionRange(_K.DELETE_GROUPS, 0, 2),
        ApiVersionRange(_K.ELECT_LEADERS, 0, 2),
        ApiVersionRange(_K.INCREMENTAL_ALTER_CONFIGS, 0, 1),
        ApiVersionRange(_K.ALTER_PARTITION_REASSIGNMENTS, 0, 0),
        ApiVersionRange(_K.LIST_PARTITION_REASSIGNMENTS, 0, 0),
        ApiVersionRange(_K.OFFSET_DELETE, 0, 0),
        ApiVersionRange(_K.DESCRIBE_CLUSTER, 0, 1),
    )
}


def advertised_api_versions() -> tuple[ApiVersion, ...]:
    """The ApiVersions body's `api_keys` list (the entity is the same in v0-v4)."""
    return tuple(ApiVersion(api_key=i16(r.api_key), min_version=i16(r.min_version),
                            max_version=i16(r.max_version)) for r in SUPPORTED_APIS.values())
