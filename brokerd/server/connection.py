"""One client connection: framing, in-order request processing, response writing, the connection's limits.

Requests on a connection start in arrival order, one after the other, and responses leave in request
order; the client may pipeline as many requests as it likes. A request starts once the one before it
completed or *released* the connection: a handler calls `RequestContext.release` when all that is left of
its request is a wait later requests cannot change — an acks=all produce whose batches are appended and
wait for replication. So a producer's next request is appended while the previous one waits (Kafka mutes
the channel until the response is sent, which adds a whole replication round trip per queued request); at
most `MAX_PIPELINED_REQUESTS` are in progress at once.

Loop turns on the acks=all path are few: a request starts in the loop step its bytes arrive (`data_received`),
and the first request in progress writes its answer in the step it completes when the answer is only bytes and
nothing else is being written (`_run`); `_process` writes the others, in order.

Received frames queue up to `MAX_QUEUED_FRAMES` or `max_frame_bytes` bytes (counted until a request starts),
then reading pauses (backpressure). No request starts while an answer waits to leave the transport's buffer
(below its high-water mark): a client that never reads its responses holds one response being written, the
answers of the requests already in progress (all but the last of them released ones, i.e. small produce
answers) and one request queue, then the kernel's socket buffers, and its connection counts as idle. A
connection is active only while it completes requests or drains responses (`last_active`), so one trickling
a byte a second (slowloris) is idle too; the listener reaps both after `connections.max.idle.ms`.

Response chunks are written with `transport.write`, storage file regions with os.sendfile (zero copy):
directly while the socket takes them, the rest with `loop.sendfile`. A bad size prefix, an undecodable
request or an unexpected failure (logged) closes only this connection and drops the requests queued behind it
(`_refuse`), as does a broker that stops once its drain is over (`close`).

When the client goes away (closes, resets, or a write to it fails), every request it sent completely is
still processed, in order and by the same rules, unanswered — as Kafka processes the completed receives of a
closing channel. An acks=0 producer relies on this: it closes right after writing its last produce request,
expecting no answer, while earlier requests may still be in progress here. Only the released requests still
in progress are cancelled then (all that is left of them is a wait, and no one to answer); an unreleased one
finishes its work, as cancelling it could leave work half done (an offset commit appended but not applied).
Event loop only.
"""

import asyncio
import logging
import os
from collections import deque
from collections.abc import Callable

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.errors import InvalidFrameError, MalformedRequestError
from brokerd.protocol.framing import FrameDecoder
from brokerd.server.dispatcher import Dispatcher
from brokerd.server.response import Chunk, FileChunk

log = logging.getLogger(__name__)

MAX_QUEUED_FRAMES = 64
MAX_PIPELINED_REQUESTS = 16
_API_NAMES = {key.value: key.name for key in ApiKey}
"""Request tasks are named by API (what `brokerd.slow_callbacks` and task dumps show)."""


class _Request:
    """A request in progress: its dispatch task, and whether it lets the next request start (released or done)."""

    __slots__ = ("task", "released")

    def __init__(self) -> None:
        self.task: asyncio.Task[list[Chunk] | None] | None = None
        """Its answer's chunks; None when none is due or the task wrote the answer itself."""
        self.released = False


