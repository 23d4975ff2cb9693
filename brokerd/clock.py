"""Injected time, in milliseconds everywhere (Kafka's `Time`, Burrow's `Ticker`).

`now_ms()` is wall-clock time (record timestamps, retention, `segment.ms`); `monotonic_ms()` measures
intervals (flush and maintenance periods). Production code takes a `Clock`; tests pass a `ManualClock`.
"""

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Wall-clock milliseconds since the Unix epoch."""

    def monotonic_ms(self) -> int:
        """Milliseconds from an arbitrary origin; never goes backwards."""


class SystemClock:
    """The real clock."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000


class ManualClock:
    """A clock that only moves when a test calls `advance_ms`; both readings advance together.

    Thread-safe: background maintenance threads may read it while a test advances it.
    """

    def __init__(self, now_ms: int = 1_700_000_000_000, monotonic_ms: int = 0) -> None:
        self._lock = threading.Lock()
        self._now_ms = now_ms
        self._monotonic_ms = monotonic_ms

    def now_ms(self) -> int:
        with self._lock:
            return self._now_ms

    def monotonic_ms(self) -> int:
        with self._lock:
            return self._monotonic_ms

    def advance_ms(self, delta_ms: int) -> None:
        if delta_ms < 0:
            raise ValueError("a clock never goes backwards")
        with self._lock:
            self._now_ms += delta_ms
            self._monotonic_ms += delta_ms
