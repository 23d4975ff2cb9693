"""The broker's heartbeats on a thread of their own (Kafka's BrokerLifecycleManager runs on its own event
queue for the same reason): a broker whose event loop is held for seconds — applying a large metadata change, a
full garbage collection pass — still proves it is alive, so the control plane does not fence it for that.

`HeartbeatThread` runs `beat(client)` every `interval_s()` seconds on its own thread and asyncio event loop, with
its own HTTP client (`make_client()`, made and closed on that thread: connections belong to a loop). What a beat
reads from the broker's loop and how it hands the answer back is the caller's (`cluster.ClusterMetadataStore`:
a snapshot replaced whole, and `call_soon_threadsafe`). A beat that raises is logged and the next one follows.
"""

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable

from brokerd.metadata.http import JsonHttpClient

log = logging.getLogger(__name__)

START_TIMEOUT_S = 10.0


class HeartbeatThread:
    def __init__(self, beat: Callable[[JsonHttpClient], Awaitable[None]], make_client: Callable[[], JsonHttpClient],
                 interval_s: Callable[[], float], name: str) -> None:
        self._beat = beat
        self._make_client = make_client
        self._interval_s = interval_s
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._running = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._thread.start()
        if not self._running.wait(START_TIMEOUT_S):
            raise RuntimeError(f"{self._thread.name} did not start")

    def stop(self) -> None:
        """Cancel the beat in flight (if any) and join the thread. Blocking: call it off the broker's loop."""
        if self._loop is not None and self._task is not None:
            with contextlib.suppress(RuntimeError):  # the thread's loop already closed
                self._loop.call_soon_threadsafe(self._task.cancel)
        if self._thread.is_alive():
            self._thread.join()

    def _main(self) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            asyncio.run(self._run())

    async def _run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        client = self._make_client()
        self._running.set()
        try:
            while True:
                started = time.monotonic()
                try:
                    await self._beat(client)
                except Exception:  # noqa: BLE001 - a failing beat must not end the heartbeats
                    log.exception("heartbeat failed")
                await asyncio.sleep(max(self._interval_s() - (time.monotonic() - started), 0.01))
        finally:
            client.close()
