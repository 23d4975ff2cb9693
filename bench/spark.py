"""`make bench-spark`: the `strom` data source and the lag report, on local Spark.

1. Read throughput. N x 1 KiB records in a topic of P partitions on a standalone Strom broker, read
   (a) by one plain confluent-kafka consumer assigned every partition, touching each value (the peer),
   (b) by `spark.read.format("strom")` on local[2], summing the values' lengths in Spark (every value
   crosses into the JVM as Arrow), session already started (its start-up is printed apart).
   Printed: seconds, MB/s and records/s of each, and the data source's ratio to the plain consumer.
2. Lag report. 7 days of lag samples (one per minute) for 500 groups consuming 5,000 partitions in
   total (10 each, over 50 topics of 100 partitions): 50.4M samples, generated with Spark into Parquet
   (the job's `--samples` input; a topic holding them would be ~10 GB) and then reported over the whole
   7 days (`python -m spark_jobs.lag_report --samples … --period-hours 168`, run in this process on
   local[2]). Printed: generation and report seconds, samples per second, and each step's seconds.

Environment: BENCH_SPARK_RECORDS (1000000), BENCH_SPARK_PARTITIONS (8), BENCH_LAG_GROUPS (500),
BENCH_LAG_PARTITIONS (5000), BENCH_LAG_DAYS (7), BENCH_LAG_INTERVAL_S (60), BENCH_SPARK_PHASES
(read,lag).
"""

import contextlib
import io
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.peers.kafka_protocol import strom

RECORD_BYTES = 1024
TIMEOUT_S = 600


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def produce(bootstrap: str, topic: str, partitions: int, records: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the topic exists
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(60)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1_048_576,
                         "queue.buffering.max.kbytes": 1_048_576})
    value = os.urandom(RECORD_BYTES)
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(TIMEOUT_S):
        raise RuntimeError("the producer could not flush")