class KafkaConnection(asyncio.Protocol):
    def __init__(self, dispatcher: Dispatcher, max_frame_bytes: int,
                 admit: Callable[["KafkaConnection", str], bool],
                 on_close: Callable[["KafkaConnection", str], None]) -> None:
        self._dispatcher = dispatcher
        self._decoder = FrameDecoder(max_frame_bytes)
        self._max_queued_bytes = max_frame_bytes
        self._admit = admit
        self._on_close = on_close
        self._frames: deque[bytes] = deque()
        self._in_progress: deque[_Request] = deque()
        """Requests started and not yet answered, in request order (at most `MAX_PIPELINED_REQUESTS`)."""
        self._writing = False
        """True while `_process` writes an answer (a later one must not overtake it)."""
        self._queued_bytes = 0
        """Bytes of the frames in `_frames`."""
        self._progress = asyncio.Event()
        """Set when a frame arrives, a request completes or releases the connection, or the connection ends."""
        self._writable = asyncio.Event()
        self._writable.set()
        self._transport: asyncio.Transport | None = None
        self._task: asyncio.Task[None] | None = None
        self._client_host = ""
        self._reading_paused = False
        self._stopping = False
        self.busy = False
        """True while requests are being processed or answered."""
        self._awaiting_client = False
        """True while an answer waits for the client to read what was written before."""
        self.last_active = 0.0
        """loop.time() of the last request received or completed, or response drained."""

    # asyncio.Protocol callbacks
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        peer = transport.get_extra_info("peername")
        self._client_host = peer[0] if peer else ""
        if not self._admit(self, self._client_host):
            transport.close()
            return
        loop = asyncio.get_running_loop()
        self.last_active = loop.time()
        self._task = loop.create_task(self._process())

    def data_received(self, data: bytes) -> None:
        try:
            frames = self._decoder.feed(data)
        except InvalidFrameError as exc:
            self._refuse(str(exc))
            return
        if not frames:
            return
        self.last_active = asyncio.get_running_loop().time()
        self._frames.extend(frames)
        self._queued_bytes += sum(map(len, frames))
        if not self._writing and self._task is not None and not self._task.done():
            self._start_ready()  # now, not a loop turn later in `_process`
        self._progress.set()
        if (len(self._frames) >= MAX_QUEUED_FRAMES or self._queued_bytes >= self._max_queued_bytes) \
                and not self._reading_paused:
            self._reading_paused = True
            self._transport.pause_reading()  # type: ignore[union-attr]

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None  # `_process` goes on with the requests already received, unanswered
        self._progress.set()
        self._writable.set()
        self._on_close(self, self._client_host)

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self.last_active = asyncio.get_running_loop().time()
        self._writable.set()
        self._progress.set()  # requests may start again

    # lifecycle
    @property
    def idle(self) -> bool:
        """Neither handling a request nor receiving one: only waiting for the client (to send or to read)."""
        return (not self.busy and not self._frames) or self._awaiting_client or not self._writable.is_set()

    def close(self) -> None:
        """Close gracefully (the broker stops): the requests not yet started are dropped."""
        self._drop_queued()
        if self._transport is not None:
            self._transport.close()

    def close_idle(self) -> None:
        """Close an idle connection; abort it if unread responses are buffered (a graceful close would wait
        for a client that does not read)."""
        if self._transport is None:
            return
        if self._transport.get_write_buffer_size():
            self._abort("idle with unread responses (connections.max.idle.ms)")
        else:
            self._transport.close()

    async def shutdown(self) -> None:
        """Stop reading; finish the requests already received; then close."""
        self._stopping = True
        if self._transport is not None and not self._reading_paused:
            self._reading_paused = True
            self._transport.pause_reading()
        self._progress.set()
        if self._task is not None:
            await asyncio.shield(self._task)

    def _abort(self, reason: str) -> None:
        """End the connection now; the requests already received are still processed, unanswered."""
        log.info("closing connection from %s: %s", self._client_host, reason)
        transport, self._transport = self._transport, None
        if transport is not None:
            transport.abort()
        self._progress.set()
        self._writable.set()

    def _refuse(self, reason: str) -> None:
        """End the connection over a bad request or a bug: the requests queued behind it are dropped."""
        self._drop_queued()
        self._abort(reason)

    def _drop_queued(self) -> None:
        self._frames.clear()
        self._queued_bytes = 0

    # processing
    async def _process(self) -> None:
        """Start requests in order (each once the previous completed or released), answer them in order while
        the client is there; end once the client is gone (or the broker stops) and every request received is
        processed. A request's failure (raised by its task) refuses the connection; a failed write aborts it."""
        in_progress = self._in_progress
        loop = asyncio.get_running_loop()
        try:
            while True:
                while in_progress and (in_progress[0].task.done()  # type: ignore[union-attr]
                                       or (self._transport is None and in_progress[0].released)):
                    request = in_progress.popleft()
                    if not request.task.done():  # type: ignore[union-attr]
                        _cancel_unanswered(request)  # the client is gone and only a wait is left
                        continue
                    chunks = request.task.result()  # type: ignore[union-attr]
                    if chunks is not None and self._transport is not None:
                        self._writing = True
                        try:
                            await self._write(chunks)
                        except (ConnectionError, OSError) as exc:
                            self._abort(f"write failed: {exc}")
                        finally:
                            self._writing = False
                    self.last_active = loop.time()
                self.busy = bool(in_progress)
                if not in_progress and not self._frames and (self._transport is None or self._stopping):
                    break
                if self._start_ready():
                    continue
                self._progress.clear()
                await self._progress.wait()
        except MalformedRequestError as exc:
            self._refuse(str(exc))
        except Exception:  # a bug, never a hung connection: the client reconnects (Kafka closes too)
            log.exception("request from %s failed; closing the connection", self._client_host)
            self._refuse("unexpected error")
        finally:
            self.busy = False
            for request in in_progress:  # the connection is refused: their outcomes have nowhere to go
                if request.released:
                    _cancel_unanswered(request)
                else:
                    request.task.add_done_callback(_discard_outcome)  # type: ignore[union-attr]
            if self._stopping:
                self.close()

    def _start_ready(self) -> bool:
        """Start the next queued request if the rules allow (the previous one completed or released, fewer than
        `MAX_PIPELINED_REQUESTS` in progress, no answer waiting for the client to read; the caller checked no
        answer is being written); True if started."""
        in_progress = self._in_progress
        if self._frames and self._writable.is_set() and len(in_progress) < MAX_PIPELINED_REQUESTS and (
                not in_progress or in_progress[-1].released):
            in_progress.append(self._start(self._frames.popleft()))
            self.busy = True
            return True
        return False

    def _start(self, frame: bytes) -> _Request:
        self._queued_bytes -= len(frame)
        if self._reading_paused and not self._stopping and self._transport is not None \
                and len(self._frames) < MAX_QUEUED_FRAMES // 2 and self._queued_bytes < self._max_queued_bytes // 2:
            self._reading_paused = False
            self._transport.resume_reading()
        request = _Request()

        def release() -> None:
            request.released = True
            self._progress.set()

        request.task = asyncio.get_running_loop().create_task(
            self._run(request, frame, release),
            name=f"{_API_NAMES.get(int.from_bytes(frame[:2]), 'request')} from {self._client_host}")
        request.task.add_done_callback(lambda _: release())  # a completed request releases too
        return request

    async def _run(self, request: _Request, frame: bytes, release: Callable[[], None]) -> list[Chunk] | None:
        """Dispatch `request`; write its answer at once, in the step that completes it, if it is the first in
        progress, no answer is being written and the answer is only bytes (an acks=all produce woken by the
        high watermark answers without waiting two more loop turns for `_process`). Else its chunks are
        returned for `_process` to write in order."""
        chunks = await self._dispatcher.dispatch(frame, self._client_host, release)
        transport = self._transport
        if (chunks is None or transport is None or self._writing or not self._writable.is_set()
                or not self._in_progress or self._in_progress[0] is not request
                or not all(isinstance(chunk, bytes) for chunk in chunks)):
            return chunks
        transport.writelines(chunks)  # type: ignore[arg-type]
        self.last_active = asyncio.get_running_loop().time()
        return None

    async def _write(self, chunks: list[Chunk]) -> None:
        self._awaiting_client = True
        try:
            await self._write_chunks(chunks)
        finally:
            self._awaiting_client = False

    async def _write_chunks(self, chunks: list[Chunk]) -> None:
        transport = self._transport
        if transport is None:
            return
        pending: list[bytes] = []
        for chunk in chunks:
            if isinstance(chunk, bytes):
                pending.append(chunk)
                continue
            if pending:
                transport.writelines(pending)
                pending = []
            sent = _sendfile_now(transport, chunk)
            if sent < chunk.length:
                await asyncio.get_running_loop().sendfile(transport, chunk.file, chunk.position + sent,
                                                          chunk.length - sent)
            if self._transport is None:
                return
        if pending:
            transport.writelines(pending)
        if not self._writable.is_set():
            await self._writable.wait()


