"""Broker metrics on a live 3-broker cluster: each broker's Prometheus `/metrics` (scraped with Prometheus'
own text parser) carries the documented Kafka names with values that match a known workload (bytes in within
1 % of the bytes produced, exact record counts, log sizes equal to what was appended on every replica), and the
control plane's rollups of `__strom_metrics` hold the same totals, including across a broker restart and while
the rollup consumer was down."""

import contextlib
import sqlite3
import urllib.request

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from tests.support.cluster import broker_cluster
from tests.support.controlplane import control_plane
from tests.support.polling import wait_until

pytestmark = pytest.mark.slow
TOPIC = "scraped"
VALUE_BYTES = 10_000
RECORDS = 600
SAMPLE_MS = 1000

DOCUMENTED = [  # README "Broker metrics": every broker serves these families
    "kafka_server_brokertopicmetrics_bytesin_total", "kafka_server_brokertopicmetrics_bytesout_total",
    "kafka_server_brokertopicmetrics_messagesin_total", "kafka_server_brokertopicmetrics_replicationbytesin_total",
    "kafka_server_brokertopicmetrics_replicationbytesout_total", "kafka_server_brokertopicmetrics_bytesrejected_total",
    "kafka_server_brokertopicmetrics_totalproducerequests_total",
    "kafka_server_brokertopicmetrics_totalfetchrequests_total",
    "kafka_server_brokertopicmetrics_failedproducerequests_total",
    "kafka_server_brokertopicmetrics_failedfetchrequests_total",
    "kafka_server_replicamanager_partitioncount", "kafka_server_replicamanager_leadercount",
    "kafka_server_replicamanager_underreplicatedpartitions", "kafka_server_replicamanager_underminisrpartitioncount",
    "kafka_server_replicamanager_atminisrpartitioncount", "kafka_server_replicamanager_offlinereplicacount",
    "kafka_server_replicamanager_isrshrinks_total", "kafka_server_replicamanager_isrexpands_total",
    "kafka_controller_kafkacontroller_activecontrollercount", "kafka_controller_kafkacontroller_offlinepartitionscount",
    "kafka_controller_kafkacontroller_globaltopiccount", "kafka_controller_kafkacontroller_globalpartitioncount",
    "kafka_network_requestmetrics_totaltimems", "kafka_network_requestmetrics_totaltimems_count",
    "kafka_network_requestmetrics_requests_total", "kafka_server_socket_server_metrics_connection_count",
    "kafka_log_log_size", "kafka_log_log_logendoffset", "kafka_log_log_logstartoffset",
    "kafka_cluster_partition_underreplicated", "kafka_log_logmanager_offlinelogdirectorycount",
    "kafka_server_kafkaserver_brokerstate", "strom_request_duration_seconds_bucket", "strom_log_dir_size_bytes",
    "strom_log_dir_capacity_bytes", "strom_log_dir_free_bytes", "process_open_fds",
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    directory = tmp_path_factory.mktemp("metrics")
    with control_plane(directory) as plane, broker_cluster(
            plane, directory, 3, overrides={"strom.metrics.sample.interval.ms": str(SAMPLE_MS)},
            metrics=True) as cluster:
        cluster.create_topic(TOPIC, partitions=3, replication_factor=3)
        for partition in range(3):
            cluster.wait_for_isr(TOPIC, 3, partition)
        yield cluster


def scrape(port: int) -> dict[str, list]:
    """{sample name: [(labels, value)]} from one broker's /metrics, parsed by prometheus_client's parser."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = response.read().decode()
    samples: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


def value(samples: dict, name: str, **labels) -> float:
    """The sum over the series of `name` whose labels include `labels` (an all-topics series has no topic)."""
    total = 0.0
    for series_labels, v in samples.get(name, []):
        if all(series_labels.get(k) == str(val) for k, val in labels.items()) and \
                ("topic" in labels or "topic" not in series_labels or name.startswith(("kafka_log", "kafka_cluster"))):
            total += v
    return total


def cluster_sum(cluster, name: str, **labels) -> float:
    return sum(value(scrape(b.metrics_port), name, **labels) for b in cluster.brokers.values())


def produce(bootstrap: str, count: int) -> int:
    """`count` records of VALUE_BYTES random-ish bytes, acks=all; returns the payload bytes."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20,
                         "compression.type": "none", "enable.idempotence": False})
    errors = []
    for i in range(count):
        producer.produce(TOPIC, value=(f"{i:08d}" * (VALUE_BYTES // 8)).encode(),
                         on_delivery=lambda err, _m: err and errors.append(err))
        producer.poll(0)
    assert producer.flush(60) == 0 and not errors, errors
    return count * VALUE_BYTES


def consume_all(bootstrap: str, expected: int) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "scrape-readers", "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(3)])
    seen = 0

    def read() -> bool:
        nonlocal seen
        seen += sum(1 for m in consumer.consume(500, 1.0) if m.error() is None)
        return seen >= expected

    try:
        wait_until(read, 60, interval_s=0, message=f"{expected} records consumed")
    finally:
        consumer.close()


def test_each_broker_serves_the_documented_names_and_the_workload_adds_up(cluster):
    payload = produce(cluster.bootstrap, RECORDS)
    consume_all(cluster.bootstrap, RECORDS)
    for broker in cluster.brokers.values():
        samples = scrape(broker.metrics_port)
        missing = [name for name in DOCUMENTED if name not in samples]
        assert not missing, f"broker {broker.broker_id} lacks {missing}"
        assert value(samples, "kafka_server_kafkaserver_brokerstate") == 3

    bytes_in = cluster_sum(cluster, "kafka_server_brokertopicmetrics_bytesin_total", topic=TOPIC)
    assert payload <= bytes_in <= payload * 1.01, (bytes_in, payload)
    assert cluster_sum(cluster, "kafka_server_brokertopicmetrics_messagesin_total", topic=TOPIC) == RECORDS
    # the all-topics series includes the topic's bytes
    assert cluster_sum(cluster, "kafka_server_brokertopicmetrics_bytesin_total") >= bytes_in
    bytes_out = cluster_sum(cluster, "kafka_server_brokertopicmetrics_bytesout_total", topic=TOPIC)
    # Bytes sent, as Kafka counts them: a response cut at the partition's max bytes ends in a partial batch that
    # the consumer fetches again whole, so a little more than was appended (never a follower's share).
    assert bytes_in <= bytes_out <= bytes_in * 1.15, (bytes_out, bytes_in)
    # RF 3: every appended byte reaches both followers, and every replica's log holds exactly what was appended
    wait_until(lambda: cluster_sum(cluster, "kafka_server_brokertopicmetrics_replicationbytesin_total",
                                   topic=TOPIC) == 2 * bytes_in, 30, interval_s=0.2, message="followers caught up")
    assert cluster_sum(cluster, "kafka_log_log_size", topic=TOPIC) == 3 * bytes_in
    assert cluster_sum(cluster, "kafka_server_brokertopicmetrics_failedproducerequests_total", topic=TOPIC) == 0
    assert cluster_sum(cluster, "kafka_controller_kafkacontroller_activecontrollercount") == 1
    assert cluster_sum(cluster, "kafka_server_replicamanager_leadercount") == \
        cluster_sum(cluster, "kafka_controller_kafkacontroller_globalpartitioncount") / 3
    produce_p99 = max(value(scrape(b.metrics_port), "kafka_network_requestmetrics_totaltimems",
                            request="Produce", quantile="0.99") for b in cluster.brokers.values())
    assert produce_p99 > 0
    # as Kafka, every Fetch is also timed as a FetchConsumer or a FetchFollower (followers replicate: RF 3)
    fetches = {request: 0.0 for request in ("Fetch", "FetchConsumer", "FetchFollower")}
    for broker in cluster.brokers.values():
        samples = scrape(broker.metrics_port)
        counts = {request: value(samples, "kafka_network_requestmetrics_totaltimems_count", request=request)
                  for request in fetches}
        assert counts["Fetch"] == counts["FetchConsumer"] + counts["FetchFollower"], counts
        fetches = {request: fetches[request] + counts[request] for request in fetches}
    assert fetches["FetchConsumer"] > 0 and fetches["FetchFollower"] > 0, fetches


def rollup_bytes_in(plane) -> tuple[int, int]:
    """(bytes in of TOPIC at 1 min resolution, same summed over the brokers' all-topics points)."""
    with contextlib.closing(sqlite3.connect(plane.database, timeout=10)) as db:
        topic = db.execute("SELECT COALESCE(SUM(bytes_in), 0) FROM metrics_topicmetricpoint "
                           "WHERE resolution = 60 AND topic = ?", (TOPIC,)).fetchone()[0]
        brokers = db.execute("SELECT COALESCE(SUM(bytes_in), 0) FROM metrics_brokermetricpoint "
                             "WHERE resolution = 60").fetchone()[0]
    return topic, brokers


def test_rollups_match_the_brokers_across_a_restart_and_a_consumer_outage(cluster):
    plane = cluster.plane
    plane.start_metrics_consumer()
    produce(cluster.bootstrap, 50)
    scraped = lambda: cluster_sum(cluster, "kafka_server_brokertopicmetrics_bytesin_total", topic=TOPIC)  # noqa: E731
    wait_until(lambda: rollup_bytes_in(plane)[0] == scraped(), 60, interval_s=0.5,
               message="the rollups to catch up with the brokers")
    before_restart = scraped()

    plane.stop_metrics_consumer()  # the control plane's consumer is down …
    leader = cluster.leader(TOPIC, 0)
    cluster.restart(leader)        # … and a broker restarts (its counters start again at 0)
    for partition in range(3):
        cluster.wait_for_isr(TOPIC, 3, partition, timeout_s=60)
    produce(cluster.bootstrap, 50)
    after = scraped()
    assert after < before_restart + 50 * VALUE_BYTES  # the restarted broker forgot its count

    plane.start_metrics_consumer()
    low, high = before_restart + 50 * VALUE_BYTES, before_restart + 50 * VALUE_BYTES * 1.01
    wait_until(lambda: low <= rollup_bytes_in(plane)[0] <= high, 90, interval_s=0.5,
               message=f"the rollups to hold {low}..{high:.0f} bytes in")
    topic_total, broker_total = rollup_bytes_in(plane)
    assert broker_total >= topic_total  # the brokers' totals also count __strom_metrics itself
