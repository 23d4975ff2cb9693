"""DescribeLogDirs against a real broker through kafka-python's admin client (as kafka-log-dirs.sh and admin
consoles call it): every replica's size equals its segment files on disk, a request for some partitions gets
only those, and v4's volume sizes are the file system's."""

import os

from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic

TIMEOUT_MS = 20_000


def _on_disk(log_dir, topic: str, partition: int) -> int:
    directory = log_dir / f"{topic}-{partition}"
    return sum(f.stat().st_size for f in directory.iterdir() if f.suffix == ".log")


def test_replica_sizes_match_the_segment_files(broker, topic_name):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=TIMEOUT_MS)
    admin.create_topics([NewTopic(topic_name, 2, 1)])
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
    for i in range(30):
        producer.send(topic_name, value=b"x" * (100 + i), partition=i % 2)
    producer.flush()
    producer.close()

    [answer] = admin.describe_log_dirs()
    [log_dir] = answer["log_dirs"]
    assert log_dir["error_code"] == 0 and log_dir["log_dir"] == str(broker.log_dir)
    topics = {t["name"]: t for t in log_dir["topics"]}
    sizes = {p["partition_index"]: p["partition_size"] for p in topics[topic_name]["partitions"]}
    assert sizes == {p: _on_disk(broker.log_dir, topic_name, p) for p in (0, 1)}
    assert all(size > 30 * 100 // 2 for size in sizes.values())
    assert all(p["offset_lag"] == 0 and not p["is_future_key"] for p in topics[topic_name]["partitions"])
    stats = os.statvfs(broker.log_dir)
    assert log_dir["total_bytes"] == stats.f_blocks * stats.f_frsize
    assert 0 < log_dir["usable_bytes"] <= log_dir["total_bytes"]

    [answer] = admin.describe_log_dirs(topic_partitions={topic_name: [1], "no-such-topic": [0]})
    [log_dir] = answer["log_dirs"]
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in log_dir["topics"]] == \
        [(topic_name, [1])]
    admin.close()
