"""ClusterMetadataStore against a small fake of the internal API (a stdlib HTTP server in a thread):
registration with the bearer secret, the image translated, the long poll applying a change, re-registration
when fenced with a new session request, control-plane errors surfacing as Kafka error names, and the controlled
shutdown waiting for the controller to move leadership away."""

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

import pytest

from brokerd.metadata.cluster import ClusterMetadataStore, ClusterSettings
from brokerd.metadata.errors import ControlPlaneError

SECRET = "s3cret"


def image(version: int, leader: int = 1, isr=(1, 2, 3), fenced=()) -> dict:
    return {"cluster_id": "c1", "metadata_version": version, "controller_id": None,
            "brokers": [{"broker_id": b, "listeners": f"PLAINTEXT://127.0.0.1:{9000 + b}", "rack": None,
                         "state": "fenced" if b in fenced else "running", "registration_epoch": 1}
                        for b in (1, 2, 3)],
            "topics": [{"name": "t", "topic_id": "4f0e2a6c-7d1b-4c4e-9a51-0d1f6b3e2a10",
                        "configs": {"min.insync.replicas": "2"},
                        "partitions": [{"partition": 0, "replicas": [1, 2, 3], "isr": list(isr), "leader": leader,
                                        "leader_epoch": 4, "partition_epoch": 7}]}]}


class FakePlane:
    def __init__(self) -> None:
        self.version = 1
        self.image = image(1)
        self.changed = threading.Condition()
        self.registrations = 0
        self.heartbeat_state = "running"
        self.requests: list[tuple[str, str, dict | None]] = []
        self.arrivals: list[float] = []
        """time.monotonic() of each request, in the order of `requests`."""
        self.headers: list[dict[str, str]] = []
        """The headers of each request, in the order of `requests`."""
        self._recording = threading.Lock()
        self.snapshot_delay_s = 0.0
        """How long the first image (a snapshot request) takes to answer."""
        self.on_shutting_down = lambda: None
        """Called on each heartbeat that says the broker is shutting down (the controller's reaction)."""
        plane = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _answer(self, status: int, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> dict | None:
                length = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(length)) if length else None

            def do_GET(self) -> None:  # noqa: N802
                if self.headers.get("Authorization") != f"Bearer {SECRET}":
                    return self._answer(401, {"error": "CLUSTER_AUTHORIZATION_FAILED", "message": "no"})
                plane.record("GET", self.path, None, self.headers)
                if "/session" in self.path:
                    return self._answer(200, {"watching": False})  # a server that cannot see hang-ups
                query = dict(p.split("=") for p in self.path.split("?")[1].split("&")) if "?" in self.path else {}
                if "since" not in query:
                    time.sleep(plane.snapshot_delay_s)
                with plane.changed:  # /metadata/changes
                    plane.changed.wait_for(lambda: plane.version > int(query.get("since", -1)),
                                           int(query.get("wait_ms", 0)) / 1000)
                    self._answer(200, plane.answer_for(query))

            def do_POST(self) -> None:  # noqa: N802
                body = self._body()
                plane.record("POST", self.path, body, self.headers)
                if self.path.endswith("/brokers/register"):
                    plane.registrations += 1
                    plane.heartbeat_state = "running"
                    return self._answer(200, {"cluster_id": "c1", "registration_epoch": plane.registrations,
                                              "heartbeat_interval_ms": 50, "session_timeout_ms": 1000,
                                              "metadata_version": plane.version})
                if "/heartbeat" in self.path:
                    if body and body.get("shutting_down"):
                        plane.on_shutting_down()
                    return self._answer(200, {"state": plane.heartbeat_state, "metadata_version": plane.version})
                if self.path.endswith("/topics"):
                    return self._answer(400, {"error": "TOPIC_ALREADY_EXISTS", "message": "Topic 't' exists"})
                if self.path.endswith("/producer-ids"):
                    return self._answer(200, {"first_producer_id": 5000, "count": 2})
                return self._answer(404, {"error": "INVALID_REQUEST", "message": self.path})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def record(self, method: str, path: str, body: dict | None, headers) -> None:
        with self._recording:  # requests and headers stay aligned when handler threads interleave
            self.requests.append((method, path, body))
            self.arrivals.append(time.monotonic())
            self.headers.append(dict(headers))

    def answer_for(self, query: dict) -> dict:
        """The body for a `/metadata/changes` query: always the snapshot (deltas: test_delta.py)."""
        return self.image

    def publish(self, new_image: dict) -> None:
        with self.changed:
            self.version = new_image["metadata_version"]
            self.image = new_image
            self.changed.notify_all()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"


