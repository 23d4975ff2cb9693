"""Storage benchmark (`make bench-storage`): the commit log against the raw limits of this machine.

Append: 1 GiB as 1 MiB record batches of 1 KiB records through `Log.append_as_leader` (validation,
CRC-32C, offset assignment, page-cache write; no fsync, Kafka's default flush policy) versus a plain
buffered write of the same bytes, interleaved slice by slice (see `interleaved_writes`).
Read: the log read back through `Log.read` regions and `os.sendfile` to a loopback socket drained by
another process, versus `os.sendfile` of one whole file. Repeated; the medians and their ratios are
printed (targets: append >= 70 % of raw write, read >= 80 % of raw sendfile).
"""

import multiprocessing
import os
import shutil
import socket
import statistics
import tempfile
import time
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatchBuilder

from brokerd.clock import SystemClock
from brokerd.records import batch as rb
from brokerd.storage import LogManager

TOTAL_BYTES = 1 << 30
BATCH_BYTES = 1 << 20
RECORD_BYTES = 1024
ROUNDS = 3
FETCH_MAX_BYTES = BATCH_BYTES
SLICE_BATCHES = 32


def one_mib_batch() -> bytearray:
    """A ~1 MiB batch of 1 KiB records (built once, outside the timed loops)."""
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 30)
    now = int(time.time() * 1000)
    value = os.urandom(RECORD_BYTES - 16)
    delta = 0
    while builder.size() + RECORD_BYTES + 32 <= BATCH_BYTES:
        builder.append(delta, now, b"key-%08d" % delta, value, [])
        delta += 1
    return bytearray(builder.build())


def _drain(port: int, ready) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        ready.set()
        buf = bytearray(1 << 20)
        while sock.recv_into(buf):
            pass


def _timed_send(send) -> tuple[float, int]:
    """Seconds to run send(sock) against a loopback receiver in another process."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        ready = multiprocessing.Event()
        receiver = multiprocessing.Process(target=_drain, args=(server.getsockname()[1], ready))
        receiver.start()
        conn, _ = server.accept()
        ready.wait()
        with conn:
            start = time.perf_counter()
            sent = send(conn)
            elapsed = time.perf_counter() - start
        receiver.join()
    assert sent > 0
    return elapsed, sent


def interleaved_writes(raw_path: Path, data_dir: Path, batch: bytearray, batches: int):
    """Time the raw write and the log append of the same bytes, interleaved in slices of
    `SLICE_BATCHES` (alternating which goes first), so page-cache writeback (bimodal on this machine)
    hits both alike. Returns (raw seconds, append seconds, bytes each, manager, log)."""
    manager = LogManager([data_dir], {}, SystemClock())
    manager.startup()
    log = manager.get_or_create_log("bench", 0, {"segment.bytes": str(TOTAL_BYTES)})
    raw_seconds = append_seconds = 0.0
    os.sync()
    with open(raw_path, "wb") as raw:
        for slice_ in range(batches // SLICE_BATCHES):
            for step in ("raw", "log") if slice_ % 2 == 0 else ("log", "raw"):
                start = time.perf_counter()
                for _ in range(SLICE_BATCHES):
                    if step == "raw":
                        raw.write(batch)
                    else:
                        log.append_as_leader(batch, leader_epoch=0)
                elapsed = time.perf_counter() - start
                if step == "raw":
                    raw_seconds += elapsed
                else:
                    append_seconds += elapsed
    return raw_seconds, append_seconds, len(batch) * batches, manager, log


def raw_sendfile(path: Path) -> tuple[float, int]:
    def send(conn):
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            offset = 0
            while offset < size:
                offset += os.sendfile(conn.fileno(), f.fileno(), offset, size - offset)
        return size

    return _timed_send(send)


def next_offset_after(region) -> int:
    """The offset after the last whole batch of `region` (what a consumer computes from the headers)."""
    position, end, next_offset = region.position, region.position + region.length, None
    while end - position >= rb.HEADER_SIZE:
        header = rb.read_header(os.pread(region.file.fileno(), rb.HEADER_SIZE, position))
        if position + header.size > end:
            break
        next_offset, position = header.next_offset, position + header.size
    assert next_offset is not None, "a region always holds a whole first batch"
    return next_offset


def log_sendfile(log) -> tuple[float, int]:
    def send(conn):
        offset, sent, end = log.log_start_offset, 0, log.log_end_offset
        while offset < end:
            region = log.read(offset, FETCH_MAX_BYTES, end)
            position, remaining = region.position, region.length
            fd = region.file.fileno()
            while remaining:
                n = os.sendfile(conn.fileno(), fd, position, remaining)
                position += n
                remaining -= n
            sent += region.length
            offset = next_offset_after(region)
        return sent

    return _timed_send(send)


def mb_per_s(seconds: float, size: int) -> float:
    return size / seconds / 1e6


def main() -> None:
    batch = one_mib_batch()
    batches = TOTAL_BYTES // len(batch)
    results: dict[str, list[float]] = {"append": [], "raw write": [], "read": [], "raw sendfile": []}
    root = Path(tempfile.mkdtemp(prefix="strom-bench-"))
    try:
        for round_ in range(ROUNDS):
            raw_path = root / f"raw-{round_}.bin"
            raw_seconds, append_seconds, size, manager, log = interleaved_writes(
                raw_path, root / f"log-{round_}", batch, batches)
            results["raw write"].append(mb_per_s(raw_seconds, size))
            results["append"].append(mb_per_s(append_seconds, size))
            results["raw sendfile"].append(mb_per_s(*raw_sendfile(raw_path)))
            results["read"].append(mb_per_s(*log_sendfile(log)))
            manager.shutdown()
            raw_path.unlink()
            shutil.rmtree(root / f"log-{round_}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    median = {name: statistics.median(values) for name, values in results.items()}
    print(f"batches: {batches} x {len(batch)} bytes ({RECORD_BYTES}-byte records), {ROUNDS} rounds, medians")
    for name, values in results.items():
        print(f"  {name:13s} {median[name]:8.0f} MB/s   (runs: {', '.join(f'{v:.0f}' for v in values)})")
    print(f"append / raw write    = {median['append'] / median['raw write']:.0%}  (target >= 70%)")
    print(f"read / raw sendfile   = {median['read'] / median['raw sendfile']:.0%}  (target >= 80%)")


if __name__ == "__main__":
    main()
