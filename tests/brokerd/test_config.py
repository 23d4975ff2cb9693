"""Broker configuration from Kafka `server.properties` keys: defaults, validation, cluster-mode requirements."""

import pytest

from brokerd.config import ConfigError, build_config, load_properties
from kafkaspec.listeners import Endpoint


def test_defaults_and_advertised_listeners_follow_listeners():
    config = build_config({"listeners": "PLAINTEXT://127.0.0.1:9093", "log.dirs": "/a, /b"}, environ={})
    assert config.listeners == (Endpoint("PLAINTEXT", "127.0.0.1", 9093),)
    assert config.advertised_listeners == config.listeners
    assert [str(d) for d in config.log_dirs] == ["/a", "/b"]
    assert config.controlplane_url is None


def test_cluster_mode_reads_the_secret_from_the_environment():
    config = build_config({"strom.controlplane.url": "http://127.0.0.1:8000", "node.id": "2"},
                          environ={"STROM_CLUSTER_SECRET": "s3cret"})
    assert (config.controlplane_url, config.cluster_secret) == ("http://127.0.0.1:8000", "s3cret")


def test_metrics_keys_and_their_defaults():
    standalone = build_config({}).metrics
    assert (standalone.enable, standalone.port, standalone.sample_interval_ms) == (True, None, 10_000)
    assert standalone.topic_replication_factor == 1
    cluster = build_config({"strom.controlplane.url": "http://127.0.0.1:8000", "node.id": "1",
                            "strom.metrics.port": "9404", "strom.metrics.enable": "false"},
                           environ={"STROM_CLUSTER_SECRET": "s"}).metrics
    assert (cluster.enable, cluster.port, cluster.topic_replication_factor) == (False, 9404, 3)


def test_log_retention_check_interval_and_its_default():
    assert build_config({}).log_retention_check_interval_ms == 300_000  # Kafka's
    assert build_config({"log.retention.check.interval.ms": "1000"}).log_retention_check_interval_ms == 1000


def test_sched_slice_and_its_default():
    assert build_config({}).sched_slice_us == 0  # the kernel's default
    assert build_config({"strom.sched.slice.us": "100"}).sched_slice_us == 100
    assert build_config({"strom.sched.slice.us": "100000"}).sched_slice_us == 100_000


def test_loop_priority_and_its_default():
    assert build_config({}).loop_priority == 0  # off
    assert build_config({"strom.sched.loop.priority": "1"}).loop_priority == 1
    assert build_config({"strom.sched.loop.priority": "99"}).loop_priority == 99


def test_connection_limits_and_their_defaults():
    defaults = build_config({}).connections
    assert (defaults.request_max_bytes, defaults.max_idle_ms) == (104_857_600, 600_000)
    assert defaults.max_connections == defaults.max_connections_per_ip == 2**31 - 1
    limits = build_config({"max.connections": "500", "max.connections.per.ip": "0",
                           "max.connections.per.ip.overrides": "127.0.0.1:100, [::1]:5,host.example:7"}).connections
    assert limits.max_connections == 500
    assert (limits.per_ip_limit("127.0.0.1"), limits.per_ip_limit("::1"), limits.per_ip_limit("host.example"),
            limits.per_ip_limit("10.0.0.1")) == (100, 5, 7, 0)


@pytest.mark.parametrize(("properties", "environ", "message"), [
    ({"listeners": "bad"}, {}, "listeners: Invalid listener 'bad'"),
    ({"listeners": "PLAINTEXT://h:70000"}, {}, "out of range"),
    ({"advertised.listeners": "PLAINTEXT://a:1,PLAINTEXT://b:2"}, {}, "different name"),
    ({"strom.controlplane.url": "ftp://x"}, {"STROM_CLUSTER_SECRET": "s"}, "is not http://host:port"),
    ({"strom.controlplane.url": "http://127.0.0.1:8000", "node.id": "1"}, {}, "needs the cluster secret"),
    ({"strom.controlplane.url": "http://127.0.0.1:8000"}, {"STROM_CLUSTER_SECRET": "s"}, "needs --broker-id"),
    ({"replica.lag.time.max.ms": "0"}, {}, "replica.lag.time.max.ms"),
    ({"max.connections.per.ip": "0"}, {}, "admits nobody"),
    ({"max.connections.per.ip.overrides": "127.0.0.1"}, {}, "is not host:count"),
    ({"max.connections.per.ip.overrides": "a:b"}, {}, "'a:b' is not host:count"),
    ({"max.connections": "0"}, {}, "max.connections: 0 is below the minimum 1"),
    ({"strom.metrics.port": "70000"}, {}, "strom.metrics.port: 70000 is not a TCP port"),
    ({"strom.metrics.port": "x"}, {}, "strom.metrics.port: 'x' is not an integer"),
    ({"strom.metrics.enable": "yes"}, {}, "strom.metrics.enable: 'yes' is not true or false"),
    ({"strom.metrics.sample.interval.ms": "10"}, {}, "below the minimum 100"),
    ({"log.retention.check.interval.ms": "0"}, {}, "log.retention.check.interval.ms: 0 is below the minimum 1"),
    ({"strom.sched.slice.us": "99"}, {}, "strom.sched.slice.us: 99 is outside 100-100000"),
    ({"strom.sched.slice.us": "100001"}, {}, "strom.sched.slice.us: 100001 is outside 100-100000"),
    ({"strom.sched.slice.us": "-1"}, {}, "strom.sched.slice.us: -1 is below the minimum 0"),
    ({"strom.sched.loop.priority": "100"}, {}, "strom.sched.loop.priority: 100 is outside 1-99"),
    ({"strom.sched.loop.priority": "-1"}, {}, "strom.sched.loop.priority: -1 is below the minimum 0"),
])
def test_invalid_configs_are_refused_with_the_key_named(properties, environ, message):
    with pytest.raises(ConfigError, match=message):
        build_config(properties, environ=environ)


def test_properties_file_syntax(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("# comment\n! also a comment\nlisteners=PLAINTEXT://127.0.0.1:9092\n"
                    "log.dirs: /data/a,\\\n    /data/b\nnum.partitions = 3\n")
    assert load_properties(path) == {"listeners": "PLAINTEXT://127.0.0.1:9092", "log.dirs": "/data/a,/data/b",
                                     "num.partitions": "3"}
