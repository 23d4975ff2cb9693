"""One client connection: framing, in-order request processing, response writing, the connection's limits.

Requests on a connection start in arrival order, one after the other, and responses leave in request
order; the client may pipeline as many requests as it likes. A request starts once the one before it
completed or *released* the connection: a handler calls `RequestContext.release` when all that is left of
its request is a wait later requests cannot change — an acks=all produce whose batches are appended and
wait for replication. So a producer's next request is appended while the previous one waits (Kafka mutes
the channel until the response is sent, which adds a whole replication round trip per queued request); at
most `MAX_PIPELINED_REQUESTS` are in progress at once.

Loop turns on the acks=all path are few: a request starts in the loop step its bytes arrive (`data_received`),
and the first request in progress writes its answer in the step it completes when nothing else is being written
(`_run`); `_process` writes the others, in order, and what the socket did not take. `_process` wakes only when
something is left to it (frames that could not start, an answer to write, a failure, the end): a request started
on arrival and answered in its own step leaves the connection in its completion callback (`_completed`).

Received frames queue up to `MAX_QUEUED_FRAMES` or `max_frame_bytes` bytes (counted until a request starts),
then reading pauses (backpressure). No request starts while an answer waits to leave the transport's buffer
(below its high-water mark): a client that never reads its responses holds one response being written, the
answers of the requests already in progress (all but the last of them released ones, i.e. small produce
answers) and one request queue, then the kernel's socket buffers, and its connection counts as idle. A
connection is active only while it completes requests or drains responses (`last_active`), so one trickling
a byte a second (slowloris) is idle too; the listener reaps both after `connections.max.idle.ms`.

An answer goes out in as few sends as it can (`_write_now`): one whose storage file regions are small (a
follower's Fetch answer under acks=all) is read into memory and written with its framing in one write; a larger
one goes straight to the socket under TCP_CORK, its regions with os.sendfile (zero copy), while the socket takes
it, the rest through the transport and `loop.sendfile`. A region whose file ends before it (truncated meanwhile)
ends the connection, as the answer cannot be completed. A bad size prefix, an undecodable
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
import socket
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

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
        """Set when `_process` has work: frames that did not start on arrival, a completed request with an answer
        to write or a failure, writing possible again, or the connection ending."""
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
        if self._frames:
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
            if self._frames or self._transport is None:
                self._progress.set()

        request.task = asyncio.get_running_loop().create_task(
            self._run(request, frame, release),
            name=f"{_API_NAMES.get(int.from_bytes(frame[:2]), 'request')} from {self._client_host}")
        request.task.add_done_callback(lambda _: self._completed(request))
        return request

    def _completed(self, request: _Request) -> None:
        """A request's task is done (it releases the connection too). The answered requests at the head (their
        answers written by `_run`, or none due) leave `_in_progress` here, in order, unless `_process` is writing;
        `_process` wakes only for what is left to it: an answer to write, a failure, queued frames, the end."""
        request.released = True
        in_progress = self._in_progress
        if not self._writing and self._task is not None and not self._task.done():
            while in_progress and _answered(in_progress[0]):
                in_progress.popleft()
                self.last_active = asyncio.get_running_loop().time()
            self.busy = bool(in_progress)
        if self._frames or self._transport is None or self._stopping or (
                in_progress and in_progress[0].task.done()):  # type: ignore[union-attr]
            self._progress.set()

    async def _run(self, request: _Request, frame: bytes, release: Callable[[], None]) -> list[Chunk] | None:
        """Dispatch `request`; write its answer at once, in the step that completes it, if it is the first in
        progress and no answer is being written (an acks=all produce woken by the high watermark, or a follower's
        Fetch woken by an append, answers without waiting two more loop turns for `_process`): all of it when
        the socket takes it, and what it does not take is returned for `_process` to write. Else its chunks are
        returned for `_process` to write in order."""
        chunks = await self._dispatcher.dispatch(frame, self._client_host, release)
        transport = self._transport
        if (chunks is None or transport is None or self._writing or not self._writable.is_set()
                or not self._in_progress or self._in_progress[0] is not request):
            return chunks
        try:
            rest = _write_now(transport, chunks)
        except OSError as exc:
            self._abort(f"write failed: {exc}")
            return None
        self.last_active = asyncio.get_running_loop().time()
        return rest or None

    async def _write(self, chunks: list[Chunk]) -> None:
        self._awaiting_client = True
        try:
            await self._write_chunks(chunks)
        finally:
            self._awaiting_client = False

    async def _write_chunks(self, chunks: list[Chunk]) -> None:
        loop = asyncio.get_running_loop()
        while chunks:
            transport = self._transport
            if transport is None:
                return
            chunks = _write_now(transport, chunks)
            if not chunks:
                break
            chunk, chunks = chunks[0], chunks[1:]
            if isinstance(chunk, bytes):  # the transport buffers earlier bytes, or the socket is full
                transport.write(chunk)
                continue
            sent = await loop.sendfile(transport, chunk.file, chunk.position, chunk.length)
            if sent < chunk.length:
                raise RegionPastFileEndError(chunk, sent)
        if not self._writable.is_set():
            await self._writable.wait()


COPY_LIMIT = 16 * 1024
"""An answer whose file regions total at most this many bytes is read into memory (os.pread: a copy of the stored
bytes, never a decode) and written in one write: one syscall, where zero copy takes a send per chunk, a sendfile
per region and two setsockopt calls. Measured over loopback (sender CPU per answer, one region with its framing
and tags): 17 against 19-20 us at 4 KiB, even at 12-16 KiB, 26 against 20 us at 32 KiB; two regions totalling
16 KiB even, 24 KiB even to worse (README "Fetch answers on the wire")."""


class RegionPastFileEndError(OSError):
    """A file region's file ended before the region (the segment was truncated meanwhile): the answer promised
    bytes it cannot send, so the connection ends (the client retries on a new one), as Kafka's does."""

    def __init__(self, chunk: FileChunk, sent: int) -> None:
        super().__init__(f"the file ends {chunk.length - sent} bytes before a region of {chunk.length} bytes")


