"""Append validation (Kafka `LogValidator` + `UnifiedLog.analyzeAndValidateRecords`), per batch.

Every append: the buffer must be whole v2 batches (framing), each with magic 2, a known codec, at least
one record, a size within `max.message.bytes` and a correct CRC-32C; the whole append must fit in
`segment.bytes`. The rules of a producer's batch (one batch, counts, no control batch, base sequence)
were checked once before a leader append reaches the log (`records.batch.read_produced_batch`, called by
`Partition.append_as_leader`). Only when the topic requires it are a leader append's records decoded:
keys on compacted topics, CreateTime limits (`message.timestamp.before/after.max.ms`), and then the inner
offset deltas are checked to be 0..n-1 as well. Pure functions: nothing here touches the log, so a
rejected append leaves it unchanged.
"""

from dataclasses import dataclass

from brokerd.errors import BrokerError
from brokerd.records import batch as rb
from brokerd.records.errors import InvalidRecordError
from brokerd.storage.config import LONG_MAX, LogConfig
from brokerd.storage.errors import InvalidTimestampError, MessageTooLargeError, RecordListTooLargeError


@dataclass(frozen=True, slots=True)
class ValidatedAppend:
    buffer: memoryview
    batches: list[tuple[int, rb.BatchHeader]]
    """(position in `buffer`, header) of each batch, in order."""
    record_count: int


def validate_append(buf: bytes | bytearray | memoryview, config: LogConfig, now_ms: int,
                    from_leader: bool) -> ValidatedAppend:
    """Check `buf` against the rules above; raise the matching BrokerError on the first violation."""
    view = memoryview(buf).cast("B") if not isinstance(buf, memoryview) or buf.format != "B" else buf
    batches = list(rb.iter_batches(view))
    if not batches:
        raise InvalidRecordError("an append needs at least one record batch")
    if len(view) > config.segment_bytes:
        raise RecordListTooLargeError(f"{len(view)} bytes exceed segment.bytes={config.segment_bytes}")
    inspect_records = from_leader and (
        config.compact or (not config.log_append_time and (
            config.timestamp_before_max_ms != LONG_MAX or config.timestamp_after_max_ms != LONG_MAX))
    )
    record_count = 0
    for position, header in batches:
        rb.validate_header(header)
        if header.size > config.max_message_bytes:
            raise MessageTooLargeError(
                f"batch of {header.size} bytes exceeds max.message.bytes={config.max_message_bytes}")
        rb.verify_crc(view, position, header)
        if inspect_records:
            _check_records(view[position : position + header.size], header, config, now_ms)
        record_count += header.record_count
    return ValidatedAppend(view, batches, record_count)


def _check_records(batch: memoryview, header: rb.BatchHeader, config: LogConfig, now_ms: int) -> None:
    check_timestamps = not config.log_append_time and not header.is_log_append_time
    for expected_delta, record in enumerate(rb.iter_records(batch, header)):
        if record.offset_delta != expected_delta:
            raise _at(expected_delta, InvalidRecordError(
                f"record offset delta {record.offset_delta}, expected {expected_delta}"))
        if config.compact and record.key is None:
            raise _at(expected_delta, InvalidRecordError("Compacted topic cannot accept message without key."))
        if check_timestamps:
            timestamp = header.base_timestamp + record.timestamp_delta
            too_old = now_ms - timestamp > config.timestamp_before_max_ms
            if too_old or timestamp - now_ms > config.timestamp_after_max_ms:
                raise _at(expected_delta, InvalidTimestampError(
                    f"timestamp {timestamp} is out of range at broker time {now_ms}"))


def _at(record_index: int, error: BrokerError) -> BrokerError:
    error.record_index = record_index
    return error
