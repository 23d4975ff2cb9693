"""Group-coordination and replication-admin APIs until their issues land: advertised (clients need
the versions to enable features) and answered with a well-formed error, never a dropped connection.

Group APIs answer COORDINATOR_NOT_AVAILABLE, so consumers that assign partitions themselves keep
working; ListGroups truthfully lists no groups; ListPartitionReassignments lists none in progress.
"""

import datetime

from kio.schema.alter_partition_reassignments.v0.request import AlterPartitionReassignmentsRequest
from kio.schema.alter_partition_reassignments.v0.response import (
    AlterPartitionReassignmentsResponse,
    ReassignablePartitionResponse,
    ReassignableTopicResponse,
)
from kio.schema.delete_groups.v1.request import DeleteGroupsRequest
from kio.schema.delete_groups.v1.response import DeletableGroupResult, DeleteGroupsResponse
from kio.schema.describe_groups.v3.request import DescribeGroupsRequest
from kio.schema.describe_groups.v3.response import DescribedGroup, DescribeGroupsResponse
from kio.schema.errors import ErrorCode
from kio.schema.list_groups.v1.request import ListGroupsRequest
from kio.schema.list_groups.v1.response import ListGroupsResponse
from kio.schema.list_partition_reassignments.v0.request import ListPartitionReassignmentsRequest
from kio.schema.list_partition_reassignments.v0.response import ListPartitionReassignmentsResponse
from kio.schema.offset_commit.v3.request import OffsetCommitRequest
from kio.schema.offset_commit.v3.response import (
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)

from brokerd.protocol.error_response import build_error_response
from brokerd.protocol.messages import message_codec
from brokerd.server.context import RequestContext

_NO_THROTTLE = datetime.timedelta(0)
_NO_COORDINATOR = ErrorCode.coordinator_not_available


def coordinator_not_available(api_key: int, version: int):
    """A handler answering the API's top-level error_code with COORDINATOR_NOT_AVAILABLE."""
    codec = message_codec(api_key, version)
    assert codec is not None
    response = build_error_response(codec.response_type, _NO_COORDINATOR)

    async def handle(request: object, context: RequestContext) -> object:
        return response

    return handle


async def offset_commit(request: OffsetCommitRequest, context: RequestContext) -> OffsetCommitResponse:
    return OffsetCommitResponse(throttle_time=_NO_THROTTLE, topics=tuple(
        OffsetCommitResponseTopic(name=t.name, partitions=tuple(
            OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=_NO_COORDINATOR)
            for p in t.partitions))
        for t in request.topics))


async def describe_groups(request: DescribeGroupsRequest, context: RequestContext) -> DescribeGroupsResponse:
    return DescribeGroupsResponse(throttle_time=_NO_THROTTLE, groups=tuple(
        DescribedGroup(error_code=_NO_COORDINATOR, group_id=g, group_state="", protocol_type="",
                       protocol_data="", members=()) for g in request.groups))


async def delete_groups(request: DeleteGroupsRequest, context: RequestContext) -> DeleteGroupsResponse:
    return DeleteGroupsResponse(throttle_time=_NO_THROTTLE, results=tuple(
        DeletableGroupResult(group_id=g, error_code=_NO_COORDINATOR) for g in request.groups_names))


async def list_groups(request: ListGroupsRequest, context: RequestContext) -> ListGroupsResponse:
    return ListGroupsResponse(throttle_time=_NO_THROTTLE, error_code=ErrorCode.none, groups=())


async def alter_partition_reassignments(request: AlterPartitionReassignmentsRequest, context: RequestContext
                                        ) -> AlterPartitionReassignmentsResponse:
    image = context.services.metadata.image
    responses = []
    for topic in request.topics:
        known = image.topics.get(topic.name)
        partitions = []
        for requested in topic.partitions:
            if known is None or not 0 <= requested.partition_index < len(known.partitions):
                error, message = ErrorCode.unknown_topic_or_partition, "No such partition"
            elif requested.replicas is None:
                error, message = ErrorCode.no_reassignment_in_progress, "No reassignment in progress"
            elif tuple(requested.replicas) == known.partitions[requested.partition_index].replicas:
                error, message = ErrorCode.none, None
            else:
                error, message = (ErrorCode.invalid_replica_assignment,
                                  "Replica moves arrive with cluster mode; this broker is standalone")
            partitions.append(ReassignablePartitionResponse(partition_index=requested.partition_index,
                                                            error_code=error, error_message=message))
        responses.append(ReassignableTopicResponse(name=topic.name, partitions=tuple(partitions)))
    return AlterPartitionReassignmentsResponse(throttle_time=_NO_THROTTLE, error_code=ErrorCode.none,
                                               error_message=None, responses=tuple(responses))


async def list_partition_reassignments(request: ListPartitionReassignmentsRequest, context: RequestContext
                                       ) -> ListPartitionReassignmentsResponse:
    return ListPartitionReassignmentsResponse(throttle_time=_NO_THROTTLE, error_code=ErrorCode.none,
                                              error_message=None, topics=())
