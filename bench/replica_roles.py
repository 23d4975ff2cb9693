"""How long one broker's event loop is held when an image brings it thousands of new replicas (issue 17).

One `ReplicaManager` (broker 1 of 3) over real logs in a temporary directory, no network: an image of
`BENCH_REPLICA_ROLES_PARTITIONS` partitions (default 10,000; topics of 10, RF 3, leaders spread) arrives, the logs are
created on worker threads, then the replicas take their roles on the loop. Printed: the loop steps that gave replicas
their roles (how many, the longest, their sum), then what a broker-list change (one broker added, one fenced) holds.
A task yielding the loop between samples measures each step's wall time, so a garbage collection or the log-creating
threads holding the GIL count too (the steps during creation are reported apart, and full collections are listed).

    .venv/bin/python -m bench.replica_roles
"""

import asyncio
import dataclasses
import gc
import os
import tempfile
import time
import uuid
from pathlib import Path

from brokerd.clock import ManualClock
from brokerd.metadata.image import BrokerEndpoint, ClusterImage, PartitionAssignment, TopicMetadata
from brokerd.metadata.store import ImageListener
from brokerd.replication.replica_manager import ReplicaManager
from brokerd.storage import LogManager

BROKERS = tuple(BrokerEndpoint(node, "127.0.0.1", 1) for node in (1, 2, 3))


class _FullCollections:
    """The full (generation 2) garbage collections while installed: each one's milliseconds."""

    def __init__(self) -> None:
        self.pauses: list[float] = []
        self._started = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        elif info["generation"] == 2:
            self.pauses.append(1000 * (time.perf_counter() - self._started))


class _Images:
    """The metadata store as far as the replica manager reads it: the image, and its listeners on a change."""

    def __init__(self, image: ClusterImage) -> None:
        self.image = image
        self._listeners: list[ImageListener] = []

    def add_listener(self, listener: ImageListener) -> None:
        self._listeners.append(listener)

    def set(self, image: ClusterImage) -> float:
        """Replace the image; the milliseconds its listeners held the loop."""
        started = time.perf_counter()
        old, self.image = self.image, image
        for listener in self._listeners:
            listener(old, image)
        return 1000 * (time.perf_counter() - started)


def _image(partitions: int, brokers: tuple[BrokerEndpoint, ...] = BROKERS, version: int = 1, epoch: int = 0
           ) -> ClusterImage:
    """Topics of 10 partitions, RF 3 over brokers 1-3, leaders spread evenly, at leader and partition `epoch`."""
    topics = {}
    for t in range(partitions // 10):
        name = f"t{t}"
        topics[name] = TopicMetadata(name, str(uuid.uuid5(uuid.NAMESPACE_OID, name)), tuple(
            PartitionAssignment(p, 1 + (t * 10 + p) % 3, epoch, (1, 2, 3), (1, 2, 3), epoch) for p in range(10)))
    return ClusterImage("bench", 1, brokers, topics, metadata_version=version)


async def _run(directory: Path, partitions: int, collections: _FullCollections) -> None:
    logs = LogManager([directory], {}, ManualClock())
    logs.startup()
    images = _Images(ClusterImage("bench", 1, BROKERS, {}))
    replicas = ReplicaManager(logs, images, 1, clock=ManualClock())  # type: ignore[arg-type]
    replicas.start()
    try:
        image = _image(partitions)
        print(f"image of {partitions:,} partitions arrives: {images.set(image):.0f} ms")
        role_steps: list[float] = []
        role_steps_without_collections: list[float] = []
        creation_steps: list[float] = []
        while len(replicas.partitions()) < partitions:
            before, collected, started = len(replicas.partitions()), len(collections.pauses), time.perf_counter()
            await asyncio.sleep(0)
            step = 1000 * (time.perf_counter() - started)
            if len(replicas.partitions()) == before:
                creation_steps.append(step)
                continue
            role_steps.append(step)
            role_steps_without_collections.append(step - sum(collections.pauses[collected:]))
        print(f"replicas given their roles in {len(role_steps)} loop step(s): longest {max(role_steps):.0f} ms "
              f"({max(role_steps_without_collections):.0f} ms without full garbage collections), "
              f"sum {sum(role_steps):.0f} ms")
        print(f"while the logs were created on threads: longest loop step {max(creation_steps):.0f} ms, "
              f"{sum(s > 50 for s in creation_steps)} of {len(creation_steps)} over 50 ms")
        added = images.set(dataclasses.replace(image, metadata_version=2,
                                               brokers=(*BROKERS, BrokerEndpoint(4, "h", 4))))
        fenced = images.set(dataclasses.replace(image, metadata_version=3, brokers=tuple(
            dataclasses.replace(b, fenced=b.node_id == 2) for b in BROKERS)))
        print(f"a broker added: {added:.0f} ms; a broker fenced: {fenced:.0f} ms")
    finally:
        await replicas.stop()
        logs.shutdown()


def main() -> None:
    partitions = int(os.environ.get("BENCH_REPLICA_ROLES_PARTITIONS", "10000"))
    collections = _FullCollections()
    gc.callbacks.append(collections)
    with tempfile.TemporaryDirectory(prefix="bench-replica-roles-") as directory:
        asyncio.run(_run(Path(directory), partitions, collections))
    gc.callbacks.remove(collections)
    print(f"full garbage collections: {len(collections.pauses)}, longest {max(collections.pauses, default=0):.0f} ms "
          f"(a serving broker freezes its startup objects out of them, not the replicas created since)")


if __name__ == "__main__":
    main()
