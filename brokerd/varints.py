"""Kafka's variable-length integers (its `ByteUtils`), shared by the wire protocol and the record format.

Seven bits per byte, least significant group first, the high bit set on every byte but the last. Unsigned
varints carry the protocol's compact lengths and tagged fields (flexible versions, KIP-482); signed ones
are zig-zag encoded first ((n << 1) ^ (n >> 63): 0, -1, 1, -2 ... → 0, 1, 2, 3 ...) and carry every
integer inside a record (v2 record batches). Sans-IO; raise `VarintError`, which callers turn into their
layer's error (MalformedRequestError, CorruptRecordError).
"""

_ONE_BYTE = [bytes([value]) for value in range(0x80)]
"""Values below 128 are one byte: precomputed, as most lengths and counts are small."""


class VarintError(ValueError):
    """A varint runs past the end of its buffer or is longer than its integer width allows."""


def uvarint(value: int) -> bytes:
    """An unsigned varint (`value` >= 0)."""
    if value < 0x80:
        return _ONE_BYTE[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def varint(value: int) -> bytes:
    """A zig-zag varint of a signed 64-bit `value`."""
    return uvarint((value << 1) ^ (value >> 63))


def read_uvarint(buf: bytes | memoryview, position: int, max_bits: int = 32) -> tuple[int, int]:
    """The unsigned varint at `position` of at most `max_bits` bits → (value, position after it)."""
    value = shift = 0
    while True:
        if shift >= max_bits:
            raise VarintError(f"varint longer than {max_bits} bits")
        try:
            byte = buf[position]
        except IndexError:
            raise VarintError("buffer ends inside a varint") from None
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position
        shift += 7


def read_varint(buf: bytes | memoryview, position: int) -> tuple[int, int]:
    """The zig-zag varint (up to 64 bits) at `position` → (value, position after it)."""
    raw, position = read_uvarint(buf, position, 64)
    return (raw >> 1) ^ -(raw & 1), position
