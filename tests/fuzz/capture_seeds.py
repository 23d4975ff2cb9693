"""Rebuild the fuzz seed corpora from real client traffic (run by hand; the output is committed, kept small).

    python -m tests.fuzz.capture_seeds

Starts a standalone broker advertising a recording proxy in front of it, then drives it with confluent-kafka
(librdkafka: producers with every codec, a consumer group, admin calls) and kafka-python (older request
versions, legacy message sets through Produce v2). Writes, under `tests/fuzz/corpus/`:
`request/` (up to two frames per API and version seen; for the served versions no client sent, one
request generated from the kio schema), `record_batch/` (the records of every Produce, one
per codec and client), `consumer_protocol/` (JoinGroup subscriptions and SyncGroup assignments),
`consumer_offsets/` (the broker's `__consumer_offsets` partitions, as the target's record list).
"""

import asyncio
import hashlib
import struct
import tempfile
import threading
from collections import Counter
from pathlib import Path

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from hypothesis import strategies
from kafka import KafkaConsumer, KafkaProducer
from kio.static.primitive import Records

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.api_versions import SUPPORTED_APIS
from brokerd.protocol.messages import encode_request, message_codec, parse_request_header, peek_api
from brokerd.records import batch as rb
from tests.fuzz.targets import encode_offsets_records
from tests.support.broker import standalone_broker
from tests.support.ports import free_port

CORPUS = Path(__file__).resolve().parent / "corpus"
FRAMES_PER_VERSION = 2


class RecordingProxy:
    """Forwards 127.0.0.1:`port` to the broker and keeps every client → broker frame."""

    def __init__(self, port: int, broker_port: int) -> None:
        self.port = port
        self._broker_port = broker_port
        self.frames: list[bytes] = []
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._loop.run_forever, daemon=True).start()
        asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result(10)

    async def _serve(self) -> None:
        await asyncio.start_server(self._client, "127.0.0.1", self.port)

    async def _client(self, client_reader, client_writer) -> None:
        broker_reader, broker_writer = await asyncio.open_connection("127.0.0.1", self._broker_port)

        async def upstream() -> None:
            try:
                while True:
                    size = await client_reader.readexactly(4)
                    frame = await client_reader.readexactly(struct.unpack(">i", size)[0])
                    self.frames.append(frame)
                    broker_writer.write(size + frame)
            except (asyncio.IncompleteReadError, ConnectionError):
                broker_writer.close()

        async def downstream() -> None:
            try:
                while data := await broker_reader.read(65536):
                    client_writer.write(data)
            except ConnectionError:
                pass
            client_writer.close()

        await asyncio.gather(upstream(), downstream())


def drive_clients(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic("seeds", 2, 1), NewTopic("seeds-compact", 1, 1, config={
            "cleanup.policy": "compact"})]).values():
        future.result(30)
    for future in admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, "seeds")]).values():
        future.result(30)
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        producer = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 5,
                             "enable.idempotence": codec == "zstd"})
        for i in range(5):
            producer.produce("seeds", key=b"k%d" % i, value=b"%s value %d" % (codec.encode(), i), partition=i % 2,
                             headers=[("h", b"v")])
            producer.produce("seeds-compact", key=b"k%d" % i, value=b"v%d" % i)
        producer.flush(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "seeds-group", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe(["seeds"])
    seen = 0
    while seen < 10:
        message = consumer.poll(1.0)
        if message is not None and message.error() is None:
            seen += 1
    consumer.commit(asynchronous=False)
    consumer.close()
    list(admin.list_consumer_groups().result(30).valid)
    legacy = KafkaProducer(bootstrap_servers=bootstrap, api_version=(0, 10, 1), compression_type="gzip")
    for i in range(3):
        legacy.send("seeds", key=b"legacy%d" % i, value=b"legacy value %d" % i)
    legacy.flush(30)
    legacy.close()
    modern = KafkaProducer(bootstrap_servers=bootstrap)
    modern.send("seeds", key=b"kp", value=b"kafka-python")
    modern.flush(30)
    modern.close()
    reader = KafkaConsumer("seeds", bootstrap_servers=bootstrap, group_id="seeds-kp", auto_offset_reset="earliest",
                           consumer_timeout_ms=5000)
    for _ in zip(range(5), reader, strict=False):
        pass
    reader.commit()
    reader.close()


def write(target: str, data: bytes) -> None:
    directory = CORPUS / target
    directory.mkdir(parents=True, exist_ok=True)
    (directory / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


def save_frames(frames: list[bytes]) -> set[tuple[int, int]]:
    """Write the seeds found in `frames`; return the (api_key, version) pairs seen."""
    per_version: Counter[tuple[int, int]] = Counter()
    for frame in frames:
        api_key, version, _ = peek_api(frame)
        codec = message_codec(api_key, version)
        if codec is None:
            continue
        if per_version[api_key, version] < FRAMES_PER_VERSION:
            per_version[api_key, version] += 1
            write("request", frame)
        _header, offset = parse_request_header(frame, codec.flexible)
        request = codec.decode_request(frame, offset)
        if api_key == ApiKey.PRODUCE:
            for topic in request.topic_data:
                for partition in topic.partition_data:
                    if partition.records:
                        write("record_batch", bytes(partition.records))
        elif api_key == ApiKey.JOIN_GROUP:
            for protocol in request.protocols:
                write("consumer_protocol", bytes(protocol.metadata))
        elif api_key == ApiKey.SYNC_GROUP:
            for assignment in request.assignments:
                write("consumer_protocol", bytes(assignment.assignment))
    return set(per_version)


def synthesize_requests(seen: set[tuple[int, int]]) -> None:
    """One request generated from its kio schema (hypothesis) for every served API version no client sent."""
    strategies.register_type_strategy(Records, strategies.builds(Records, strategies.binary(max_size=64)))
    for api_key, served in SUPPORTED_APIS.items():
        for version in range(served.min_version, served.max_version + 1):
            if (api_key, version) not in seen:
                request = strategies.from_type(message_codec(api_key, version).request_type).example()
                write("request", encode_request(api_key, version, 1, "seeds", request)[4:])


def save_offsets_partitions(log_dir: Path) -> None:
    for segment in sorted(log_dir.glob("__consumer_offsets-*/*.log")):
        data = memoryview(segment.read_bytes())
        records = [(bytes(r.key), None if r.value is None else bytes(r.value))
                   for position, header in rb.iter_batches(data[:rb.whole_batches_length(data)])
                   if not header.is_control
                   for r in rb.iter_records(data[position:position + header.size], header) if r.key is not None]
        if records:
            write("consumer_offsets", encode_offsets_records(records))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        proxy_port = free_port()
        overrides = {"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy_port}",
                     "group.initial.rebalance.delay.ms": "0"}
        with standalone_broker(Path(tmp), overrides=overrides) as broker:
            proxy = RecordingProxy(proxy_port, broker.port)
            proxy.start()
            drive_clients(f"127.0.0.1:{proxy_port}")
            frames = list(proxy.frames)
        synthesize_requests(save_frames(frames))
        save_offsets_partitions(broker.log_dir)
    for target in sorted(p.name for p in CORPUS.iterdir()):
        files = list((CORPUS / target).iterdir())
        print(f"{target}: {len(files)} seeds, {sum(f.stat().st_size for f in files)} bytes")


if __name__ == "__main__":
    main()