@dataclass(frozen=True, slots=True)
class _RegionRest:
    """The part of a file region not sent yet."""

    file: object
    position: int
    length: int


def _write_now(transport: asyncio.Transport, chunks: list[Chunk]) -> list[Chunk]:
    """Write the head of `chunks` (an answer, or what is left of one) now; returns the chunks not written, the
    first possibly cut short — none if all were. An answer whose regions total at most `COPY_LIMIT` bytes goes in
    one `transport.write` (all of it, whatever the socket takes). A larger one goes straight to the socket, its
    bytes with os.write and its regions with os.sendfile (zero copy) under TCP_CORK (its framing, each region
    and the bytes between leave in full segments: one wake-up of the client, not one per chunk), until the
    socket would block; that part is left to the transport and `loop.sendfile` — as is all of it while the
    transport still buffers earlier bytes, is closing, or is TLS (`loop.sendfile` costs two loop iterations,
    four epoll changes, an fstat and an lseek even when one os.sendfile takes the whole region). Raises OSError
    if the socket failed, RegionPastFileEndError if a region's file ends before it."""
    copied = 0
    for chunk in chunks:
        if not isinstance(chunk, bytes):
            copied += chunk.length
    if copied <= COPY_LIMIT:
        transport.write(b"".join(chunk if isinstance(chunk, bytes) else _read_region(chunk) for chunk in chunks))
        return []
    sock = transport.get_extra_info("socket")
    if sock is None or transport.get_write_buffer_size() or transport.is_closing() \
            or transport.get_extra_info("ssl_object"):
        return chunks
    cork = sock.family in (socket.AF_INET, socket.AF_INET6)
    if cork:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
    try:
        return _send_chunks(sock.fileno(), chunks)
    finally:
        if cork:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)  # sends what is corked


def _send_chunks(out: int, chunks: list[Chunk]) -> list[Chunk]:
    """Send `chunks` on the non-blocking socket `out` until it would block; the chunks not sent, the first
    possibly cut."""
    for index, chunk in enumerate(chunks):
        if isinstance(chunk, bytes):
            sent = _send_bytes(out, chunk)
            if sent < len(chunk):
                return [chunk[sent:], *chunks[index + 1:]]
            continue
        sent = _send_region(out, chunk)
        if sent < chunk.length:
            return [_RegionRest(chunk.file, chunk.position + sent, chunk.length - sent), *chunks[index + 1:]]
    return []


def _send_bytes(out: int, data: bytes) -> int:
    sent = 0
    while sent < len(data):
        try:
            sent += os.write(out, data[sent:] if sent else data)
        except BlockingIOError:
            break
    return sent


def _send_region(out: int, chunk: FileChunk) -> int:
    source = chunk.file.fileno()  # type: ignore[attr-defined]
    sent = 0
    while sent < chunk.length:
        try:
            count = os.sendfile(out, source, chunk.position + sent, chunk.length - sent)
        except BlockingIOError:
            break
        if count == 0:
            raise RegionPastFileEndError(chunk, sent)
        sent += count
    return sent


def _read_region(chunk: FileChunk) -> bytes:
    data = os.pread(chunk.file.fileno(), chunk.length, chunk.position)  # type: ignore[attr-defined]
    if len(data) < chunk.length:  # a regular file reads short only at its end
        raise RegionPastFileEndError(chunk, len(data))
    return data


def _answered(request: _Request) -> bool:
    """Done with nothing left to write: its answer was written by `_run`, or none was due."""
    task = request.task
    return task.done() and not task.cancelled() and task.exception() is None \
        and task.result() is None  # type: ignore[union-attr]


def _cancel_unanswered(request: _Request) -> None:
    """Cancel a released request whose answer has nowhere to go: all that is left of it is a wait."""
    request.task.cancel()  # type: ignore[union-attr]
    request.task.add_done_callback(_discard_outcome)  # type: ignore[union-attr]


def _discard_outcome(task: asyncio.Task) -> None:
    if not task.cancelled():
        task.exception()  # retrieved, so asyncio does not log it as never retrieved
