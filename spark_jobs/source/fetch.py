"""Reading one offset range over the Kafka protocol into Arrow record batches (runs in Spark's Python
workers on the executors).

One confluent-kafka consumer per range, assigned (never subscribed: no group, no commits). Each
`consume()` call becomes one RecordBatch built column by column, so the per-record Python work is a
handful of attribute reads; values are copied once, into one Arrow buffer per batch. A call asks for
about `BATCH_BYTES` of records (at most `MAX_RECORDS_PER_CALL`), judged by the previous batch.

Invariant: the batches yielded for `[start, end)` hold every record the broker serves in that range,
once, in offset order, and nothing outside it. Offsets with no record (compacted away, transaction
markers) are skipped; a range the log no longer reaches is an error unless `failOnDataLoss=false`.
"""

import uuid
from array import array
from bisect import bisect_left
from collections.abc import Iterator
from itertools import accumulate
from operator import itemgetter

from spark_jobs.source.offsets import OffsetRange
from spark_jobs.source.options import SourceOptions

MAX_RECORDS_PER_CALL = 10_000
FIRST_CALL_RECORDS = 1_000  # until record sizes are known (Kafka's records are up to ~1 MB by default)
BATCH_BYTES = 32 << 20


class DataLossError(RuntimeError):
    """Records of a planned range are no longer in the log (retention, truncation)."""


def consumer_config(options: SourceOptions) -> dict:
    return {
        **options.client,
        "group.id": options.client.get("group.id") or f"{options.group_id_prefix}-{uuid.uuid4()}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "error" if options.fail_on_data_loss else "earliest",
    }


def read_range(options: SourceOptions, piece: OffsetRange, arrow_schema) -> Iterator:
    """Yield RecordBatches of `arrow_schema` (the Kafka schema) with the records `piece` covers."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

    consumer = Consumer(consumer_config(options))
    position = piece.start
    try:
        consumer.assign([TopicPartition(piece.topic, piece.partition, piece.start)])
        wanted = FIRST_CALL_RECORDS
        while position < piece.end:
            messages = consumer.consume(min(wanted, piece.end - position), options.poll_timeout_s)
            if not messages:
                raise TimeoutError(f"no record of {piece.topic}-{piece.partition} at offset {position} within "
                                   f"{options.poll_timeout_s:g} s (kafkaConsumer.pollTimeoutMs)")
            records = messages
            end_of_partition = None
            # map() over the C methods: no Python frame per record (the hot loop of a read)
            if list(map(Message.error, messages)).count(None) != len(messages):
                records = []
                for message in messages:
                    error = message.error()
                    if error is None:
                        records.append(message)
                    elif error.code() == KafkaError._PARTITION_EOF:
                        end_of_partition = message.offset()
                    elif error.code() == KafkaError._AUTO_OFFSET_RESET:
                        raise DataLossError(f"{piece.topic}-{piece.partition}: offset {position} is no longer in "
                                            f"the log ({error.str()}); set failOnDataLoss=false to skip")
                    else:
                        raise KafkaException(error)
            offsets = list(map(Message.offset, records))
            cut = bisect_left(offsets, piece.end)
            if cut < len(records):
                records, offsets = records[:cut], offsets[:cut]
                position = piece.end
            elif records:
                position = offsets[-1] + 1
            if records:
                batch = _record_batch(records, offsets, piece, arrow_schema)
                wanted = max(1, min(MAX_RECORDS_PER_CALL, BATCH_BYTES * len(records) // max(1, batch.nbytes)))
                yield batch
            if end_of_partition is not None and position < piece.end:
                if end_of_partition >= piece.end:
                    position = piece.end  # the rest of the range holds no readable record
                elif options.fail_on_data_loss:
                    raise DataLossError(f"{piece.topic}-{piece.partition} ends at offset {end_of_partition}, "
                                        f"before the planned {piece.end} (log truncated?)")
                else:
                    position = piece.end
    finally:
        consumer.close()


def _record_batch(records: list, offsets: list[int], piece: OffsetRange, arrow_schema):
    import pyarrow as pa
    import pyarrow.compute as pc
    from confluent_kafka import Message

    count = len(records)
    stamps = list(map(Message.timestamp, records))
    millis = pa.array(list(map(itemgetter(1), stamps)), pa.int64())
    columns = {
        "key": _binary_array(list(map(Message.key, records))),
        "value": _binary_array(list(map(Message.value, records))),
        "topic": pa.array([piece.topic] * count, pa.string()),
        "partition": pa.array([piece.partition] * count, pa.int32()),
        "offset": pa.array(offsets, pa.int64()),
        # confluent-kafka's timestamp types (0 none, 1 CreateTime, 2 LogAppendTime) are Spark's plus one
        "timestamp": pc.multiply(millis, 1000).cast(pa.timestamp("us", tz="UTC")),
        "timestampType": pc.subtract(pa.array(list(map(itemgetter(0), stamps)), pa.int32()), 1),
    }
    if "headers" in arrow_schema.names:
        columns["headers"] = pa.array([_headers(m.headers()) for m in records], arrow_schema.field("headers").type)
    return pa.RecordBatch.from_arrays([columns[name] for name in arrow_schema.names], schema=arrow_schema)


def _binary_array(values: list):
    """bytes (or None) as an Arrow binary array: one join into the data buffer plus an offsets buffer,
    twice as fast as `pa.array` for kilobyte values. Lists with nulls take `pa.array`."""
    import pyarrow as pa

    if None in values:
        return pa.array(values, pa.binary())
    data = b"".join(values)
    offsets = array("i", accumulate(map(len, values), initial=0))  # int32: a batch stays far below 2 GiB
    return pa.Array.from_buffers(pa.binary(), len(values), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _headers(headers: list | None) -> list[dict] | None:
    """Spark's headers value: null when a record has none."""
    return [{"key": key, "value": value} for key, value in headers] if headers else None
