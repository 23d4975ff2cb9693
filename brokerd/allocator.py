"""The C allocator's thresholds for a broker process: freed request buffers stay in the heap for reuse
instead of going back to the kernel (glibc only; elsewhere nothing changes).

Every produce request passes through buffers of about a batch each (1 MiB by default): the received chunks,
the frame, its records. glibc serves a block above its mmap threshold (dynamic, from 128 KiB) with a fresh
mmap, and returns the heap's free top to the kernel once it exceeds its trim threshold (twice the mmap
threshold): then the next request's buffers are new pages, each faulted in and zeroed by the kernel. How
often that happens depends only on the order of allocations and frees — a pipelined connection's request
tasks release their frames a few loop steps later than inline processing did, and that was enough. Measured
on one broker (`make bench`, 1 partition, 1M x 1 KiB, acks=1): 572k page faults and 2.15 CPU-s of kernel time
with glibc's defaults, 14k and 1.02 with these thresholds; produce CPU per 1M records 3.10 → 1.71 s.

Fixed thresholds turn the dynamic adjustment off: blocks up to `MMAP_THRESHOLD_BYTES` come from the heap, and
up to `TRIM_THRESHOLD_BYTES` of free heap top stays mapped (the resident size may hold that much unused).
"""

import ctypes
import ctypes.util

MMAP_THRESHOLD_BYTES = 32 << 20
"""Blocks at least this large are mmapped (a frame of `socket.request.max.bytes`); smaller ones come from the
heap. glibc's maximum for this threshold on 64-bit."""
TRIM_THRESHOLD_BYTES = 64 << 20
"""Free memory at the heap's top is returned to the kernel only beyond this."""

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
"""mallopt parameter numbers (glibc's malloc.h)."""


def keep_freed_memory() -> bool:
    """Set the thresholds above for this process; True if the C library took them (glibc), False elsewhere.
    Call once at start, before serving."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):  # no mallopt: not glibc (musl, macOS)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
