"""Replica fetch sessions (KIP-227) between real brokers. Brokers 1 and 3 are advertised behind recording proxies
(`tests.support.wire_proxy`), so the test sees every Fetch the other brokers' fetchers send them:

* idle followers of many partitions send small incremental fetches (no partition named) once their session
  is open, where the full fetch that opened it named every partition;
* broker 3 keeps a single session slot, so its two followers evict each other's session on every round
  (FETCH_SESSION_ID_NOT_FOUND, then a full fetch), and broker 1 is SIGKILLed and restarted (leader change,
  sessions lost): acks=all producers to a partition led by each keep going, and afterwards every acknowledged
  record is there exactly once and the replicas are byte-identical."""

import struct
import time

import pytest

from brokerd.protocol.api_keys import ApiKey
from tests.integration.cluster.test_faults import finish_and_audit, wait_for_progress
from tests.integration.cluster.workload import AckingProducer
from tests.support.cluster import broker_cluster
from tests.support.controlplane import control_plane
from tests.support.polling import wait_until
from tests.support.wire_proxy import RecordingProxy, SeenRequest

IDLE_PARTITIONS = 90
_FETCH_HEAD = struct.Struct(">iiiibii")
"""Fetch v11: replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level, session_id, session_epoch."""


def session_epoch(request: SeenRequest) -> int:
    return _FETCH_HEAD.unpack_from(request.body_head)[6]


@pytest.fixture(scope="module")
def proxied(tmp_path_factory):
    """(cluster, {broker id: its proxy}) with brokers 1 and 3 behind proxies; broker 3 keeps one session."""
    directory = tmp_path_factory.mktemp("sessions")
    with control_plane(directory) as plane, broker_cluster(plane, directory, 3, started=0) as cluster:
        proxies = {1: RecordingProxy(cluster.brokers[1].port), 3: RecordingProxy(cluster.brokers[3].port)}
        with proxies[1], proxies[3]:
            for broker_id, proxy in proxies.items():
                cluster.brokers[broker_id].overrides = {"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}"}
            cluster.brokers[3].overrides |= {"max.incremental.fetch.session.cache.slots": "1"}
            for broker_id in cluster.brokers:
                cluster.start(broker_id)
            wait_until(lambda: sum(b["state"] == "running" for b in plane.metadata()["brokers"]) == 3, 30,
                       message="3 running brokers")
            yield cluster, proxies


def all_in_sync(cluster, topic: str) -> bool:
    entry = next((t for t in cluster.plane.metadata()["topics"] if t["name"] == topic), None)
    return entry is not None and all(len(p["isr"]) == 3 and p["leader"] >= 0 for p in entry["partitions"])


@pytest.mark.slow
def test_idle_followers_send_incremental_fetches_that_name_no_partition(proxied):
    cluster, proxies = proxied
    cluster.create_topic("idle", IDLE_PARTITIONS, 3)
    wait_until(lambda: all_in_sync(cluster, "idle"), 60, message="every idle partition in sync")
    fetchers = [f"strom-replica-fetcher-{follower}" for follower in (2, 3)]
    # The fetchers start with the topic: each opens its session with a full fetch, then goes incremental.
    wait_until(lambda: all(any(session_epoch(r) > 0 for r in proxies[1].requests(ApiKey.FETCH, f)) for f in fetchers),
               30, message="both followers of broker 1 in a session")
    since = time.monotonic()

    def recent() -> dict[str, list[SeenRequest]]:
        return {f: proxies[1].requests(ApiKey.FETCH, f, since) for f in fetchers}

    wait_until(lambda: all(len(seen) >= 4 for seen in recent().values()), 30, message="4 fetches of each follower")

    for fetcher, seen in recent().items():
        full = [r for r in proxies[1].requests(ApiKey.FETCH, fetcher) if session_epoch(r) == 0]
        sizes = [r.size for r in seen]
        print(f"\n{fetcher} -> broker 1: full fetch {max(r.size for r in full)} B, idle fetches {sizes} B")
        assert all(session_epoch(r) > 0 for r in seen), "fetches outside a session"
        # A fetch naming no partition: header, the fixed fields, two empty arrays (~80 B); the full fetch names
        # each of the ~30 partitions each follower follows here, 28 B each.
        assert max(sizes) < 120 < 700 < max(r.size for r in full)


@pytest.mark.slow
def test_replication_stays_exact_across_session_evictions_and_a_leader_restart(proxied):
    cluster, proxies = proxied
    cluster.create_topic("led-by-1", assignments=[[1, 2, 3]], configs={"min.insync.replicas": "2"})
    cluster.create_topic("led-by-3", assignments=[[3, 1, 2]], configs={"min.insync.replicas": "2"})
    for topic in ("led-by-1", "led-by-3"):
        cluster.wait_for_isr(topic, 3)
    producers = [AckingProducer(cluster.bootstrap, topic).start() for topic in ("led-by-1", "led-by-3")]
    for producer in producers:
        wait_for_progress(producer)

    # Broker 3 holds one session for two followers: each keeps losing it and opening a new one.
    since = time.monotonic()
    wait_until(lambda: all(sum(session_epoch(r) == 0 for r in proxies[3].requests(
        ApiKey.FETCH, f"strom-replica-fetcher-{follower}", since)) >= 3 for follower in (1, 2)), 30,
        message="followers of broker 3 re-opening sessions")

    cluster.kill(1)
    wait_until(lambda: cluster.leader("led-by-1") not in (1, -1), 30, message="a new leader for led-by-1")
    for producer in producers:
        wait_for_progress(producer)
    cluster.start(1)
    for producer in producers:
        wait_for_progress(producer)

    for producer in producers:
        finish_and_audit(cluster, producer, producer.topic)
