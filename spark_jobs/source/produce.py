"""Writing rows to Kafka topics (the `strom` sink; runs in Spark's Python workers on the executors).

Input columns, as in Spark's Kafka sink: `value` (binary or string, required), `key` (binary or string),
`topic` (string; the `topic` option overrides it), `partition` (int; absent or null: the partitioner
picks, murmur2 on the key like Java clients unless `kafka.partitioner` says otherwise), `headers`
(array<struct<key string, value binary>>). Other columns are ignored.

Delivery is at least once, like Spark's Kafka sink: a task returns only after every record it produced is
acknowledged; a failed task is retried by Spark and may write some records twice.
"""

from collections.abc import Iterator

from pyspark.sql.types import ArrayType, BinaryType, IntegerType, LongType, ShortType, StringType, StructType

from spark_jobs.source.options import OptionError, SinkOptions
from spark_jobs.source.schema import HEADER_TYPE

BYTES_TYPES = (BinaryType, StringType)


def check_sink_schema(schema: StructType, options: SinkOptions) -> None:
    """Refuse, before any task runs, a DataFrame the sink cannot write."""
    fields = {field.name: field.dataType for field in schema.fields}
    if "value" not in fields:
        raise OptionError("the strom sink needs a 'value' column (binary or string)")
    for name in ("key", "value"):
        if name in fields and not isinstance(fields[name], BYTES_TYPES):
            raise OptionError(f"column {name!r} must be binary or string, not {fields[name].simpleString()}")
    if options.topic is None and "topic" not in fields:
        raise OptionError("the strom sink needs a 'topic' option or a 'topic' column")
    if "topic" in fields and not isinstance(fields["topic"], StringType):
        raise OptionError(f"column 'topic' must be a string, not {fields['topic'].simpleString()}")
    if "partition" in fields and not isinstance(fields["partition"], (IntegerType, LongType, ShortType)):
        raise OptionError(f"column 'partition' must be an integer, not {fields['partition'].simpleString()}")
    if "headers" in fields and fields["headers"] != ArrayType(HEADER_TYPE):
        raise OptionError("column 'headers' must be array<struct<key:string,value:binary>>, not "
                          + fields["headers"].simpleString())


def produce_batches(options: SinkOptions, batches: Iterator) -> int:
    """Produce every row of the Arrow `batches` and return how many; raise if any is not acknowledged."""
    from confluent_kafka import KafkaException, Producer

    producer = Producer({"partitioner": "murmur2_random", **options.client})
    failures: list = []

    def delivered(error, _message) -> None:
        if error is not None:
            failures.append(error)

    count = 0
    for batch in batches:
        columns = batch.schema.names
        values = batch.column("value").to_pylist()
        size = len(values)
        keys = batch.column("key").to_pylist() if "key" in columns else [None] * size
        topics = [options.topic] * size if options.topic else batch.column("topic").to_pylist()
        partitions = batch.column("partition").to_pylist() if "partition" in columns else [None] * size
        headers = batch.column("headers").to_pylist() if "headers" in columns else [None] * size
        for topic, key, value, partition, header in zip(topics, keys, values, partitions, headers, strict=True):
            if topic is None:
                raise OptionError(f"a row has a null topic (key {key!r})")
            record = {"key": key, "value": value, "on_delivery": delivered,
                      "partition": -1 if partition is None else partition}
            if header:
                record["headers"] = [(item["key"], item["value"]) for item in header]
            while True:
                try:
                    producer.produce(topic, **record)
                    break
                except BufferError:  # the local queue is full: serve delivery reports, then retry
                    producer.poll(0.05)
        count += size
        producer.poll(0)
        if failures:
            break
    producer.flush()
    if failures:
        raise KafkaException(failures[0])
    return count
