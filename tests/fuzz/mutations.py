"""Structure-aware request mutation for the live fuzz soak: valid requests of every served API and version,
built with kio, with one field (or a few wire bytes) made hostile.

Bases are the request seeds (`tests/fuzz/corpus/request/`: real client traffic, plus one kio-generated request
for every served version no client sent), decoded with the broker's codec. `RequestMutator.frame()` picks a
base, replaces a random leaf of its entity tree — integers with negative, zero and extreme values (counts,
sizes, partitions, epochs, timeouts), strings with "", 32 KB or unknown names, arrays emptied or repeated,
UUIDs with unknown topic ids, record batches with `hostile_batches()` — and encodes it with kio. kio's encoder
is pure Python (~1 ms a frame), so `pool()` makes a few thousand such frames and `variant()` derives each frame
sent from one of them: a new correlation id and, one time in two, a random int32 of the encoding overwritten
with -1, 2**31-1 or -2**31 (lengths and counts no encoder would write) or the frame cut short. Requests
that would change the cluster for real at scale (CreateTopics, CreatePartitions) are sent with
`validate_only`; names come from a small pool, so the soak never names the topics and groups of its
well-behaved clients.
"""

import dataclasses
import datetime
import random
import struct
import uuid
from collections import Counter
from pathlib import Path

from kio.serial.errors import SerialError

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.errors import MalformedRequestError
from brokerd.protocol.messages import encode_request, message_codec, parse_request_header, peek_api
from brokerd.records import batch as rb
from brokerd.records.builder import build_batch

CORPUS = Path(__file__).resolve().parent / "corpus" / "request"
EXTREME_INTS = (-1, 0, 1, -2**31, 2**31 - 1, -2**15, 2**15 - 1, -2**63, 2**63 - 1, 99_999, -99_999)
NAMES = ("fuzz-a", "fuzz-b", "fuzz-c", "unknown-topic", "", "x" * 32_768, "ü" * 300, "a/b", "..")
VALIDATE_ONLY_APIS = (ApiKey.CREATE_TOPICS, ApiKey.CREATE_PARTITIONS)


def hostile_batches() -> list[bytes]:
    """Record batches a producer should never send: each valid one broken in one way."""
    base = bytearray(build_batch([(b"k%d" % i, b"v%d" % i) for i in range(5)], timestamps=[1_700_000_000_000] * 5))

    def resealed(batch: bytearray) -> bytes:
        struct.pack_into(">I", batch, rb.CRC_OFFSET, rb.compute_crc(memoryview(batch), 0, len(batch)))
        return bytes(batch)

    def with_header(**fields: int) -> bytes:
        header = rb.read_header(base)._replace(**fields)
        batch = bytearray(base)
        rb.HEADER.pack_into(batch, 0, *header)
        return resealed(batch)

    wrong_crc = bytearray(base)
    wrong_crc[-1] ^= 0xFF
    out_of_order = bytearray(base)
    records = [r.raw.tobytes() for r in rb.iter_records(memoryview(base), rb.read_header(base))]
    out_of_order[rb.HEADER_SIZE:] = b"".join(reversed(records))  # offset deltas 4, 3, 2, 1, 0
    bomb = bytes(build_batch([(b"k", bytes(1_000_000))], codec=rb.ZSTD))  # ~1 MB of zeros in ~100 bytes: 1000x+
    gzip_bomb = bytes(build_batch([(b"k", bytes(5_000_000))], codec=rb.GZIP))
    return [
        bytes(wrong_crc), resealed(out_of_order), bomb, gzip_bomb,
        with_header(record_count=2**31 - 1), with_header(record_count=-1), with_header(last_offset_delta=-5),
        with_header(batch_length=2**31 - 1), with_header(batch_length=-12), with_header(magic=7),
        with_header(attributes=0x07), with_header(attributes=0x20), with_header(producer_id=42, base_sequence=-3),
        with_header(base_timestamp=-2**63), bytes(base[:30]), bytes(base) * 3, b"",
    ]


def load_bases() -> list[tuple[int, int, object]]:
    """(api_key, version, request entity) of every request seed."""
    bases = []
    for path in sorted(CORPUS.iterdir()):
        frame = path.read_bytes()
        api_key, version, _ = peek_api(frame)
        codec = message_codec(api_key, version)
        try:
            _header, offset = parse_request_header(frame, codec.flexible)
            bases.append((api_key, version, codec.decode_request(frame, offset)))
        except MalformedRequestError:
            continue
    return bases


class RequestMutator:
    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)
        self._bases = load_bases()
        self._batches = hostile_batches()
        self.sent: Counter[str] = Counter()
        """Frames sent per API name (counted by `variant`)."""

    def frame(self, correlation_id: int) -> bytes:
        """One size-prefixed request frame."""
        while True:
            api_key, version, entity = self._rng.choice(self._bases)
            for _ in range(self._rng.choice((1, 1, 1, 2, 3))):
                entity = self._mutate(entity, depth=0)
            if api_key in VALIDATE_ONLY_APIS:
                if not hasattr(entity, "validate_only"):
                    continue
                entity = dataclasses.replace(entity, validate_only=True)
            try:
                frame = encode_request(api_key, version, correlation_id, "strom-fuzz", entity)
            except (SerialError, ValueError, TypeError, OverflowError, struct.error, AttributeError):
                continue  # a value this field's type cannot encode: pick again
            return frame

    def pool(self, size: int) -> list[bytes]:
        return [self.frame(0) for _ in range(size)]

    def variant(self, frame: bytes, correlation_id: int) -> bytes:
        """`frame` with `correlation_id`, and one time in two an int32 overwritten or the frame truncated;
        counted in `sent` under its API's name."""
        out = bytearray(frame)
        struct.pack_into(">i", out, 8, correlation_id)
        roll = self._rng.random()
        if roll < 0.4 and len(out) > 18:
            position = self._rng.randrange(14, len(out) - 3)  # after size, api key, version, correlation id
            struct.pack_into(">i", out, position, self._rng.choice((-1, 2**31 - 1, -2**31)))
        elif roll < 0.5 and len(out) > 14:
            cut = self._rng.randrange(14, len(out))
            out = out[:cut]
            struct.pack_into(">i", out, 0, cut - 4)
        self.sent[ApiKey(struct.unpack_from(">h", out, 4)[0]).name] += 1
        return bytes(out)

    def _mutate(self, value: object, depth: int) -> object:
        rng = self._rng
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = [f.name for f in dataclasses.fields(value)]
            if not fields:
                return value
            name = rng.choice(fields)
            return dataclasses.replace(value, **{name: self._mutate(getattr(value, name), depth + 1)})
        if isinstance(value, tuple):
            if not value or rng.random() < 0.3:
                return rng.choice(((), value * rng.choice((2, 10)) if len(value) < 10 else value))
            index = rng.randrange(len(value))
            return value[:index] + (self._mutate(value[index], depth + 1),) + value[index + 1:]
        if isinstance(value, bool):
            return not value
        if isinstance(value, int):
            return type(value)(rng.choice(EXTREME_INTS)) if type(value) is not int else rng.choice(EXTREME_INTS)
        if isinstance(value, str):
            return rng.choice(NAMES)
        if isinstance(value, bytes):
            return type(value)(rng.choice(self._batches)) if type(value) is not bytes else rng.choice(self._batches)
        if isinstance(value, uuid.UUID):
            return rng.choice((uuid.uuid4(), uuid.UUID(int=0)))
        if isinstance(value, datetime.timedelta):
            return type(value)(milliseconds=rng.choice((-1, 0, 2**31 - 1)))
        if value is None:
            return rng.choice(NAMES)
        return value
