"""Replication-admin APIs until their issue lands: advertised (kafka-python's admin client needs the
versions) and answered with a well-formed answer, never a dropped connection. ListPartitionReassignments
lists none in progress; AlterPartitionReassignments accepts only the current replicas.
"""

import datetime

from kio.schema.alter_partition_reassignments.v0.request import AlterPartitionReassignmentsRequest
from kio.schema.alter_partition_reassignments.v0.response import (
    AlterPartitionReassignmentsResponse,
    ReassignablePartitionResponse,
    ReassignableTopicResponse,
)
from kio.schema.errors import ErrorCode
from kio.schema.list_partition_reassignments.v0.request import ListPartitionReassignmentsRequest
from kio.schema.list_partition_reassignments.v0.response import ListPartitionReassignmentsResponse

from brokerd.server.context import RequestContext

_NO_THROTTLE = datetime.timedelta(0)


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
