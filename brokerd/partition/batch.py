"""Produce-path checks on the one record batch a Produce v3+ partition entry must carry.

Only the 61-byte header is read (`brokerd.records.batch`); record bodies, compressed or not, are never
decoded here. CRC, magic, codec and `max.message.bytes` are checked by storage on append.
"""

from brokerd.errors import CorruptRecordError, InvalidRecordError
from brokerd.records.batch import HEADER_SIZE, NO_PRODUCER_ID, BatchHeader, read_header


def read_single_batch(records: bytes) -> BatchHeader:
    """The header of the single batch in `records` (Kafka `ProduceRequest.validateRecords`).

    Raises CorruptRecordError for a truncated batch, InvalidRecordError for several batches, a
    control batch, a count that disagrees with lastOffsetDelta, or an idempotent batch without a
    base sequence.
    """
    if len(records) < HEADER_SIZE:
        raise CorruptRecordError(f"record batch of {len(records)} bytes is shorter than its header")
    header = read_header(records)
    if header.size > len(records):
        raise CorruptRecordError("record batch length runs past the end of the request")
    if header.size < len(records):
        raise InvalidRecordError("Produce requests must carry exactly one record batch per partition")
    if header.is_control:
        raise InvalidRecordError("clients may not send control batches")
    if header.record_count != header.last_offset_delta + 1:
        raise InvalidRecordError(
            f"record count {header.record_count} disagrees with lastOffsetDelta {header.last_offset_delta}"
        )
    if header.producer_id != NO_PRODUCER_ID and header.base_sequence < 0:
        raise InvalidRecordError("idempotent batches need a base sequence >= 0")
    return header