def _sendfile_now(transport: asyncio.Transport, chunk: FileChunk) -> int:
    """Bytes of `chunk` (0 to `length`) sent at once with os.sendfile, until the socket would block; 0 while the
    transport still buffers earlier bytes (they go first), is closing, or is TLS. `loop.sendfile` sends the rest:
    it costs two loop iterations, four epoll changes, an fstat and an lseek even when one os.sendfile takes the
    whole region — per partition of every Fetch response. Raises OSError if the socket failed."""
    if transport.get_write_buffer_size() or transport.is_closing() or transport.get_extra_info("ssl_object"):
        return 0
    sock = transport.get_extra_info("socket")
    if sock is None:
        return 0
    out, source = sock.fileno(), chunk.file.fileno()  # type: ignore[attr-defined]
    sent = 0
    while sent < chunk.length:
        try:
            count = os.sendfile(out, source, chunk.position + sent, chunk.length - sent)
        except (BlockingIOError, InterruptedError):
            break
        if count == 0:  # the file ends before the region: loop.sendfile reports it
            break
        sent += count
    return sent


def _cancel_unanswered(request: _Request) -> None:
    """Cancel a released request whose answer has nowhere to go: all that is left of it is a wait."""
    request.task.cancel()  # type: ignore[union-attr]
    request.task.add_done_callback(_discard_outcome)  # type: ignore[union-attr]


def _discard_outcome(task: asyncio.Task) -> None:
    if not task.cancelled():
        task.exception()  # retrieved, so asyncio does not log it as never retrieved
