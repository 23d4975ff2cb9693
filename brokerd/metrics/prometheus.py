"""Prometheus `/metrics`: a `BrokerSample` under the names the Prometheus JMX exporter's Kafka rules give
Kafka's MBeans (Strimzi's `kafka-metrics.yaml` dialect: lowercase names, `_total` counters, Kafka's label
keys), so Grafana dashboards and alert rules written for Kafka work unchanged. Strom's own metrics are
`strom_*` in base units. README lists every name.

Counters of BrokerTopicMetrics come twice, as jmx_exporter shows them: one series per topic (`topic` label)
and one without the label for all topics. Request latency: `kafka_network_requestmetrics_totaltimems`
gauges with `quantile` "0.50" … "0.999" in milliseconds over the last five minutes (measured from the
request's arrival until its response is ready, i.e. without the send), plus `…_count`; and the histogram
`strom_request_duration_seconds` for `histogram_quantile`.

The endpoint is a small asyncio HTTP/1.1 server on the broker's event loop (`GET /metrics`, Connection:
close): the sample is taken on the loop, so it never races the state it reads, and it is a snapshot of plain values,
rendered to text on a worker thread (`render`) — on the loop, the rendering held it 5-6 ms at every scrape of a
`make run` broker (issue 18, `strom.loop.slow.callback.ms=5`). No `_created` series.
"""

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.metrics_core import Metric, UnknownMetricFamily

from brokerd.counters import COUNTER_NAMES, LATENCY_BUCKETS_S, histogram_quantile
from brokerd.metrics.sample import BrokerSample

log = logging.getLogger(__name__)

TOPIC_METRIC_NAMES = {
    "bytes_in": "bytesin", "bytes_out": "bytesout", "replication_bytes_in": "replicationbytesin",
    "replication_bytes_out": "replicationbytesout", "messages_in": "messagesin", "bytes_rejected": "bytesrejected",
    "produce_requests": "totalproducerequests", "fetch_requests": "totalfetchrequests",
    "failed_produce_requests": "failedproducerequests", "failed_fetch_requests": "failedfetchrequests",
}
"""`TopicCounters` field → the BrokerTopicMetrics MBean name jmx_exporter lowercases (PerSec stripped)."""
assert set(TOPIC_METRIC_NAMES) == set(COUNTER_NAMES)
QUANTILES = ("0.50", "0.75", "0.95", "0.98", "0.99", "0.999")
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
RUNNING_BROKER_STATE = 3


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def sample_families(sample: BrokerSample) -> Iterator[Metric]:
    """Every metric family of one sample."""
    for field, mbean in TOPIC_METRIC_NAMES.items():
        family = CounterMetricFamily(f"kafka_server_brokertopicmetrics_{mbean}", f"BrokerTopicMetrics {mbean}")
        name = family.name + "_total"
        family.add_sample(name, {}, sample.totals[field])
        for topic, counters in sample.topics.items():
            family.add_sample(name, {"topic": topic}, counters[field])
        yield family

    yield _gauge("kafka_server_replicamanager_partitioncount", "replicas on this broker", sample.partition_count)
    yield _gauge("kafka_server_replicamanager_leadercount", "partitions led by this broker", sample.leader_count)
    yield _gauge("kafka_server_replicamanager_underreplicatedpartitions",
                 "partitions led here whose ISR is smaller than the replica set", sample.under_replicated)
    yield _gauge("kafka_server_replicamanager_underminisrpartitioncount",
                 "partitions led here with ISR below min.insync.replicas", sample.under_min_isr)
    yield _gauge("kafka_server_replicamanager_atminisrpartitioncount",
                 "partitions led here with ISR equal to min.insync.replicas", sample.at_min_isr)
    yield _gauge("kafka_server_replicamanager_offlinereplicacount", "replicas in offline log dirs",
                 sample.offline_replicas)
    yield CounterMetricFamily("kafka_server_replicamanager_isrshrinks", "ISR shrinks committed",
                              value=sample.isr_shrinks)
    yield CounterMetricFamily("kafka_server_replicamanager_isrexpands", "ISR expansions committed",
                              value=sample.isr_expands)
    yield _gauge("kafka_controller_kafkacontroller_activecontrollercount",
                 "1 on the broker named controller", sample.active_controller)
    yield _gauge("kafka_controller_kafkacontroller_offlinepartitionscount",
                 "partitions without a live leader (controller only)", sample.offline_partitions)
    yield _gauge("kafka_controller_kafkacontroller_globaltopiccount", "topics in the cluster", sample.global_topics)
    yield _gauge("kafka_controller_kafkacontroller_globalpartitioncount", "partitions in the cluster",
                 sample.global_partitions)
    yield _gauge("kafka_server_kafkaserver_brokerstate", "broker state (3 = running)", RUNNING_BROKER_STATE)
    connections = GaugeMetricFamily("kafka_server_socket_server_metrics_connection_count", "open client connections",
                                    labels=["listener", "networkProcessor"])
    connections.add_metric(["PLAINTEXT", "0"], sample.connections)
    yield connections

    yield from _request_families(sample)
    yield from _log_families(sample)
    yield GaugeMetricFamily("strom_broker_start_time_seconds", "when this broker process started (unix time)",
                            value=sample.started_ms / 1000)


