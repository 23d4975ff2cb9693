"""`spark.read.format("strom")`, `spark.readStream.format("strom")`, `df.write.format("strom")` and
`df.writeStream.format("strom")`: Spark's Kafka connector as a Python data source (Spark 4 API).

Where each part runs (Spark starts the processes): `schema()` and the readers' planning (`partitions()`,
stream offsets) in Python planner processes of the driver, which look offsets up in the cluster; `read()`
and `write()` in Python workers on the executors, one task per offset range or DataFrame partition. The
readers and writers hold only parsed options (picklable); every Kafka client is created where it is used.

    from spark_jobs.source import register
    register(spark)
    df = (spark.read.format("strom").option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "orders").option("startingOffsets", "earliest").load())
"""

from dataclasses import dataclass

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow

from spark_jobs.source.fetch import read_range
from spark_jobs.source.offsets import (
    OffsetLookup,
    OffsetLookupError,
    check_start,
    plan_batch,
    rate_limit,
    resolve_bound,
    split_ranges,
)
from spark_jobs.source.options import (
    OptionError,
    SourceOptions,
    TopicPartition,
    include_headers,
    parse_sink_options,
    parse_source_options,
)
from spark_jobs.source.produce import check_sink_schema, produce_batches
from spark_jobs.source.schema import arrow_schema, kafka_schema

StreamOffsets = dict[str, dict[str, int]]  # Spark's JSON offsets: {"topic": {"0": 42}} (string partitions)


class StromDataSource(DataSource):
    """The `strom` format: Kafka topics as DataFrames, with Spark's Kafka source schema and options."""

    @classmethod
    def name(cls) -> str:
        return "strom"

    def schema(self):
        return kafka_schema(include_headers(self.options))

    def reader(self, schema):
        options = parse_source_options(self.options, streaming=False)
        _check_schema(schema, options)
        return StromBatchReader(options, schema)

    def streamReader(self, schema):
        options = parse_source_options(self.options, streaming=True)
        _check_schema(schema, options)
        return StromStreamReader(options, schema)

    def writer(self, schema, overwrite: bool):
        return StromWriter(_sink_options(self.options, schema, overwrite))

    def streamWriter(self, schema, overwrite: bool):
        return StromStreamWriter(_sink_options(self.options, schema, overwrite))


class StromBatchReader(DataSourceReader):
    """One Spark task per offset range; ranges fixed when the query is planned."""

    def __init__(self, options: SourceOptions, schema):
        self.options = options
        self.schema = schema

    def partitions(self):
        lookup = OffsetLookup(self.options.client, self.options.poll_timeout_s)
        ranges = plan_batch(self.options, lookup)
        return [InputPartition(piece) for piece in
                split_ranges(ranges, self.options.min_partitions, self.options.max_records_per_partition)]

    def read(self, partition):
        if partition.value is not None:  # Spark turns "no partitions" into one empty partition
            yield from read_range(self.options, partition.value, arrow_schema(self.schema))


class StromStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of offset ranges. Offsets are Spark's JSON form `{"topic": {"0": 42}}`, checkpointed by
    Spark; a restarted query continues from its checkpoint (`startingOffsets` applies to a new one only).
    Partitions that appear later are read from their log start offset."""

    def __init__(self, options: SourceOptions, schema):
        self.options = options
        self.schema = schema
        self._lookup: OffsetLookup | None = None  # planner process only (dropped when pickled)
        self._target: StreamOffsets | None = None  # Trigger.AvailableNow: the offsets to stop at

    def __getstate__(self):
        return {**self.__dict__, "_lookup": None}

    def initialOffset(self) -> StreamOffsets:
        lookup = self._offset_lookup()
        watermarks = lookup.watermarks(lookup.partitions(self.options))
        starts = resolve_bound(self.options.starting, watermarks, lookup, "startingOffsets",
                               no_record_latest=self.options.starting_timestamp_fallback_latest)
        return _nested({tp: check_start(tp, starts[tp], watermarks[tp][0], self.options.fail_on_data_loss)
                        for tp in watermarks})

    def getDefaultReadLimit(self):
        limit = self.options.max_offsets_per_trigger
        return ReadMaxRows(limit) if limit else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._latest()

    def latestOffset(self, start: StreamOffsets, limit) -> StreamOffsets:
        latest = self._target or self._latest()
        if not isinstance(limit, ReadMaxRows):
            return latest
        begins = self._begins(start, _flat(latest))
        return _nested(rate_limit(begins, _flat(latest), limit.max_rows))

    def partitions(self, start: StreamOffsets, end: StreamOffsets):
        ends = _flat(end)
        begins = self._begins(start, ends)
        ranges = {tp: (begins[tp], ends[tp]) for tp in ends}
        lost = {tp: r for tp, r in ranges.items() if r[0] > r[1]}
        if lost and self.options.fail_on_data_loss:
            raise OffsetLookupError(f"offsets went backwards (topic re-created?): {sorted(lost)}")
        ranges = {tp: r for tp, r in ranges.items() if tp not in lost}
        return [InputPartition(piece) for piece in
                split_ranges(ranges, self.options.min_partitions, self.options.max_records_per_partition)]

    def read(self, partition):
        yield from read_range(self.options, partition.value, arrow_schema(self.schema))

    def _begins(self, start: StreamOffsets, partitions) -> dict[TopicPartition, int]:
        """Where each partition's next range begins: its checkpointed offset, or for a partition the
        checkpoint does not know yet, its log start offset."""
        begins = {tp: offset for tp, offset in _flat(start).items() if tp in partitions}
        new = [tp for tp in partitions if tp not in begins]
        if new:
            begins.update({tp: low for tp, (low, _) in self._offset_lookup().watermarks(new).items()})
        return begins

    def _latest(self) -> StreamOffsets:
        lookup = self._offset_lookup()
        return _nested({tp: high for tp, (_, high) in lookup.watermarks(lookup.partitions(self.options)).items()})

    def _offset_lookup(self) -> OffsetLookup:
        if self._lookup is None:
            self._lookup = OffsetLookup(self.options.client, self.options.poll_timeout_s)
        return self._lookup


@dataclass(frozen=True)
class WrittenRecords(WriterCommitMessage):
    """What one write task produced, every record acknowledged."""

    records: int


class _ProducingWriter:
    """One write task: produce its rows (Arrow batches), every record acknowledged before it returns."""

    def __init__(self, options):
        self.options = options

    def write(self, iterator) -> WrittenRecords:
        return WrittenRecords(produce_batches(self.options, iterator))


class StromWriter(_ProducingWriter, DataSourceArrowWriter):
    """`df.write.format("strom")` (append only)."""


class StromStreamWriter(_ProducingWriter, DataSourceStreamArrowWriter):
    """`df.writeStream.format("strom")`: at least once, like Spark's Kafka sink."""

    def commit(self, messages, batchId) -> None:
        """Nothing to do: every record was acknowledged before its task finished (at least once)."""

    def abort(self, messages, batchId) -> None:
        """Nothing to undo: Kafka has no way to take acknowledged records back."""


def _sink_options(raw, schema, overwrite: bool):
    if overwrite:
        raise OptionError("the strom sink appends to topics; save mode 'overwrite' is not supported")
    options = parse_sink_options(raw)
    check_sink_schema(schema, options)
    return options


def _check_schema(schema, options: SourceOptions) -> None:
    if schema != kafka_schema(options.include_headers):
        raise OptionError("the strom source has a fixed schema (Spark's Kafka schema); do not pass .schema(...)")


def _flat(offsets: StreamOffsets) -> dict[TopicPartition, int]:
    return {(topic, int(partition)): offset for topic, partitions in offsets.items()
            for partition, offset in partitions.items()}


def _nested(offsets: dict[TopicPartition, int]) -> StreamOffsets:
    nested: StreamOffsets = {}
    for (topic, partition), offset in sorted(offsets.items()):
        nested.setdefault(topic, {})[str(partition)] = offset
    return nested
