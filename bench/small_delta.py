"""What a one-partition metadata change costs a broker at scale, from the answer's bytes to the new leader in a
client's Metadata answer (issue 17: a leader change reaches every broker's Metadata answers in p99 <= 100 ms).

Broker 1 of 3 hosting every partition of `_image` (topics of 10 partitions, RF 3, leaders spread; `bench.replica_roles`)
at each of `BENCH_SMALL_DELTA_SIZES` (10,000 and 100,000 partitions), no network and no disk: a real
`ClusterMetadataStore` (never started: its image set in place) with a real `ReplicaManager` listening, its replicas
`Partition`s over an idle stand-in log (`bench.idle_loop_holds`), its followers in fetchers that are never started. The
Metadata handler's topic entries are all built once first (as after a client's all-topics request), and everything
alive then is frozen out of garbage collection (as `Broker.start` does).

Then `BENCH_SMALL_DELTA_CHANGES` (200) changes, each a delta as the control plane sends it (a `partition_rows` record
moving partition 0 of one topic, a different topic each time, to its next replica: this broker becomes its leader, a
follower of another, or stays a follower under a new leader). Per change, in wall milliseconds (`time.perf_counter`;
garbage collections included, as on a broker's loop):

* `decode`: the answer's JSON (`json.loads`, as `ClusterMetadataStore._image_after` for a small answer);
* `image`: the new `ClusterImage` (`cluster.image_after`: `delta.apply_delta`);
* `apply`: `ClusterMetadataStore._apply` (the image swapped in, its listeners: the replica manager's role changes);
* `v4`, `v12`: the first named-topic Metadata answer for the changed topic after it (the handler, then kio's
  encoding of the body), v4 by name, v12 by topic id;
* `total`: their sum (what the broker spends from the bytes to the Metadata answer).

Printed per size: median, p99 and max of each, and the full collections the changes provoked. Run under quiet-bench, on
main and on the branch (`git archive` a tree into /tmp, alternated):

    .venv/bin/python -m bench.small_delta
"""

import asyncio
import gc
import json
import os
import statistics
import time
import types
import uuid

from kio.index import load_request_schema, load_response_schema

from bench.idle_loop_holds import _IdleLog
from bench.replica_roles import _image
from brokerd.metadata.cluster import ClusterMetadataStore, ClusterSettings, image_after
from brokerd.metadata.image import ClusterImage
from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.messages import message_codec
from brokerd.protocol.responses import response_schema
from brokerd.replication.fetcher import ReplicaFetcher
from brokerd.replication.partition import Partition
from brokerd.replication.replica_manager import ReplicaManager
from brokerd.server.handlers import topic_metadata

SIZES = [int(n) for n in os.environ.get("BENCH_SMALL_DELTA_SIZES", "10000,100000").split(",")]
CHANGES = int(os.environ.get("BENCH_SMALL_DELTA_CHANGES", "200"))
STAGES = ("decode", "image", "apply", "v4", "v12", "total")


class _FullCollections:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "stop" and info["generation"] == 2:
            self.count += 1


class _Client:
    """A client's named-topic Metadata request at one version, answered as the dispatcher would (handler + body)."""

    def __init__(self, store: ClusterMetadataStore, version: int) -> None:
        self.version = version
        self.response = response_schema(load_response_schema(ApiKey.METADATA, version))
        self._request_schema = response_schema(load_request_schema(ApiKey.METADATA, version))
        self._codec = message_codec(ApiKey.METADATA, version)
        self.services = types.SimpleNamespace(metadata=store, config=types.SimpleNamespace(
            auto_create_topics_enable=False))
        self.header = types.SimpleNamespace(api_version=version, client_id="bench")
        self.client_host = "127.0.0.1"

    async def all_topics(self) -> None:
        request = self._request_schema.MetadataRequest(topics=None, allow_auto_topic_creation=False)
        await topic_metadata.handle(request, self)

    async def named(self, name: str, topic_id: uuid.UUID) -> object:
        """The answer's topic entry (checked by the caller) after encoding the whole answer."""
        fields = {"name": None, "topic_id": topic_id} if self.version >= 12 else {"name": name}
        if self.version < 10:
            fields.pop("topic_id", None)
        request = self._request_schema.MetadataRequest(
            topics=(self._request_schema.MetadataRequestTopic(**fields),), allow_auto_topic_creation=False)
        response = await topic_metadata.handle(request, self)
        self._codec.encode_response_body(response)
        return response.topics[0]


