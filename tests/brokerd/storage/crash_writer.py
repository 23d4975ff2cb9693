"""Crash-test writer: appends deterministic batches to one log forever, reporting fsynced offsets.

Usage: python crash_writer.py DATA_DIR SEED. Opens (and so recovers) the log `crash-0` in DATA_DIR,
prints `ready <log_end_offset>`, then appends batch after batch. Batch number i holds `i % 7 + 1`
records keyed `i` with values `expected_value(i, j)`; after every few appends it flushes (fsync), writes
the checkpoints and prints `fsynced <offset>`: every offset below it is durable. The parent SIGKILLs it
at a random moment. Batches are encoded by hand (struct + CRC-32C) to keep start-up fast.
"""

import random
import struct
import sys
from pathlib import Path

from crc32c import crc32c

from brokerd.clock import SystemClock
from brokerd.records.batch import HEADER
from brokerd.storage import LogManager

DEFAULTS = {"segment.bytes": 16_384, "index.interval.bytes": 512, "retention.ms": -1}


def expected_value(batch_number: int, index: int) -> bytes:
    return b"%d/%d:" % (batch_number, index) + bytes([batch_number % 251]) * (batch_number % 97)


def varint(value: int) -> bytes:
    raw = (value << 1) ^ (value >> 63)
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def encode_batch(batch_number: int, now_ms: int) -> bytearray:
    key = b"%d" % batch_number
    count = batch_number % 7 + 1
    body = bytearray()
    for j in range(count):
        value = expected_value(batch_number, j)
        record = b"\x00" + varint(0) + varint(j) + varint(len(key)) + key + varint(len(value)) + value + varint(0)
        body += varint(len(record)) + record
    batch = bytearray(HEADER.size) + body
    HEADER.pack_into(batch, 0, 0, len(batch) - 12, -1, 2, 0, 0, count - 1, now_ms, now_ms, -1, -1, -1, count)
    struct.pack_into(">I", batch, 17, crc32c(memoryview(batch)[21:]))
    return batch


def batch_number_at(log_end_offset: int) -> int:
    """The number of the batch starting at `log_end_offset` (batches are contiguous from 0)."""
    number, offset = 0, 0
    while offset < log_end_offset:
        offset += number % 7 + 1
        number += 1
    return number


def main() -> None:
    data_dir, seed = Path(sys.argv[1]), int(sys.argv[2])
    rng = random.Random(seed)
    clock = SystemClock()
    manager = LogManager([data_dir], DEFAULTS, clock, max_open_files=8)
    manager.startup()
    log = manager.get_or_create_log("crash", 0, {})
    number = batch_number_at(log.log_end_offset)
    print(f"ready {log.log_end_offset}", flush=True)
    while True:
        for _ in range(rng.randint(1, 12)):
            log.append_as_leader(encode_batch(number, clock.now_ms()), leader_epoch=1)
            number += 1
        log.flush()
        if rng.random() < 0.3:
            manager.write_checkpoints()
        print(f"fsynced {log.log_end_offset}", flush=True)


if __name__ == "__main__":
    main()
