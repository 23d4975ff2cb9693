"""Metadata responses at scale: a topic's entry is built once per image (and response version and
operations), served again to every request while that image is current, and rebuilt from a new image."""

from types import SimpleNamespace

from kio.index import load_response_schema
from kio.static.primitive import i32

from brokerd.metadata.image import BrokerEndpoint, ClusterImage, PartitionAssignment, TopicMetadata
from brokerd.protocol.responses import response_schema
from brokerd.server.handlers.topic_metadata import _TopicEntries

METADATA = 3


def image(leader: int) -> ClusterImage:
    topic = TopicMetadata("t", "4f0e2a6c-7d1b-4c4e-9a51-0d1f6b3e2a10",
                          (PartitionAssignment(0, leader, 1, (1, 2), (1, 2)),))
    return ClusterImage("c", 1, (BrokerEndpoint(1, "h", 1), BrokerEndpoint(2, "h", 2)), {"t": topic})


def context(version: int) -> SimpleNamespace:
    return SimpleNamespace(response=response_schema(load_response_schema(METADATA, version)))


def test_a_topic_entry_is_built_once_per_image_and_version():
    entries, first = _TopicEntries(), image(leader=1)
    v12, v1 = context(12), context(1)
    entry = entries.get(v12, first, first.topics["t"], i32(0))
    assert entries.get(v12, first, first.topics["t"], i32(0)) is entry
    assert entry.partitions[0].leader_id == 1
    assert entries.get(v1, first, first.topics["t"], i32(0)) is not entry  # another response version
    assert entries.get(v12, first, first.topics["t"], i32(8)) is not entry  # other authorized operations
    second = image(leader=2)
    rebuilt = entries.get(v12, second, second.topics["t"], i32(0))
    assert rebuilt is not entry and rebuilt.partitions[0].leader_id == 2