def _request_families(sample: BrokerSample) -> Iterator[Metric]:
    total_time = GaugeMetricFamily("kafka_network_requestmetrics_totaltimems",
                                   "request time percentiles over the last 5 minutes (ms)",
                                   labels=["request", "quantile"])
    total_count = UnknownMetricFamily("kafka_network_requestmetrics_totaltimems_count", "requests timed",
                                      labels=["request"])
    requests = CounterMetricFamily("kafka_network_requestmetrics_requests", "requests per API and version",
                                   labels=["request", "version"])
    errors = CounterMetricFamily("kafka_network_requestmetrics_errors", "requests whose handling failed",
                                 labels=["request", "error"])
    histogram = HistogramMetricFamily("strom_request_duration_seconds", "request handling time",
                                      labels=["request"])
    for api, stats in sorted(sample.requests.items()):
        for quantile in QUANTILES:
            value = histogram_quantile(float(quantile), stats.recent_bucket_counts)
            total_time.add_metric([api, quantile], 0.0 if value is None else value * 1000)
        total_count.add_metric([api], stats.requests)
        for version, count in sorted(stats.requests_by_version.items()):
            requests.add_metric([api, str(version)], count)
        if stats.failures:
            errors.add_metric([api, "UNKNOWN_SERVER_ERROR"], stats.failures)
        cumulative, buckets = 0, []
        for bound, count in zip((*LATENCY_BUCKETS_S, float("inf")), stats.bucket_counts, strict=True):
            cumulative += count
            buckets.append(("+Inf" if bound == float("inf") else repr(bound), cumulative))
        histogram.add_metric([api], buckets, stats.latency_sum_s)
    yield from (total_time, total_count, requests, errors, histogram)


def _log_families(sample: BrokerSample) -> Iterator[Metric]:
    size = GaugeMetricFamily("kafka_log_log_size", "bytes of the partition's log here", labels=["topic", "partition"])
    end = GaugeMetricFamily("kafka_log_log_logendoffset", "log end offset", labels=["topic", "partition"])
    start = GaugeMetricFamily("kafka_log_log_logstartoffset", "log start offset", labels=["topic", "partition"])
    under = GaugeMetricFamily("kafka_cluster_partition_underreplicated", "1 if under-replicated (leader only)",
                              labels=["topic", "partition"])
    replicas = GaugeMetricFamily("kafka_cluster_partition_replicascount", "replicas (leader only)",
                                 labels=["topic", "partition"])
    in_sync = GaugeMetricFamily("kafka_cluster_partition_insyncreplicascount", "in-sync replicas (leader only)",
                                labels=["topic", "partition"])
    for p in sample.partitions:
        labels = [p.topic, str(p.partition)]
        size.add_metric(labels, p.size_bytes)
        end.add_metric(labels, p.log_end_offset)
        start.add_metric(labels, p.log_start_offset)
        if p.leader:
            under.add_metric(labels, int(p.in_sync_replicas < p.replicas))
            replicas.add_metric(labels, p.replicas)
            in_sync.add_metric(labels, p.in_sync_replicas)
    yield from (size, end, start, under, replicas, in_sync)
    yield _gauge("kafka_log_logmanager_offlinelogdirectorycount", "offline log dirs",
                 sum(1 for d in sample.log_dirs if not d.online))
    used = GaugeMetricFamily("strom_log_dir_size_bytes", "bytes of partition logs in the log dir", labels=["log_dir"])
    total = GaugeMetricFamily("strom_log_dir_capacity_bytes", "capacity of the log dir's file system",
                              labels=["log_dir"])
    free = GaugeMetricFamily("strom_log_dir_free_bytes", "bytes still available in the log dir's file system",
                             labels=["log_dir"])
    for d in sample.log_dirs:
        used.add_metric([d.path], d.size_bytes)
        total.add_metric([d.path], d.total_bytes)
        free.add_metric([d.path], d.free_bytes)
    yield from (used, total, free)


class _SampleCollector:
    def __init__(self, take_sample: Callable[[], BrokerSample]) -> None:
        self._take_sample = take_sample

    def collect(self) -> Iterator[Metric]:
        return sample_families(self._take_sample())


def render(sample: BrokerSample) -> bytes:
    """`sample` and the process metrics in Prometheus' text format; thread-safe (reads only `sample` and /proc)."""
    return generate_latest(registry_for(lambda: sample))


def registry_for(take_sample: Callable[[], BrokerSample]) -> CollectorRegistry:
    """A registry with the broker's families and the process metrics (`process_open_fds`, CPU, memory)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_SampleCollector(take_sample))
    ProcessCollector(registry=registry)
    return registry


class MetricsHttpServer:
    """`GET /metrics` → a sample taken now, in Prometheus' text format (`render`, on a worker thread); anything else
    404. Event loop only."""

    REQUEST_TIMEOUT_S = 10.0

    def __init__(self, take_sample: Callable[[], BrokerSample]) -> None:
        self._take_sample = take_sample
        self._server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        assert self._server is not None, "start() first"
        return self._server.sockets[0].getsockname()[1]

    async def start(self, host: str, port: int) -> None:
        self._server = await asyncio.start_server(self._serve, host or None, port, reuse_address=True)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(self.REQUEST_TIMEOUT_S):
                request_line = (await reader.readline()).decode("latin-1").split()
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass
            if len(request_line) >= 2 and request_line[0] in ("GET", "HEAD") \
                    and request_line[1].split("?")[0] == "/metrics":
                body = await asyncio.to_thread(render, self._take_sample())
                status, content_type = "200 OK", CONTENT_TYPE
            else:
                body, status, content_type = b"not found; try /metrics\n", "404 Not Found", "text/plain"
            head = (f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
                    "Connection: close\r\n\r\n").encode()
            writer.write(head if request_line[:1] == ["HEAD"] else head + body)
            await writer.drain()
        except (TimeoutError, ConnectionError, UnicodeDecodeError) as exc:
            log.debug("metrics request failed: %s", exc)
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
