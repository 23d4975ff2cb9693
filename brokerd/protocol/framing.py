"""Kafka frame splitting: every request is a big-endian int32 size followed by exactly that many bytes.

`FrameDecoder` is sans-IO: feed it whatever the socket delivered and it returns the complete frames.
The size prefix is checked against `max_frame_bytes` (`socket.request.max.bytes`) *before* any buffer
for the frame is grown, so an absurd prefix costs nothing; a negative or oversized prefix raises
`InvalidFrameError` and the connection must be closed (the stream can no longer be resynchronised).
"""

import struct

from brokerd.protocol.errors import InvalidFrameError

SIZE_PREFIX = struct.Struct(">i")


class FrameDecoder:
    """Accumulates received bytes and yields complete frames (without their size prefix), in order."""

    __slots__ = ("_buffer", "_max_frame_bytes")

    def __init__(self, max_frame_bytes: int) -> None:
        self._buffer = bytearray()
        self._max_frame_bytes = max_frame_bytes

    @property
    def buffered_bytes(self) -> int:
        return len(self._buffer)

    def feed(self, data: bytes) -> list[bytes]:
        """Add `data`; return every frame now complete. Raises InvalidFrameError on a bad prefix."""
        buffer = self._buffer
        buffer += data
        frames: list[bytes] = []
        position = 0
        end = len(buffer)
        with memoryview(buffer) as view:  # a frame is copied once, out of the buffer (released before it shrinks)
            while end - position >= 4:
                (size,) = SIZE_PREFIX.unpack_from(buffer, position)
                if size < 0 or size > self._max_frame_bytes:
                    raise InvalidFrameError(
                        f"frame size {size} outside [0, {self._max_frame_bytes}] (socket.request.max.bytes)"
                    )
                if end - position - 4 < size:
                    break
                frames.append(bytes(view[position + 4 : position + 4 + size]))
                position += 4 + size
        if position:
            del buffer[:position]
        return frames