@pytest.fixture
def plane():
    fake = FakePlane()
    fake.thread.start()
    yield fake
    fake.publish(image(10_000))  # release long polls
    fake.server.shutdown()


def settings(url: str, secret: str = SECRET, **kwargs) -> ClusterSettings:
    return ClusterSettings(url=url, secret=secret, broker_id=2, listeners="PLAINTEXT://127.0.0.1:9002",
                           metadata_wait_ms=2000, retry_backoff_ms=10, max_retry_backoff_ms=50, **kwargs)


async def until(condition, timeout_s: float = 5.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.01)


def test_register_load_and_follow_changes(plane):
    async def scenario():
        store = ClusterMetadataStore(settings(plane.url))
        seen = []
        store.add_listener(lambda old, new: seen.append(new.metadata_version))
        await store.start()
        try:
            assert store.registration_epoch == 1
            assert plane.requests[0][2] == {"broker_id": 2, "listeners": "PLAINTEXT://127.0.0.1:9002", "rack": "",
                                            "log_dirs": []}
            current = store.image
            assert current.controller_id == 1  # the control plane names none: lowest live broker
            assert current.partition("t", 0).isr == (1, 2, 3)
            assert current.partition("t", 0).partition_epoch == 7
            assert current.broker(3).port == 9003
            plane.publish(image(2, leader=2, isr=(2, 3), fenced=(1,)))
            await until(lambda: store.image.metadata_version == 2)  # the long poll delivers it
            assert seen == [2]
            assert store.image.partition("t", 0).leader_id == 2
            assert [b.node_id for b in store.image.live_brokers] == [2, 3]
            plane.heartbeat_state = "fenced"
            await until(lambda: plane.registrations == 2)
            assert await store.allocate_producer_id() == 5000
            assert await store.allocate_producer_id() == 5001
        finally:
            await store.stop()

    asyncio.run(scenario())


def test_errors_carry_kafka_names(plane):
    async def scenario():
        from brokerd.metadata.image import NewTopic

        store = ClusterMetadataStore(settings(plane.url))
        await store.start()
        try:
            with pytest.raises(ControlPlaneError) as refused:
                await store.create_topic(NewTopic("t", 1, 1, {}))
            assert refused.value.kafka_error == "TOPIC_ALREADY_EXISTS"
        finally:
            await store.stop()

    asyncio.run(scenario())


def test_admin_calls_name_the_kafka_client_for_the_audit_log(plane):
    async def scenario():
        from brokerd.metadata.image import NewTopic
        from brokerd.metadata.store import AdminOrigin

        def last_create_topics() -> dict[str, str]:
            return [h for (_, path, _), h in zip(plane.requests, plane.headers, strict=True)
                    if path == "/internal/v1/topics"][-1]

        store = ClusterMetadataStore(settings(plane.url))
        await store.start()
        try:
            with pytest.raises(ControlPlaneError):
                await store.create_topic(NewTopic("t", 1, 1, {}), origin=AdminOrigin("10.1.2.3", "billing\r\nadmin é"))
            sent = last_create_topics()
            assert (sent["X-Strom-Broker-Id"], sent["X-Strom-Client-Host"]) == ("2", "10.1.2.3")
            assert unquote(sent["X-Strom-Client-Id"]) == "billing\r\nadmin é"  # percent-encoded on the wire
            with pytest.raises(ControlPlaneError):
                await store.create_topic(NewTopic("t", 1, 1, {}))  # the broker on its own: no client
            sent = last_create_topics()
            assert "X-Strom-Client-Id" not in sent and sent["X-Strom-Broker-Id"] == "2"
        finally:
            await store.stop()

    asyncio.run(scenario())


