"""ElectLeaders v0-v2: preferred (0) or unclean (1, v1+) leader election, decided by the controller (cluster)
or answered ELECTION_NOT_NEEDED (standalone: every partition has its only possible leader)."""

import datetime

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32

from brokerd.protocol.error_codes import error_code
from brokerd.server.context import RequestContext
from brokerd.server.handlers._errors import to_error_code

PREFERRED = 0
_ELECTION_TYPES = {PREFERRED: "preferred", 1: "unclean"}
_MESSAGES = {ErrorCode.election_not_needed: "Leader is already the preferred replica"}


async def handle(request, context: RequestContext) -> object:
    metadata = context.services.metadata
    schema = context.response
    election_type = _ELECTION_TYPES.get(getattr(request, "election_type", PREFERRED))
    wanted = (None if request.topic_partitions is None
              else [(t.topic, int(p)) for t in request.topic_partitions for p in t.partitions])
    by_topic: dict[str, list[object]] = {}
    if election_type is None:
        top_error = ErrorCode.invalid_request
    else:
        top_error = ErrorCode.none
        try:
            results = await metadata.elect_leaders(election_type, wanted, origin=context.origin)
        except Exception as exc:  # noqa: BLE001 - the error goes on the wire for every partition
            code = to_error_code(exc)
            results = [(t, p, None) for t, p in (wanted or [])]
            top_error = code
        for topic, partition, error in results:
            code = ErrorCode.none if error is None else error_code(error)
            by_topic.setdefault(topic, []).append(schema.PartitionResult(
                partition_id=i32(partition), error_code=code, error_message=_MESSAGES.get(code, error)))
    return schema.ElectLeadersResponse(throttle_time=datetime.timedelta(0), error_code=top_error,
                                replica_election_results=tuple(
                                    schema.ReplicaElectionResult(topic=t, partition_result=tuple(r))
                                    for t, r in by_topic.items()))
