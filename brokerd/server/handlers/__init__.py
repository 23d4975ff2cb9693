"""One module per API; `HANDLERS` maps each API key to its handler coroutine function.

A handler is `async def handle(request, context) -> response`: it decodes nothing and encodes
nothing (the dispatcher does), calls the partition/metadata layers, and maps domain errors to wire
error codes (`_errors.to_error_code`).
"""

from brokerd.protocol.api_keys import ApiKey
from brokerd.server.dispatcher import Handler
from brokerd.server.handlers import (
    alter_configs,
    api_versions,
    create_partitions,
    create_topics,
    delete_groups,
    delete_records,
    delete_topics,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    elect_leaders,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    partition_reassignments,
    produce,
    sync_group,
    topic_metadata,
)

HANDLERS: dict[int, Handler] = {
    ApiKey.API_VERSIONS: api_versions.handle,
    ApiKey.METADATA: topic_metadata.handle,
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
    ApiKey.DESCRIBE_LOG_DIRS: describe_log_dirs.handle,
    ApiKey.FIND_COORDINATOR: find_coordinator.handle,
    ApiKey.JOIN_GROUP: join_group.handle,
    ApiKey.SYNC_GROUP: sync_group.handle,
    ApiKey.HEARTBEAT: heartbeat.handle,
    ApiKey.LEAVE_GROUP: leave_group.handle,
    ApiKey.OFFSET_COMMIT: offset_commit.handle,
    ApiKey.OFFSET_FETCH: offset_fetch.handle,
    ApiKey.OFFSET_DELETE: offset_delete.handle,
    ApiKey.DESCRIBE_GROUPS: describe_groups.handle,
    ApiKey.LIST_GROUPS: list_groups.handle,
    ApiKey.DELETE_GROUPS: delete_groups.handle,
    ApiKey.ELECT_LEADERS: elect_leaders.handle,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: offset_for_leader_epoch.handle,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: partition_reassignments.alter,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: partition_reassignments.list_,
}
