"""One module per API; `HANDLERS` maps each API key to its handler coroutine function.

A handler is `async def handle(request, context) -> response`: it decodes nothing and encodes
nothing (the dispatcher does), calls the partition/metadata layers, and maps domain errors to wire
error codes (`_errors.to_error_code`).
"""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.api_versions import SUPPORTED_APIS
from brokerd.server.dispatcher import Handler
from brokerd.server.handlers import (
    alter_configs,
    api_versions,
    create_partitions,
    create_topics,
    delete_records,
    delete_topics,
    describe_cluster,
    describe_configs,
    elect_leaders,
    fetch,
    incremental_alter_configs,
    init_producer_id,
    list_offsets,
    metadata,
    not_yet_served,
    offset_for_leader_epoch,
    produce,
)


def _no_coordinator(key: ApiKey) -> Handler:
    return not_yet_served.coordinator_not_available(key, SUPPORTED_APIS[key].implemented)


HANDLERS: dict[int, Handler] = {
    ApiKey.API_VERSIONS: api_versions.handle,
    ApiKey.METADATA: metadata.handle,
    ApiKey.PRODUCE: produce.handle,
    ApiKey.INIT_PRODUCER_ID: init_producer_id.handle,
    ApiKey.LIST_OFFSETS: list_offsets.handle,
    ApiKey.FETCH: fetch.handle,
    ApiKey.CREATE_TOPICS: create_topics.handle,
    ApiKey.DELETE_TOPICS: delete_topics.handle,
    ApiKey.CREATE_PARTITIONS: create_partitions.handle,
    ApiKey.DESCRIBE_CONFIGS: describe_configs.handle,
    ApiKey.ALTER_CONFIGS: alter_configs.handle,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: incremental_alter_configs.handle,
    ApiKey.DELETE_RECORDS: delete_records.handle,
    ApiKey.DESCRIBE_CLUSTER: describe_cluster.handle,
    ApiKey.FIND_COORDINATOR: _no_coordinator(ApiKey.FIND_COORDINATOR),
    ApiKey.JOIN_GROUP: _no_coordinator(ApiKey.JOIN_GROUP),
    ApiKey.SYNC_GROUP: _no_coordinator(ApiKey.SYNC_GROUP),
    ApiKey.HEARTBEAT: _no_coordinator(ApiKey.HEARTBEAT),
    ApiKey.LEAVE_GROUP: _no_coordinator(ApiKey.LEAVE_GROUP),
    ApiKey.OFFSET_FETCH: _no_coordinator(ApiKey.OFFSET_FETCH),
    ApiKey.OFFSET_COMMIT: not_yet_served.offset_commit,
    ApiKey.DESCRIBE_GROUPS: not_yet_served.describe_groups,
    ApiKey.DELETE_GROUPS: not_yet_served.delete_groups,
    ApiKey.LIST_GROUPS: not_yet_served.list_groups,
    ApiKey.ELECT_LEADERS: elect_leaders.handle,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: offset_for_leader_epoch.handle,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: not_yet_served.alter_partition_reassignments,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: not_yet_served.list_partition_reassignments,
}
