"""Broker metrics: what the broker counts, and the two ways it shows them.

- what is counted lives below replication, in `brokerd.counters` (the partitions, the replica manager, the
  fetch handler and the dispatcher bump it): per-topic byte/message/request counters bumped once per batch or
  per request, never per record, and per-API request latency histograms.
- `sample` reads a consistent `BrokerSample` from the running broker (counters plus gauges: partitions,
  leaders, under-replicated, offline replicas, connections, log sizes per partition and log dir).
- `prometheus` renders a sample with the names the Prometheus JMX exporter's Kafka rules produce and serves
  them at `/metrics` (`strom.metrics.port`).
- `publisher` writes samples every `strom.metrics.sample.interval.ms` to the internal topic `__strom_metrics`
  (record format: `records`, documented in README).

Event loop only, like the rest of the broker.
"""
