"""Wait for a condition with a deadline instead of sleeping a guessed time."""

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(condition: Callable[[], T], timeout_s: float = 20.0, interval_s: float = 0.02,
               message: str = "condition") -> T:
    """Poll `condition` until it returns a truthy value (returned) or raise AssertionError at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {message}")
        time.sleep(interval_s)
