"""Reading one offset range over the Kafka protocol into Arrow record batches (runs in Spark's Python
workers on the executors).

One confluent-kafka consumer per range, assigned (never subscribed: no group, no commits). Each
`consume()` call of up to `MAX_RECORDS_PER_CALL` records becomes one RecordBatch built column by column,
so the per-record Python work is a handful of attribute reads; values are never copied into Spark rows.

Invariant: the batches yielded for `[start, end)` hold every record the broker serves in that range,
once, in offset order, and nothing outside it. Offsets with no record (compacted away, transaction
markers) are skipped; a range the log no longer reaches is an error unless `failOnDataLoss=false`.
"""

import uuid
from bisect import bisect_left
from collections.abc import Iterator

from spark_jobs.source.offsets import OffsetRange
from spark_jobs.source.options import SourceOptions

MAX_RECORDS_PER_CALL = 10_000


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
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    consumer = Consumer(consumer_config(options))
    position = piece.start
    try:
        consumer.assign([TopicPartition(piece.topic, piece.partition, piece.start)])
        while position < piece.end:
            messages = consumer.consume(min(MAX_RECORDS_PER_CALL, piece.end - position), options.poll_timeout_s)
            if not messages:
                raise TimeoutError(f"no record of {piece.topic}-{piece.partition} at offset {position} within "
                                   f"{options.poll_timeout_s:g} s (kafkaConsumer.pollTimeoutMs)")
            records = messages
            end_of_partition = None
            if any(m.error() is not None for m in messages):
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
            offsets = [m.offset() for m in records]
            cut = bisect_left(offsets, piece.end)
            if cut < len(records):
                records, offsets = records[:cut], offsets[:cut]
                position = piece.end
            elif records:
                position = offsets[-1] + 1
            if records:
                yield _record_batch(records, offsets, piece, arrow_schema)
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

    count = len(records)
    stamps = [m.timestamp() for m in records]
    millis = pa.array([stamp[1] for stamp in stamps], pa.int64())
    columns = {
        "key": pa.array([m.key() for m in records], pa.binary()),
        "value": pa.array([m.value() for m in records], pa.binary()),
        "topic": pa.array([piece.topic] * count, pa.string()),
        "partition": pa.array([piece.partition] * count, pa.int32()),
        "offset": pa.array(offsets, pa.int64()),
        # confluent-kafka's timestamp types (0 none, 1 CreateTime, 2 LogAppendTime) are Spark's plus one
        "timestamp": pc.multiply(millis, 1000).cast(pa.timestamp("us", tz="UTC")),
        "timestampType": pa.array([stamp[0] - 1 for stamp in stamps], pa.int32()),
    }
    if "headers" in arrow_schema.names:
        columns["headers"] = pa.array([_headers(m.headers()) for m in records], arrow_schema.field("headers").type)
    return pa.RecordBatch.from_arrays([columns[name] for name in arrow_schema.names], schema=arrow_schema)


def _headers(headers: list | None) -> list[dict] | None:
    """Spark's headers value: null when a record has none."""
    return [{"key": key, "value": value} for key, value in headers] if headers else None