def _store(image: ClusterImage) -> tuple[ClusterMetadataStore, ReplicaManager]:
    store = ClusterMetadataStore(ClusterSettings(url="http://127.0.0.1:1", secret="bench", broker_id=1,
                                                 listeners="PLAINTEXT://127.0.0.1:9092"))
    store._image = image
    replicas = ReplicaManager(None, store, 1, metrics_enabled=False)  # type: ignore[arg-type]
    now = replicas._clock.monotonic_ms()
    for source in image.brokers:
        if source.node_id != 1:  # never started: `fetcher.add` only records the partition
            replicas._fetchers[source.node_id] = ReplicaFetcher(source, 1, replicas.config)
    for name, topic in image.topics.items():
        for assignment in topic.partitions:
            partition = Partition(name, assignment.partition, 1, _IdleLog(), replicas)  # type: ignore[arg-type]
            replicas._partitions[partition.key] = partition
            if assignment.leader_id == 1:
                partition.make_leader(assignment, now)
            else:
                partition.make_follower(assignment)
                replicas._fetchers[assignment.leader_id].add(partition)
        replicas._topic_ids[name], replicas._topic_configs[name], replicas._min_isr[name] = topic.topic_id, {}, 1
    replicas._started = True
    return store, replicas


def _leader_move(image: ClusterImage, change: int) -> tuple[bytes, str, int]:
    """A `/metadata/changes` answer moving partition 0 of one topic to its next replica: the bytes, the topic's name
    and the new leader."""
    topic = image.topics[f"t{(change * 7919) % len(image.topics)}"]
    held = topic.partitions[0]
    leader = held.replicas[(held.replicas.index(held.leader_id) + 1) % len(held.replicas)]
    row = [0, list(held.replicas), list(held.isr), leader, held.leader_epoch + 1, held.partition_epoch + 1, [], []]
    body = {"type": "delta", "cluster_id": image.cluster_id, "controller_id": 1, "since": image.metadata_version,
            "metadata_version": image.metadata_version + 1,
            "records": [{"type": "partition_rows", "topic": topic.name, "topic_id": topic.topic_id, "rows": [row]}]}
    return json.dumps(body).encode(), topic.name, leader


async def _measure(partitions: int) -> None:
    store, replicas = _store(_image(partitions, epoch=1))
    v4, v12 = _Client(store, 4), _Client(store, 12)
    topic_metadata._entries = topic_metadata._TopicEntries()
    topic_metadata._bodies = topic_metadata._AllTopicsBodies()
    await v12.all_topics()  # every topic's entry built once, as after a client's all-topics request
    gc.collect()
    gc.freeze()
    collections = _FullCollections()
    gc.callbacks.append(collections)
    times: dict[str, list[float]] = {stage: [] for stage in STAGES}
    try:
        for change in range(CHANGES):
            raw, name, leader = _leader_move(store.image, change)
            started = time.perf_counter()
            body = json.loads(raw)
            decoded = time.perf_counter()
            image = image_after(store.image, body)
            built = time.perf_counter()
            assert image is not None
            store._apply(image)
            applied = time.perf_counter()
            entry4 = await v4.named(name, image.topics[name].uuid)
            answered4 = time.perf_counter()
            entry12 = await v12.named(name, image.topics[name].uuid)
            answered12 = time.perf_counter()
            assert entry4.partitions[0].leader_id == entry12.partitions[0].leader_id == leader
            assert replicas.replica(name, 0).is_leader == (leader == 1)  # type: ignore[union-attr]
            for stage, since, until in (("decode", started, decoded), ("image", decoded, built),
                                        ("apply", built, applied), ("v4", applied, answered4),
                                        ("v12", answered4, answered12), ("total", started, answered12)):
                times[stage].append(1000 * (until - since))
    finally:
        gc.callbacks.remove(collections)
        gc.unfreeze()
    cells = []
    for stage in STAGES:
        ordered = sorted(times[stage])
        p99 = ordered[min(len(ordered) - 1, round(0.99 * len(ordered)) - 1)]
        cells.append(f"{statistics.median(ordered):.3f} / {p99:.3f} / {ordered[-1]:.2f}")
    print(f"| {partitions:,} | {' | '.join(cells)} | {collections.count} |", flush=True)


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.1f}; {CHANGES} one-partition leader moves per size; wall ms per change, "
          f"median / p99 / max")
    print(f"| partitions | {' | '.join(STAGES)} | full collections |")
    print(f"|---|{'---|' * len(STAGES)}---|")
    for partitions in SIZES:
        asyncio.run(_measure(partitions))


if __name__ == "__main__":
    main()
