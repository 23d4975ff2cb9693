"""DescribeLogDirs v0-v4: every log dir of this broker and the replicas in it with their sizes (what
`kafka-log-dirs.sh --describe` and admin consoles show per replica and disk).

`topics` null asks for every replica here; otherwise only the named partitions this broker holds are
listed (others are left out, as Kafka does). A dir taken offline by an I/O error is listed with
KAFKA_STORAGE_ERROR and no topics. `offset_lag` is Kafka's for a current (not future) log: how far the log
end offset is below the high watermark, never negative; Strom has no future logs (`is_future_key` false).
Per version: v3+ carries a top-level error code (always NONE here), v4+ each dir's volume size and the
bytes still usable on it.
"""

import datetime
from collections import defaultdict

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i64

from brokerd.metrics.sample import disk_usage
from brokerd.server.context import RequestContext


def _wanted(request) -> dict[str, set[int]] | None:
    """Partitions asked for by topic; None: every replica."""
    if request.topics is None:
        return None
    wanted: dict[str, set[int]] = defaultdict(set)
    for topic in request.topics:
        wanted[topic.topic].update(int(p) for p in topic.partitions)
    return wanted


async def handle(request, context: RequestContext) -> object:
    schema = context.response
    replicas = context.services.replicas
    wanted = _wanted(request)
    by_dir: dict[str, dict[str, list[object]]] = defaultdict(lambda: defaultdict(list))
    for partition in replicas.partitions():
        if wanted is not None and partition.index not in wanted.get(partition.topic, ()):
            continue
        log = partition.log
        by_dir[str(log.log_dir.path)][partition.topic].append(schema.DescribeLogDirsPartition(
            partition_index=i32(partition.index), partition_size=i64(log.size_in_bytes()),
            offset_lag=i64(max(0, partition.high_watermark - log.log_end_offset)), is_future_key=False))
    results = []
    for directory in replicas.log_dirs():
        path = str(directory.path)
        if not directory.online:
            results.append(schema.DescribeLogDirsResult(error_code=ErrorCode.kafka_storage_error, log_dir=path,
                                                        topics=(), total_bytes=i64(-1), usable_bytes=i64(-1)))
            continue
        total, usable = disk_usage(path)
        topics = tuple(schema.DescribeLogDirsTopic(name=name, partitions=tuple(sorted(
            partitions, key=lambda p: p.partition_index))) for name, partitions in sorted(by_dir[path].items()))
        results.append(schema.DescribeLogDirsResult(error_code=ErrorCode.none, log_dir=path, topics=topics,
                                                    total_bytes=i64(total), usable_bytes=i64(usable)))
    return schema.DescribeLogDirsResponse(throttle_time=datetime.timedelta(0), error_code=ErrorCode.none,
                                          results=tuple(results))
