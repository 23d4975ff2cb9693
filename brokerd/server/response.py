"""What a handler may return besides a kio response entity.

`RawResponse` is a body already laid out as chunks: bytes, or storage `FileRegion`s that the
connection sends with `loop.sendfile` (zero copy). `NO_RESPONSE` means the client expects none
(Produce with acks=0).
"""

from dataclasses import dataclass
from typing import Protocol


class FileChunk(Protocol):
    """A byte range of an open file (storage's `FileRegion` satisfies it)."""

    file: object
    position: int
    length: int


Chunk = bytes | FileChunk


@dataclass(frozen=True, slots=True)
class RawResponse:
    chunks: list[Chunk]
    size: int
    """Total body bytes over all chunks."""


NO_RESPONSE = object()