def test_a_session_is_opened_for_each_registration(plane):
    async def scenario():
        store = ClusterMetadataStore(settings(plane.url))
        await store.start()

        def sessions() -> list[str]:
            return [path for method, path, _ in plane.requests if method == "GET" and "/session" in path]

        try:
            await until(lambda: len(sessions()) == 1)
            assert sessions()[0].startswith("/internal/v1/brokers/2/session?registration_epoch=1&")
            plane.heartbeat_state = "fenced"
            await until(lambda: len(sessions()) == 2)  # re-registered: a session for the new epoch at once
            assert "registration_epoch=2&" in sessions()[1]
        finally:
            await store.stop()

    asyncio.run(scenario())


def test_heartbeats_go_on_while_the_event_loop_is_held_and_stop_ends_their_thread(plane):
    """The heartbeats' own thread (interval 50 ms here) keeps sending while a callback holds the broker's loop
    for 20 intervals; the fenced answer that arrives meanwhile is acted on (a registration) once the loop is
    free, and `stop()` joins the thread."""
    async def scenario():
        store = ClusterMetadataStore(settings(plane.url))
        await store.start()
        try:
            plane.heartbeat_state = "fenced"
            held_from = time.monotonic()
            time.sleep(1.0)  # a callback holding the loop (e.g. applying a large metadata change)
            held_until = time.monotonic()
            during = [(path, body) for (_, path, body), at in zip(plane.requests, plane.arrivals, strict=True)
                      if "/heartbeat" in path and held_from <= at <= held_until]
            assert len(during) >= 2 and all(body["registration_epoch"] == 1 for _, body in during)  # before: none
            assert plane.registrations == 1  # re-registering is the loop's work: not while it is held
            await until(lambda: plane.registrations == 2)
            assert store.registration_epoch == 2
            await until(lambda: any(b["registration_epoch"] == 2 for _, p, b in plane.requests if "/heartbeat" in p))
        finally:
            await store.stop()
        assert not [t for t in threading.enumerate() if t.name == "broker-2-heartbeats"]

    asyncio.run(scenario())


def test_heartbeats_start_with_the_registration_not_after_the_first_image(plane):
    """Loading the first image takes longer than a session at 100,000 partitions: heartbeats go on meanwhile."""
    async def scenario():
        plane.snapshot_delay_s = 1.0
        store = ClusterMetadataStore(settings(plane.url))
        await store.start()
        try:
            [snapshot_at] = [at for (method, path, _), at in zip(plane.requests, plane.arrivals, strict=True)
                             if method == "GET" and "/metadata/changes" in path and "since" not in path]
            heartbeats = [at for (_, path, _), at in zip(plane.requests, plane.arrivals, strict=True)
                          if "/heartbeat" in path and snapshot_at <= at <= snapshot_at + plane.snapshot_delay_s]
            assert heartbeats  # every 50 ms; before, none until the image was loaded
        finally:
            await store.stop()

    asyncio.run(scenario())


def test_controlled_shutdown_waits_until_the_controller_moved_leadership_away(plane):
    async def scenario():
        plane.publish(image(2, leader=2))
        store = ClusterMetadataStore(settings(plane.url))
        await store.start()
        moved = threading.Timer(0.3, lambda: plane.publish(image(3, leader=3, isr=(1, 3))))

        def controller_moves_leadership_soon() -> None:
            if moved.ident is None:  # the first shutting-down heartbeat starts it
                moved.start()

        plane.on_shutting_down = controller_moves_leadership_soon
        try:
            loop = asyncio.get_running_loop()
            started = loop.time()
            await store.request_shutdown()
            assert loop.time() - started >= 0.25
            assert store.image.partition("t", 0).leader_id == 3
            shutdown_heartbeats = [b for _, path, b in plane.requests if "/heartbeat" in path and b["shutting_down"]]
            assert shutdown_heartbeats
        finally:
            moved.cancel()
            await store.stop()

    asyncio.run(scenario())


def test_controlled_shutdown_gives_up_after_its_timeout(plane):
    async def scenario():
        plane.publish(image(2, leader=2))  # and the controller never moves it
        store = ClusterMetadataStore(settings(plane.url, controlled_shutdown_timeout_ms=300))
        await store.start()
        try:
            loop = asyncio.get_running_loop()
            started = loop.time()
            await store.request_shutdown()
            assert 0.3 <= loop.time() - started < 3
            assert store.image.partition("t", 0).leader_id == 2
        finally:
            await store.stop()

    asyncio.run(scenario())
