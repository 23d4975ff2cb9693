import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokerd.protocol.errors import InvalidFrameError
from brokerd.protocol.framing import FrameDecoder


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def test_frames_split_across_reads_come_out_whole_and_in_order():
    decoder = FrameDecoder(max_frame_bytes=100)
    stream = frame(b"first") + frame(b"") + frame(b"third!")
    frames = []
    for i in range(len(stream)):
        frames += decoder.feed(stream[i : i + 1])
    assert frames == [b"first", b"", b"third!"]
    assert decoder.buffered_bytes == 0


def test_absurd_size_prefix_is_refused_before_buffering_the_body():
    decoder = FrameDecoder(max_frame_bytes=1024)
    with pytest.raises(InvalidFrameError):
        decoder.feed(struct.pack(">i", 2**31 - 1))
    with pytest.raises(InvalidFrameError):
        FrameDecoder(1024).feed(struct.pack(">i", -5))


@given(st.lists(st.binary(max_size=64), max_size=20), st.data())
def test_any_chunking_yields_the_same_frames(bodies, data):
    stream = b"".join(frame(b) for b in bodies)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    decoder = FrameDecoder(max_frame_bytes=64)
    out, start = [], 0
    for cut in [*cuts, len(stream)]:
        out += decoder.feed(stream[start:cut])
        start = cut
    assert out == bodies


@given(st.binary(max_size=300))
def test_garbage_either_frames_or_raises_invalid_frame(garbage):
    decoder = FrameDecoder(max_frame_bytes=128)
    try:
        frames = decoder.feed(garbage)
    except InvalidFrameError:
        return
    assert sum(len(f) + 4 for f in frames) + decoder.buffered_bytes == len(garbage)
