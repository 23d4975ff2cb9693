"""`make bench-metadata-answer`: what a client's all-topics Metadata answer costs a broker's event loop right
after a metadata change, with every topic's entry rebuilt (before: the entries were dropped on every change)
and with only the changed topic's entry rebuilt (after: `brokerd.server.handlers.topic_metadata._TopicEntries`),
in the same run, in this process; and what a repeat of that request costs on the same image (the encoded body
kept: `topic_metadata._AllTopicsBodies`).

A synthetic image of topics of 10 partitions, RF 3 over 3 brokers (as `bench.metadata`), is changed as a broker
changes it (`brokerd.metadata.cluster.apply_body` of a one-partition leader-move delta). Per change it times, in
CPU seconds of this process (`time.process_time`): building the topic entries, then the first Metadata v12
answer on the new image (the handler with its entries built: the kio encoding of the body, once per image),
then a repeat request (the handler plus `frame_response`, as the dispatcher frames it). "before" serves the
changed image from empty caches, which is what the old per-image cache did after every change. Also timed: the
same answer after a broker is fenced (every topic's offline replicas change, so every entry is rebuilt: the
worst case) and after a snapshot of an unchanged state (every object new, entries kept by comparison).

Environment: BENCH_METADATA_ANSWER_SIZES (10000,100000 partitions), BENCH_METADATA_ANSWER_CHANGES (5 per size:
the median is reported).
"""

import asyncio
import gc
import os
import statistics
import time
import uuid

from kio.index import load_request_schema, load_response_schema

from brokerd.metadata.cluster import apply_body, parse_image
from brokerd.metadata.image import ClusterImage
from brokerd.protocol.messages import frame_response
from brokerd.protocol.responses import response_schema
from brokerd.server.handlers import topic_metadata
from brokerd.server.handlers._authorized import NOT_REQUESTED

SIZES = [int(n) for n in os.environ.get("BENCH_METADATA_ANSWER_SIZES", "10000,100000").split(",")]
CHANGES = int(os.environ.get("BENCH_METADATA_ANSWER_CHANGES", "5"))
PARTITIONS_PER_TOPIC = 10
METADATA, VERSION = 3, 12


