"""Applying the control plane's metadata log to a `ClusterImage` (KRaft's MetadataDelta).

The control plane answers `GET /metadata/changes?since=N` with either a snapshot (the full image) or a delta:
`{"type": "delta", "since": N, "metadata_version": V, "cluster_id", "controller_id", "records": [...]}`, the
newest state of every broker, topic and partition that changed in versions N+1..V (record formats in
`controlplane.cluster.changelog`). Records come ordered by kind: brokers, removed topics, topics, partitions.

Rules (each enforced here, each a `DeltaGapError` when violated, after which the broker loads a snapshot):

* a delta from N to V applies to an image of any version in N..V: records are whole new states and the delta
  holds every one changed after N, so applying it to an image newer than N (e.g. one a concurrent request
  already moved on) also gives version V;
* a `partition_rows` record (a topic's changed partitions; `partitions`, the same as objects, in changes recorded
  before it) applies only to the topic of that name *and id* (one of
  a topic since removed or re-created is skipped); a topic record with an id the image does not hold under
  that name replaces the topic (an empty partition list, which the partitions records that follow fill);
* partition indexes of a topic stay 0..n-1: a record may replace a partition or append the next index; a
  record leaving a gap is an error.

Cost: O(records) of Python work per delta, never a pass over the topics or partitions: untouched topics are shared
(the new image's mappings by name and by id are flat copies of the old ones', ~35 us each at 10,000 topics), and the
new image is told which topics changed (`ClusterImage.derived_from`), so its listeners' work is proportional to them
too (`ClusterImage.changed_topics_since`).
"""

from collections.abc import Callable, Mapping, Sequence

from brokerd.metadata.image import BrokerEndpoint, ClusterImage, PartitionAssignment, TopicMetadata
from brokerd.types import BrokerId, LeaderEpoch, PartitionEpoch

__all__ = ("DeltaGapError", "apply_delta", "is_delta", "parse_row")


class DeltaGapError(Exception):
    """The delta does not apply to this image (another version, or records that leave it inconsistent)."""


def is_delta(body: Mapping) -> bool:
    return body.get("type") == "delta"


def apply_delta(image: ClusterImage, body: Mapping, *, parse_broker: Callable[[Mapping], BrokerEndpoint],
                parse_partition: Callable[[Mapping], PartitionAssignment],
                choose_controller: Callable[[tuple[BrokerEndpoint, ...], object], BrokerId]) -> ClusterImage:
    """The image of version `body["metadata_version"]`: `image` (of a version from `body["since"]` on) with the delta's
    records applied. The callbacks read records as the snapshot parser reads image entries:
    `parse_broker`, `parse_partition`, and `choose_controller(brokers, proposed id)`."""
    since, version = int(body["since"]), int(body["metadata_version"])
    if not since <= image.metadata_version <= version:
        raise DeltaGapError(f"a delta from version {since} to {version} does not apply to version "
                            f"{image.metadata_version}")
    if str(body.get("cluster_id", image.cluster_id)) != image.cluster_id:
        raise DeltaGapError(f"a delta of cluster {body.get('cluster_id')} does not apply to {image.cluster_id}")
    brokers = {b.node_id: b for b in image.brokers}
    broker_configs = image.broker_configs
    topics = dict(image.topics)
    partitions: dict[str, list[PartitionAssignment]] = {}  # topics whose partitions change, copied on first use
    changed: set[str] = set()  # topics whose entry is replaced, added or removed
    for record in body.get("records", ()):
        kind = record["type"]
        if kind == "broker":
            endpoint = parse_broker(record)
            brokers[endpoint.node_id] = endpoint
        elif kind == "broker_removed":
            brokers.pop(int(record["broker_id"]), None)
        elif kind == "broker_configs":
            broker_configs = {str(b): {str(k): str(v) for k, v in c.items()}
                              for b, c in (record.get("broker_configs") or {}).items()}
        elif kind == "topic_removed":
            held = topics.get(record["name"])
            if held is not None and held.topic_id == record["topic_id"]:
                del topics[record["name"]]
                partitions.pop(record["name"], None)
                changed.add(record["name"])
        elif kind == "topic":
            _apply_topic(topics, partitions, record)
            changed.add(record["name"])
        elif kind == "partition_rows":
            for row in record["rows"]:
                _apply_partition(topics, partitions, parse_row(row), record)
        elif kind == "partitions":  # what the control plane recorded before `partition_rows`
            for entry in record["partitions"]:
                _apply_partition(topics, partitions, parse_partition(entry), record)
        else:
            raise DeltaGapError(f"unknown metadata record type {kind!r}")
    for name, entries in partitions.items():
        held = topics[name]
        topics[name] = TopicMetadata(held.name, held.topic_id, tuple(entries), held.configs)
    changed.update(partitions)
    ordered = tuple(sorted(brokers.values(), key=lambda b: b.node_id))
    return ClusterImage(cluster_id=image.cluster_id,
                        controller_id=choose_controller(ordered, body.get("controller_id", image.controller_id)),
                        brokers=ordered, topics=topics, metadata_version=version, broker_configs=broker_configs,
                        derived_from=(image, changed))


def parse_row(row: Sequence) -> PartitionAssignment:
    """A `partition_rows` record's row: [partition, replicas, isr, leader (None: none), leader_epoch,
    partition_epoch, adding_replicas, removing_replicas] (the last two are the control plane's)."""
    try:
        partition, replicas, isr, leader, leader_epoch, partition_epoch = row[:6]
        return PartitionAssignment(int(partition), BrokerId(-1 if leader is None else int(leader)),
                                   LeaderEpoch(int(leader_epoch)), tuple(map(int, replicas)), tuple(map(int, isr)),
                                   PartitionEpoch(int(partition_epoch)))
    except (TypeError, ValueError) as exc:
        raise DeltaGapError(f"malformed partition row {row!r}") from exc


def _configs(record: Mapping) -> dict[str, str]:
    return {k: str(v) for k, v in (record.get("configs") or {}).items() if v is not None}


def _apply_topic(topics: dict[str, TopicMetadata], partitions: dict[str, list[PartitionAssignment]],
                 record: Mapping) -> None:
    name, topic_id = record["name"], str(record["topic_id"])
    held = topics.get(name)
    if held is not None and held.topic_id == topic_id:
        topics[name] = TopicMetadata(name, topic_id, held.partitions, _configs(record))
    else:  # new, or re-created under the same name: its partitions follow
        topics[name] = TopicMetadata(name, topic_id, (), _configs(record))
        partitions[name] = []


def _apply_partition(topics: dict[str, TopicMetadata], partitions: dict[str, list[PartitionAssignment]],
                     assignment: PartitionAssignment, record: Mapping) -> None:
    held = topics.get(record["topic"])
    if held is None or held.topic_id != str(record["topic_id"]):
        return  # a topic since removed or re-created
    entries = partitions.get(held.name)
    if entries is None:
        entries = partitions[held.name] = list(held.partitions)
    index = assignment.partition
    if index < len(entries):
        entries[index] = assignment
    elif index == len(entries):
        entries.append(assignment)
    else:
        raise DeltaGapError(f"partition {held.name}-{index} after {len(entries)} partitions")
