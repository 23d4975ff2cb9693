"""The `strom` data source against a real standalone broker, checked against a plain confluent-kafka
consumer reading the same topic (the oracle)."""

import threading
import time
from datetime import UTC, datetime

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.broker import standalone_broker
from tests.support.polling import wait_until

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with standalone_broker(tmp_path_factory.mktemp("broker")) as running:
        yield running


@pytest.fixture(scope="module")
def admin(broker):
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def create_topic(admin, name, partitions=3, config=None):
    admin.create_topics([NewTopic(name, partitions, 1, config=config or {})])[name].result(30)
    wait_until(lambda: len(admin.list_topics(name, timeout=5).topics[name].partitions) == partitions,
               message=f"topic {name}")


def produce(broker, topic, records, **config):
    """records: dicts of produce() arguments (value, key, partition, headers, timestamp)."""
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, **config})
    for record in records:
        producer.produce(topic, **record)
    assert producer.flush(30) == 0


def consume_all(broker, topic, partitions=3):
    """The oracle: every record as a plain consumer sees it, {(partition, offset): (key, value, ts, headers)}."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "oracle", "enable.partition.eof": True,
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    seen, ended = {}, set()
    deadline = time.monotonic() + 60
    while len(ended) < partitions and time.monotonic() < deadline:
        for message in consumer.consume(1000, 1.0):
            if message.error() and message.error().code() == KafkaError._PARTITION_EOF:
                ended.add(message.partition())
            elif not message.error():
                seen[message.partition(), message.offset()] = (message.key(), message.value(), message.timestamp()[1],
                                                               message.headers())
    consumer.close()
    assert len(ended) == partitions, "the oracle consumer did not reach the end"
    return seen


def read(spark, broker, topic, **options):
    reader = spark.read.format("strom").option("kafka.bootstrap.servers", broker.bootstrap).option("subscribe", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def ms(moment):
    return int(moment.replace(tzinfo=UTC).timestamp() * 1000)


def test_split_ranges_read_every_offset_exactly_once(spark, broker, admin):
    create_topic(admin, "split")
    produce(broker, "split", [{"key": b"k%d" % i, "value": b"v%d" % i} for i in range(5000)])
    expected = consume_all(broker, "split")
    frame = read(spark, broker, "split", maxRecordsPerPartition="300")
    assert frame.rdd.getNumPartitions() >= 5000 // 300
    rows = frame.select("partition", "offset", "key", "value", "timestamp", "topic", "timestampType").collect()
    assert len(rows) == len(expected)  # no duplicate from overlapping pieces
    assert {(r.partition, r.offset): (r.key, r.value, ms(r.timestamp), None) for r in rows} == expected
    assert {r.topic for r in rows} == {"split"} and {r.timestampType for r in rows} == {0}  # CreateTime
    # minPartitions splits in proportion to size
    assert read(spark, broker, "split", minPartitions="12").rdd.getNumPartitions() >= 12


def test_json_offsets_bound_each_partition(spark, broker, admin):
    create_topic(admin, "ranges", partitions=2)
    produce(broker, "ranges", [{"value": b"%d" % i, "partition": i % 2} for i in range(200)])
    frame = read(spark, broker, "ranges", startingOffsets='{"ranges": {"0": 10, "1": -2}}',
                 endingOffsets='{"ranges": {"0": 25, "1": -1}}')
    got = sorted((r.partition, r.offset) for r in frame.collect())
    assert got == [(0, o) for o in range(10, 25)] + [(1, o) for o in range(100)]
    with pytest.raises(Exception, match="must list every partition read"):
        read(spark, broker, "ranges", startingOffsets='{"ranges": {"0": 10}}').collect()
    with pytest.raises(Exception, match="beyond its high watermark"):
        read(spark, broker, "ranges", endingOffsets='{"ranges": {"0": 500, "1": -1}}').collect()


def test_timestamps_select_offsets(spark, broker, admin):
    create_topic(admin, "stamped", partitions=1)
    base = ms(datetime(2026, 1, 1))
    produce(broker, "stamped", [{"value": b"%d" % i, "timestamp": base + i * 1000} for i in range(60)])
    frame = read(spark, broker, "stamped", startingTimestamp=str(base + 10_000), endingTimestamp=str(base + 20_500))
    rows = sorted(frame.collect(), key=lambda r: r.offset)
    assert [r.offset for r in rows] == list(range(10, 21))
    assert [ms(r.timestamp) for r in rows] == [base + i * 1000 for i in range(10, 21)]
    # past the last record: an error by default, nothing to read with the 'latest' strategy
    later = str(base + 3_600_000)
    with pytest.raises(Exception, match="has no record with a timestamp >="):
        read(spark, broker, "stamped", startingTimestamp=later).collect()
    assert read(spark, broker, "stamped", startingTimestamp=later,
                startingOffsetsByTimestampStrategy="latest").count() == 0


def test_headers_and_compressed_batches(spark, broker, admin):
    create_topic(admin, "packed")
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        produce(broker, "packed", [{"key": codec.encode(), "value": b"%s-%d" % (codec.encode(), i) * 20,
                                    "headers": [("codec", codec.encode()), ("i", b"%d" % i)] if i % 3 else None}
                                   for i in range(300)], **{"compression.type": codec})
    expected = consume_all(broker, "packed")
    rows = read(spark, broker, "packed", includeHeaders="true").collect()
    got = {(r.partition, r.offset): (r.key, r.value, ms(r.timestamp),
                                     [(h.key, h.value) for h in r.headers] if r.headers else None) for r in rows}
    assert len(rows) == 1500 and got == expected
    assert "headers" not in read(spark, broker, "packed").columns


def test_a_topic_written_while_it_is_read(spark, broker, admin):
    create_topic(admin, "busy", partitions=2)
    produce(broker, "busy", [{"value": b"first"} for _ in range(2000)])
    stop = threading.Event()

    def keep_writing():
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 2})
        while not stop.is_set():
            for _ in range(200):
                producer.produce("busy", value=b"more")
            producer.poll(0)
            time.sleep(0.01)
        producer.flush(30)

    writer = threading.Thread(target=keep_writing)
    writer.start()
    try:
        rows = read(spark, broker, "busy", maxRecordsPerPartition="700").select("partition", "offset").collect()
    finally:
        stop.set()
        writer.join()
    assert len(rows) >= 2000
    for partition in (0, 1):  # each partition: offsets 0..n-1, each once, whatever arrived meanwhile
        offsets = sorted(r.offset for r in rows if r.partition == partition)
        assert offsets == list(range(len(offsets)))


def test_data_deleted_by_retention(spark, broker, admin):
    create_topic(admin, "trimmed", partitions=1)
    produce(broker, "trimmed", [{"value": b"%d" % i} for i in range(100)])
    admin.delete_records([TopicPartition("trimmed", 0, 40)])[TopicPartition("trimmed", 0, 40)].result(30)
    with pytest.raises(Exception, match="no longer in the log"):
        read(spark, broker, "trimmed", startingOffsets='{"trimmed": {"0": 0}}').collect()
    rows = read(spark, broker, "trimmed", startingOffsets='{"trimmed": {"0": 0}}', failOnDataLoss="false").collect()
    assert sorted(r.offset for r in rows) == list(range(40, 100))


def test_bad_input_is_refused_in_one_line(spark, broker):
    with pytest.raises(Exception, match="unknown topic"):
        read(spark, broker, "no-such-topic").collect()
    with pytest.raises(Exception, match="'latest' is not allowed in a batch query"):
        read(spark, broker, "split", startingOffsets="latest").collect()
    with pytest.raises(Exception, match="fixed schema"):
        spark.read.format("strom").schema("value binary").option("kafka.bootstrap.servers", broker.bootstrap) \
            .option("subscribe", "split").load().collect()


def test_subscribe_pattern_and_assign(spark, broker, admin):
    create_topic(admin, "metrics-a", partitions=1)
    create_topic(admin, "metrics-b", partitions=2)
    produce(broker, "metrics-a", [{"value": b"a"}] * 5)
    produce(broker, "metrics-b", [{"value": b"b", "partition": p} for p in (0, 1) for _ in range(3)])
    pattern = (spark.read.format("strom").option("kafka.bootstrap.servers", broker.bootstrap)
               .option("subscribePattern", "metrics-.*").load())
    assert sorted((r.topic, r.partition) for r in pattern.select("topic", "partition").distinct().collect()) == \
        [("metrics-a", 0), ("metrics-b", 0), ("metrics-b", 1)]
    assigned = (spark.read.format("strom").option("kafka.bootstrap.servers", broker.bootstrap)
                .option("assign", '{"metrics-b": [1]}').load())
    assert [(r.partition, r.value) for r in assigned.collect()] == [(1, b"b")] * 3


def test_the_writer_produces_keys_values_partitions_and_headers(spark, broker, admin):
    create_topic(admin, "written")
    rows = [(f"k{i}", f"v{i}", i % 3, [("n", str(i).encode())]) for i in range(50)]
    frame = spark.createDataFrame(rows, "key string, value string, partition int, "
                                        "headers array<struct<key:string,value:binary>>")
    frame.write.format("strom").option("kafka.bootstrap.servers", broker.bootstrap).option("topic", "written") \
        .mode("append").save()
    got = consume_all(broker, "written")
    assert sorted((p, key, value, headers[0][1]) for (p, _), (key, value, _, headers) in got.items()) == \
        sorted((i % 3, f"k{i}".encode(), f"v{i}".encode(), str(i).encode()) for i in range(50))
    # a topic column instead of the option; the partitioner picks the partition
    spark.createDataFrame([("written", b"x")], "topic string, value binary").write.format("strom") \
        .option("kafka.bootstrap.servers", broker.bootstrap).mode("append").save()
    assert len(consume_all(broker, "written")) == 51
    with pytest.raises(Exception, match="needs a 'value' column"):
        spark.createDataFrame([("a",)], "key string").write.format("strom") \
            .option("kafka.bootstrap.servers", broker.bootstrap).option("topic", "written").mode("append").save()
    with pytest.raises(Exception, match="'overwrite' is not supported"):
        frame.write.format("strom").option("kafka.bootstrap.servers", broker.bootstrap) \
            .option("topic", "written").mode("overwrite").save()


def test_the_stream_resumes_from_its_checkpoint(spark, broker, admin, tmp_path):
    create_topic(admin, "stream", partitions=2)
    produce(broker, "stream", [{"value": b"a%d" % i} for i in range(300)])
    checkpoint, sink = tmp_path / "checkpoint", tmp_path / "sink"

    def run_available_now():
        query = (spark.readStream.format("strom").option("kafka.bootstrap.servers", broker.bootstrap)
                 .option("subscribe", "stream").option("startingOffsets", "earliest")
                 .option("maxOffsetsPerTrigger", "120").load()
                 .select("partition", "offset", "value")
                 .writeStream.format("parquet").option("path", str(sink))
                 .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
        query.awaitTermination(300)
        assert query.exception() is None
        return [progress["numInputRows"] for progress in query.recentProgress]

    first = run_available_now()
    assert sum(first) == 300 and max(first) <= 120 + 2  # rate limited into several micro-batches
    produce(broker, "stream", [{"value": b"b%d" % i} for i in range(100)])
    second = run_available_now()
    assert sum(second) == 100  # only what arrived since the checkpoint
    rows = spark.read.parquet(str(sink)).collect()
    assert len(rows) == 400 and len({(r.partition, r.offset) for r in rows}) == 400


def test_a_stream_written_to_a_topic(spark, broker, admin, tmp_path):
    create_topic(admin, "mirror-in", partitions=2)
    create_topic(admin, "mirror-out", partitions=2)
    produce(broker, "mirror-in", [{"key": b"k%d" % i, "value": b"v%d" % i, "partition": i % 2} for i in range(200)])
    query = (spark.readStream.format("strom").option("kafka.bootstrap.servers", broker.bootstrap)
             .option("subscribe", "mirror-in").option("startingOffsets", "earliest").load()
             .select("key", "value", "partition")
             .writeStream.format("strom").option("kafka.bootstrap.servers", broker.bootstrap)
             .option("topic", "mirror-out").option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    query.awaitTermination(300)
    assert query.exception() is None
    copied = consume_all(broker, "mirror-out", partitions=2)
    assert sorted((p, key, value) for (p, _), (key, value, _, _) in copied.items()) == \
        sorted((i % 2, b"k%d" % i, b"v%d" % i) for i in range(200))