class _Broker:
    """Just enough of a broker for the Metadata handler's all-topics path: the image and the response schema."""

    def __init__(self, image: ClusterImage) -> None:
        self.response = response_schema(load_response_schema(METADATA, VERSION))
        self.version = VERSION
        self.services = self
        self.metadata = self
        self.image = image
        self.request = response_schema(load_request_schema(METADATA, VERSION)).MetadataRequest(
            topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        self.loop = asyncio.new_event_loop()

    def answer(self) -> tuple[float, float, float, int]:
        """CPU seconds (building the topic entries, the first answer on this image: encoding the body, a repeat
        answer: the kept body framed) and the answer's bytes."""
        entries = topic_metadata._entries
        start = time.process_time()
        for topic in self.image.topics.values():
            entries.get(self, self.image, topic, NOT_REQUESTED)
        built = time.process_time()
        first = self.loop.run_until_complete(topic_metadata.handle(self.request, self))
        encoded = time.process_time()
        repeat = self.loop.run_until_complete(topic_metadata.handle(self.request, self))
        frame_response(1, repeat.size)
        repeated = time.process_time()
        assert repeat.chunks == first.chunks
        return built - start, encoded - built, repeated - encoded, 4 + 4 + first.size


def snapshot(partitions: int) -> dict:
    topics = []
    for t in range(partitions // PARTITIONS_PER_TOPIC):
        topics.append({"name": f"topic-{t:06d}", "topic_id": str(uuid.UUID(int=t + 1)), "partitions": [
            {"partition": p, "replicas": [1 + (t + p + k) % 3 for k in range(3)], "isr": [1, 2, 3],
             "leader": 1 + (t + p) % 3, "leader_epoch": 1} for p in range(PARTITIONS_PER_TOPIC)]})
    return {"cluster_id": "bench", "controller_id": 1, "metadata_version": 1, "topics": topics,
            "brokers": [{"broker_id": b, "listeners": f"PLAINTEXT://127.0.0.1:{9000 + b}"} for b in (1, 2, 3)]}


def leader_move(image: ClusterImage, change: int) -> dict:
    """A delta moving partition 0 of one topic to the next replica (as the control plane's log records it)."""
    topic = list(image.topics.values())[(change * 7919) % len(image.topics)]
    held = topic.partitions[0]
    leader = held.replicas[(held.replicas.index(held.leader_id) + 1) % len(held.replicas)]
    return {"type": "delta", "cluster_id": image.cluster_id, "controller_id": 1, "since": image.metadata_version,
            "metadata_version": image.metadata_version + 1, "records": [
                {"type": "partitions", "topic": topic.name, "topic_id": topic.topic_id, "partitions": [
                    {"partition": 0, "replicas": list(held.replicas), "isr": list(held.isr), "leader": leader,
                     "leader_epoch": held.leader_epoch + 1}]}]}


def fence(image: ClusterImage) -> dict:
    return {"type": "delta", "cluster_id": image.cluster_id, "controller_id": 1, "since": image.metadata_version,
            "metadata_version": image.metadata_version + 1, "records": [
                {"type": "broker", "broker_id": 3, "listeners": "PLAINTEXT://127.0.0.1:9003", "state": "fenced"}]}


def ms(seconds: float) -> str:
    return f"{1000 * seconds:,.0f}"


def measure(partitions: int) -> None:
    body = snapshot(partitions)
    broker = _Broker(parse_image(body))
    broker.answer()  # every entry built once, as after the broker's first all-topics request
    before_build, before_encode, after_build, after_encode, repeats = [], [], [], [], []
    for change in range(CHANGES):
        broker.image = apply_body(broker.image, leader_move(broker.image, change))
        gc.collect()
        warm = topic_metadata._entries
        topic_metadata._entries = topic_metadata._TopicEntries()  # before: nothing kept across the change
        build, encode, _, size = broker.answer()
        before_build.append(build)
        before_encode.append(encode)
        topic_metadata._entries = warm  # after: the entries of the unchanged topics kept
        topic_metadata._bodies = topic_metadata._AllTopicsBodies()  # the body of this image not yet encoded
        gc.collect()
        build, encode, repeat, _ = broker.answer()
        after_build.append(build)
        after_encode.append(encode)
        repeats.append(repeat)
    gc.collect()
    broker.image = apply_body(broker.image, fence(broker.image))
    fenced_build, fenced_encode, _, _ = broker.answer()
    broker.image = parse_image({**body, "metadata_version": broker.image.metadata_version + 1})
    broker.answer()  # the state before the fence again, from a snapshot (every entry rebuilt: the fence ended)
    broker.image = parse_image({**body, "metadata_version": broker.image.metadata_version + 1})
    gc.collect()
    unchanged_build, _, _, _ = broker.answer()  # the same state, every object new: kept by comparison
    median = statistics.median
    first = median(after_build) + median(after_encode)
    print(f"| {partitions:,} | {size:,} | {ms(median(before_build))} + {ms(median(before_encode))} | "
          f"{ms(median(after_build))} + {ms(median(after_encode))} | "
          f"{median(before_build) / median(after_build):.0f}x / "
          f"{(median(before_build) + median(before_encode)) / first:.1f}x | "
          f"{1000 * median(repeats):.3f} | {first / median(repeats):,.0f}x | "
          f"{ms(fenced_build)} + {ms(fenced_encode)} | {ms(unchanged_build)} |", flush=True)


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.1f}; median of {CHANGES} one-partition leader moves; CPU ms of one "
          f"all-topics Metadata v{VERSION} answer = build entries + kio encode (first answer on the image), and "
          f"of a repeat request on the same image (kept body + frame)")
    print("| partitions | answer bytes | before: all entries rebuilt | after: one topic rebuilt | "
          "build / total ratio | repeat request (ms) | first / repeat | after a broker fence (all rebuilt) | "
          "build after an equal snapshot |")
    print("|---|---|---|---|---|---|---|---|---|")
    for partitions in SIZES:
        measure(partitions)


if __name__ == "__main__":
    main()