def plain_consumer(bootstrap: str, topic: str, partitions: int, records: int) -> int:
    """Every record's value length, summed, as one confluent-kafka consumer reads them."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-plain", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    seen = total = 0
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while seen < records:
            if time.monotonic() > deadline:
                raise RuntimeError(f"consumed {seen} of {records}")
            for message in consumer.consume(10_000, 1.0):
                if message.error() is None:
                    seen += 1
                    total += len(message.value())
    finally:
        consumer.close()
    return total


def read_phase(spark, records: int, partitions: int) -> None:
    from pyspark.sql import functions as F

    with strom() as peer:
        topic = "bench-spark"
        produce(peer.bootstrap, topic, partitions, records)
        megabytes = records * RECORD_BYTES / 1e6

        def spark_read() -> int:
            frame = spark.read.format("strom").option("kafka.bootstrap.servers", peer.bootstrap) \
                .option("subscribe", topic).load()
            return frame.select(F.sum(F.length("value"))).first()[0]

        results = []
        for name, read in (("confluent-kafka consumer", lambda: plain_consumer(peer.bootstrap, topic, partitions,
                                                                               records)),
                           ("strom data source (cold)", spark_read),  # first use: Python workers start
                           ("strom data source", spark_read)):
            started = time.perf_counter()
            total = read()
            seconds = time.perf_counter() - started
            assert total == records * RECORD_BYTES, (name, total)
            results.append((name, seconds))
        print(f"\nread {records} x {RECORD_BYTES} B from {partitions} partitions (local[2] for Spark)")
        print(f"{'reader':<26} {'seconds':>8} {'MB/s':>8} {'records/s':>10} {'vs plain':>9}")
        for name, seconds in results:
            print(f"{name:<26} {seconds:>8.2f} {megabytes / seconds:>8.1f} {records / seconds:>10.0f} "
                  f"{results[0][1] / seconds:>8.2f}x")


def generate_samples(spark, target: Path, groups: int, partitions: int, days: int, interval_s: int,
                     end_ms: int) -> int:
    """Lag samples in the contract's fields: group g consumes `partitions / groups` partitions; one group
    in ten lags in a 4-hour sawtooth (WARN above 5000 records, ERR above 10000, threshold above 8000)."""
    from pyspark.sql import functions as F

    rounds = days * 86_400 // interval_s
    start_ms = end_ms - rounds * interval_s * 1000
    series, round_ = F.col("id") % partitions, (F.col("id") / partitions).cast("long")
    lagging = (series % groups) % 10 == 0
    lag = F.when(lagging, (round_ % (4 * 3600 // interval_s)) * 60).otherwise((series * 37) % 1000)
    status = F.when(lag > 10_000, "ERR").when(lag > 5_000, "WARN").otherwise("OK")
    samples = spark.range(partitions * rounds, numPartitions=16).select(
        (F.lit(start_ms) + round_ * (interval_s * 1000)).alias("ts"),
        F.lit("bench").alias("cluster"),
        F.concat(F.lit("group-"), (series % groups).cast("string")).alias("group"),
        F.concat(F.lit("topic-"), (series / 100).cast("int").cast("string")).alias("topic"),
        (series % 100).cast("int").alias("partition"),
        (F.lit(1_000_000) + round_ * 100 - lag).alias("committed_offset"),
        (F.lit(1_000_000) + round_ * 100).alias("end_offset"),
        lag.cast("long").alias("lag"),
        (lag / 100.0).alias("lag_seconds"),
        status.alias("status"),
        status.alias("group_status"),
        (lag > 8_000).alias("threshold_breached"),
    )
    samples.write.mode("overwrite").parquet(str(target))
    return partitions * rounds


def lag_phase(spark, groups: int, partitions: int, days: int, interval_s: int) -> None:
    from spark_jobs import lag_report

    end = datetime.now(UTC).replace(second=0, microsecond=0)
    with tempfile.TemporaryDirectory(prefix="bench-lag-") as work:
        samples_dir = Path(work) / "samples"
        started = time.perf_counter()
        count = generate_samples(spark, samples_dir, groups, partitions, days, interval_s,
                                 int(end.timestamp() * 1000))
        generated = time.perf_counter() - started
        size_mb = sum(path.stat().st_size for path in samples_dir.rglob("*.parquet")) / 1e6
        started = time.perf_counter()
        steps = StepClock()
        with contextlib.redirect_stdout(steps):  # the job's progress lines
            status = lag_report.main(["--samples", str(samples_dir), "--end", end.isoformat(), "--period-hours",
                                      str(days * 24), "--output", str(Path(work) / "reports")])
        seconds = time.perf_counter() - started
        if status != 0:
            raise RuntimeError(f"the lag report failed ({status})")
        print(f"\nlag report: {groups} groups x {partitions} partitions, {days} days at {interval_s} s: "
              f"{count:,} samples ({size_mb:.0f} MB Parquet, generated in {generated:.0f} s)")
        print(f"report on local[2]: {seconds:.1f} s, {count / seconds:,.0f} samples/s")
        print("steps (s): " + ", ".join(f"{step} {step_s:.1f}" for step, step_s in steps.seconds().items()))


class StepClock(io.TextIOBase):
    """Takes a job's progress lines (stdout) and times its steps: each step ends at its last event."""

    def __init__(self):
        self.started = time.perf_counter()
        self.ends: dict[str, float] = {}

    def write(self, text: str) -> int:
        for line in text.splitlines():
            if line.startswith("{") and (event := json.loads(line)).get("event") == "progress":
                self.ends[event["step"]] = time.perf_counter() - self.started
        return len(text)

    def seconds(self) -> dict[str, float]:
        previous, durations = 0.0, {}
        for step, end in self.ends.items():
            durations[step], previous = end - previous, end
        return durations


def main() -> None:
    from spark_jobs.session import create_session

    phases = os.environ.get("BENCH_SPARK_PHASES", "read,lag").split(",")
    started = time.perf_counter()
    # a 50M-sample report sorts more than Spark's 1g driver (the only executor in local mode) holds
    spark = create_session("strom-bench", {"spark.driver.memory": "3g", "spark.sql.shuffle.partitions": "16"},
                           master="local[2]")
    print(f"SparkSession start (local[2]): {time.perf_counter() - started:.1f} s", flush=True)
    try:
        if "read" in phases:
            read_phase(spark, env_int("BENCH_SPARK_RECORDS", 1_000_000), env_int("BENCH_SPARK_PARTITIONS", 8))
        if "lag" in phases:
            lag_phase(spark, env_int("BENCH_LAG_GROUPS", 500), env_int("BENCH_LAG_PARTITIONS", 5000),
                      env_int("BENCH_LAG_DAYS", 7), env_int("BENCH_LAG_INTERVAL_S", 60))
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
