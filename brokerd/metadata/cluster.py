"""Cluster metadata: the control plane's internal HTTP API (ARCHITECTURE.md, "Broker ↔ control plane
internal API (v1)") behind the same `MetadataStore` interface as the standalone file.

Lifecycle: `start()` registers (retrying until the control plane answers), loads the first image, then
runs three tasks:

* heartbeats every `heartbeat_interval_ms`, sent from a thread of their own (`heartbeats.HeartbeatThread`), so
  that a held event loop does not cost the broker its session; the thread reads only `HeartbeatReport`, which
  the loop replaces whole, and hands each answer back to the loop, which registers again (a new registration
  epoch) when told `fenced` or `STALE_BROKER_EPOCH`;
* a metadata long poll, `GET /metadata/changes?since=<ours>&wait_ms=...` (the changes since our version,
  applied as a delta; a snapshot when too far behind: `brokerd.metadata.delta`), so a change reaches the
  broker within milliseconds of its commit;
* the session, `GET /brokers/<id>/session?registration_epoch=...`: one request always held open by the
  control plane (renewed every `SESSION_HOLD_MS`, restarted with each registration). It tells the control
  plane when this process dies: the kernel closes it on exit, which the web process notices at once
  (ARCHITECTURE.md, "Failure detection"). The broker itself only closes it when stopping or when the
  control plane did not answer in time.

If the control plane is unreachable, both loops retry with a short backoff and the broker keeps serving
with the last image it has; only admin calls (which need the control plane) fail, with
REQUEST_TIMED_OUT. Mutations return after the change is committed *and* visible in `image` (the store
re-reads the image once the control plane answered). Event loop only (but for the heartbeat thread's `_beat`);
not thread-safe.
"""

import asyncio
import contextlib
import gc
import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote

from brokerd.metadata.delta import DeltaGapError, apply_delta, is_delta
from brokerd.metadata.errors import ControlPlaneError, ControlPlaneUnavailableError, HttpError, MetadataError
from brokerd.metadata.heartbeats import HeartbeatThread
from brokerd.metadata.http import JsonHttpClient, decode_body, decode_yielding
from brokerd.metadata.image import (
    BrokerEndpoint,
    ClusterImage,
    NewTopic,
    PartitionAssignment,
    TopicMetadata,
)
from brokerd.metadata.store import AdminOrigin, ImageListener, IsrProposal, Reassignment
from brokerd.types import BrokerId
from kafkaspec.listeners import InvalidListenerError, parse_listeners

log = logging.getLogger(__name__)

API_PREFIX = "/internal/v1"
DECODE_OFF_LOOP_MIN_BYTES = 256 * 1024
"""A metadata answer this large or larger is decoded and applied on a worker thread (`image_off_loop`); a smaller one
(~2 ms of decoding) in place."""
_STALE = ("STALE_BROKER_EPOCH", "BROKER_ID_NOT_REGISTERED")
"""Heartbeat refusals that mean this registration is gone: the broker registers again."""
SESSION_HOLD_MS = 30_000
"""How long the control plane holds one session request before the broker opens the next."""
SECRET_ENV = "STROM_CLUSTER_SECRET"
NO_LEADER = -1
BROKER_HEADER = "X-Strom-Broker-Id"
CLIENT_HOST_HEADER = "X-Strom-Client-Host"
CLIENT_ID_HEADER = "X-Strom-Client-Id"
"""Who an admin call is for (the control plane's audit log); the client id percent-encoded (UTF-8)."""


def origin_headers(origin: AdminOrigin | None) -> dict[str, str]:
    if origin is None:
        return {}
    return {CLIENT_HOST_HEADER: quote(origin.client_host, safe=""), CLIENT_ID_HEADER: quote(origin.client_id, safe="")}


@dataclass(frozen=True, slots=True)
class ClusterSettings:
    """What a cluster-mode broker needs to talk to the control plane."""

    url: str
    secret: str
    broker_id: int
    listeners: str
    """Kafka listener string advertised to the cluster, e.g. PLAINTEXT://127.0.0.1:9092."""
    rack: str | None = None
    log_dirs: tuple[str, ...] = ()
    metadata_wait_ms: int = 10_000
    """Long-poll window; the control plane caps it at 30 000."""
    request_timeout_ms: int = 10_000
    controlled_shutdown_timeout_ms: int = 10_000
    """How long `request_shutdown` waits for the controller to move this broker's leaderships away."""
    retry_backoff_ms: int = 100
    max_retry_backoff_ms: int = 1_000


@dataclass(frozen=True, slots=True)
class HeartbeatReport:
    """What the next heartbeat says and how often, as the event loop last set it: replaced whole (never
    mutated), so the heartbeat thread reads one consistent snapshot by reading one attribute."""

    registration_epoch: int
    shutting_down: bool
    interval_ms: int


def _endpoint(entry: Mapping) -> BrokerEndpoint:
    listeners = entry.get("listeners") or ""
    host, port = "", 0
    try:
        if isinstance(listeners, str):
            first = parse_listeners(listeners)[0]
            host, port = first.host, first.port
        elif listeners and isinstance(listeners[0], str):
            first = parse_listeners(listeners[0])[0]
            host, port = first.host, first.port
        elif listeners:
            host, port = listeners[0]["host"], int(listeners[0]["port"])
    except (InvalidListenerError, KeyError, ValueError, TypeError):
        log.warning("broker %s has unusable listeners %r", entry.get("broker_id"), listeners)
    return BrokerEndpoint(node_id=int(entry["broker_id"]), host=host, port=port, rack=entry.get("rack") or None,
                          fenced=entry.get("state") == "fenced")


def parse_partition(entry: Mapping) -> PartitionAssignment:
    leader = entry.get("leader")
    return PartitionAssignment(
        partition=int(entry["partition"]),
        leader_id=NO_LEADER if leader is None else int(leader),
        leader_epoch=int(entry.get("leader_epoch", 0)),
        replicas=tuple(int(r) for r in entry.get("replicas", ())),
        isr=tuple(int(r) for r in entry.get("isr", ())),
        partition_epoch=int(entry.get("partition_epoch", 0)),
    )


def parse_topic(entry: Mapping) -> TopicMetadata:
    partitions = sorted((parse_partition(p) for p in entry.get("partitions", ())), key=lambda p: p.partition)
    return TopicMetadata(name=entry["name"], topic_id=str(entry.get("topic_id", "")), partitions=tuple(partitions),
                         configs={k: str(v) for k, v in (entry.get("configs") or {}).items() if v is not None})


def parse_image(body: Mapping) -> ClusterImage:
    """The control plane's metadata image as a ClusterImage. `controller_id` names a live broker (clients
    send admin requests there, and any broker forwards them); the lowest live id if the control plane's
    choice is not one."""
    brokers = tuple(sorted((_endpoint(b) for b in body.get("brokers", ())), key=lambda b: b.node_id))
    topics = {t.name: t for t in (parse_topic(t) for t in body.get("topics", ()))}
    return ClusterImage(cluster_id=str(body.get("cluster_id", "")),
                        controller_id=_controller(brokers, body.get("controller_id")),
                        brokers=brokers, topics=topics, metadata_version=int(body.get("metadata_version", 0)),
                        broker_configs=parse_broker_configs(body.get("broker_configs")))


def parse_broker_configs(raw: object) -> dict[str, dict[str, str]]:
    """The image's `broker_configs` (or a `broker_configs` record's): overrides by broker id / "default"."""
    return {str(b): {str(k): str(v) for k, v in c.items()} for b, c in (raw or {}).items()} \
        if isinstance(raw, Mapping) else {}


def _controller(brokers: tuple[BrokerEndpoint, ...], proposed: object) -> BrokerId:
    """The control plane's `controller_id` if it names a live broker, else the lowest live id (-1: none)."""
    live = [b.node_id for b in brokers if not b.fenced]
    return BrokerId(int(proposed) if proposed in live else (min(live) if live else -1))


def _answer(raw: bytes, decode: Callable[[bytes], object]) -> object:
    """A metadata answer's JSON; ControlPlaneError if it is not JSON (never an image: an answer that is not one
    must not replace the topics the broker holds)."""
    try:
        return decode(raw)
    except ValueError as exc:
        raise ControlPlaneError(None, f"the control plane's metadata answer is not JSON: {exc}") from exc


def image_after(image: ClusterImage | None, body: object) -> ClusterImage | None:
    """`apply_body`, or None when `body` is a delta bringing nothing newer than `image`."""
    if not isinstance(body, Mapping):
        raise ControlPlaneError(None, "the control plane's metadata answer is not a JSON object")
    if image is not None and is_delta(body) and body["metadata_version"] <= image.metadata_version:
        return None
    return apply_body(image, body)


def image_off_loop(image: ClusterImage | None, raw: bytes) -> ClusterImage | None:
    """`image_after` for a large answer, on a worker thread: decoded an element at a time (`decode_yielding`: the
    event loop gets the GIL between them) and with garbage collection paused meanwhile, then the new image frozen
    out of it (`gc.freeze`): a collection holds the GIL, and the 100,000 partitions of an image made each full
    one walk hundreds of thousands of new objects (40-190 ms each, six of them per failover). The old image's
    objects are still freed when it goes (a cycle among frozen objects is not reclaimed; an image has none)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        body = _answer(raw, decode_yielding)
        new = image_after(image, body)
        del body
        if new is not None:
            gc.freeze()
        return new
    finally:
        if collecting:
            gc.enable()


def apply_body(image: ClusterImage | None, body: Mapping) -> ClusterImage:
    """The image after a `/metadata/changes` answer: a snapshot replaces `image`; a delta is applied to it
    (`DeltaGapError` if it does not apply: the caller loads a snapshot)."""
    if not is_delta(body):
        return parse_image(body)
    if image is None:
        raise DeltaGapError("a delta without an image to apply it to")
    return apply_delta(image, body, parse_broker=_endpoint, parse_partition=parse_partition,
                       choose_controller=_controller)


class ClusterMetadataStore:
    """MetadataStore over the control plane's internal API; see the module docstring."""

    def __init__(self, settings: ClusterSettings, client: JsonHttpClient | None = None) -> None:
        self.settings = settings
        self._client = client or self._new_client()
        self._listeners: list[ImageListener] = []
        self._image: ClusterImage | None = None
        self.registration_epoch = -1
        self.heartbeat_interval_ms = 1_000
        self.session_timeout_ms = 10_000
        self.state = "starting"
        self._shutting_down = False
        self._tasks: list[asyncio.Task] = []
        self._wake_poller = asyncio.Event()
        self._new_image = asyncio.Event()
        self._producer_ids: list[int] = []
        """[next, end) of the current producer-id block."""
        self._reregistering: asyncio.Task | None = None
        self._session: asyncio.Task | None = None
        self._report = HeartbeatReport(self.registration_epoch, False, self.heartbeat_interval_ms)
        self._heartbeats: HeartbeatThread | None = None
        self._heartbeat_failures = 0
        self._loop: asyncio.AbstractEventLoop | None = None

    def _new_client(self) -> JsonHttpClient:
        return JsonHttpClient(self.settings.url, {"Authorization": f"Bearer {self.settings.secret}",
                                                  BROKER_HEADER: str(self.settings.broker_id)})

    def _set_report(self) -> None:
        """Publish what the heartbeat thread reports (after a registration or once shutting down)."""
        self._report = HeartbeatReport(self.registration_epoch, self._shutting_down, self.heartbeat_interval_ms)

    # --- lifecycle -------------------------------------------------------------------------------------

    async def start(self) -> None:
        await self._retry(self._register, "register")
        # Heartbeats from the registration on: loading the first image (and what the broker does next on its
        # loop, recovering its logs) takes longer than a session at 100,000 partitions.
        self._loop = asyncio.get_running_loop()
        self._heartbeats = HeartbeatThread(self._beat, self._new_client, lambda: self._report.interval_ms / 1000,
                                           name=f"broker-{self.settings.broker_id}-heartbeats")
        self._heartbeats.start()
        await self._retry(self._refresh, "load metadata")
        self._tasks = [asyncio.create_task(self._metadata_loop(), name="cp-metadata")]
        self._restart_session()

    async def stop(self) -> None:
        self._shutting_down = True
        self._set_report()
        if self._heartbeats is not None:
            await asyncio.to_thread(self._heartbeats.stop)
        tasks = [*self._tasks, *([self._session] if self._session else []),
                 *([self._reregistering] if self._reregistering else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(HttpError, MetadataError):
            await self._heartbeat()
        self._client.close()

    async def request_shutdown(self) -> None:
        """Kafka's controlled shutdown: tell the controller (a `shutting_down` heartbeat) to move this
        broker's leaderships away, and wait until the image names it leader of nothing, at most
        `controlled_shutdown_timeout_ms` (repeating the heartbeat while the control plane is unreachable).
        Clients then find the new leaders while this broker still answers them NOT_LEADER_OR_FOLLOWER."""
        self._shutting_down = True
        self._set_report()
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + self.settings.controlled_shutdown_timeout_ms / 1000
        while True:
            with contextlib.suppress(HttpError, MetadataError):
                await self._heartbeat()
            self._new_image.clear()
            led = self._led_partitions()
            remaining = deadline - loop.time()
            if not led or remaining <= 0:
                break
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(remaining, max(self.heartbeat_interval_ms, 100) / 1000)):
                    await self._new_image.wait()
            if not self._led_partitions():
                led = []
                break
        waited_ms = (loop.time() - started) * 1000
        if led:
            log.warning("controlled shutdown: still leading %d partition(s) after %.0f ms; stopping anyway",
                        len(led), waited_ms)
        else:
            log.info("controlled shutdown: leads no partition any more (after %.0f ms)", waited_ms)

    def _led_partitions(self) -> list[tuple[str, int]]:
        if self._image is None:
            return []
        broker_id = self.settings.broker_id
        return [(topic.name, p.partition) for topic in self._image.topics.values() for p in topic.partitions
                if p.leader_id == broker_id]

    async def _retry(self, step, what: str) -> None:
        backoff = self.settings.retry_backoff_ms
        failures = 0
        while True:
            try:
                await step()
                return
            except (HttpError, ControlPlaneUnavailableError, ControlPlaneError) as exc:
                failures += 1
                if failures == 1 or failures % 20 == 0:
                    log.warning("control plane: cannot %s yet (%s); retrying", what, exc)
                await asyncio.sleep(backoff / 1000)
                backoff = min(backoff * 2, self.settings.max_retry_backoff_ms)

    # --- HTTP ------------------------------------------------------------------------------------------

    async def _call(self, method: str, path: str, body: object = None, timeout_ms: int | None = None,
                    origin: AdminOrigin | None = None, idempotent: bool = False, raw: bool = False,
                    client: JsonHttpClient | None = None) -> object:
        """One request to the control plane (by `client`, the heartbeat thread's, else the loop's own): the answer's
        JSON (`raw`: its bytes), or the control plane's error raised."""
        timeout_s = (timeout_ms or self.settings.request_timeout_ms) / 1000
        try:
            response = await (client or self._client).request(method, API_PREFIX + path, body, timeout_s,
                                                               origin_headers(origin), idempotent=idempotent, raw=raw)
        except HttpError as exc:
            raise ControlPlaneUnavailableError(f"control plane unreachable: {exc}") from exc
        if response.status >= 400:
            answer = decode_body(response.body) if raw else response.body  # type: ignore[arg-type]
            detail = answer if isinstance(answer, dict) else {}
            if response.status >= 500 and not detail.get("error"):
                raise ControlPlaneUnavailableError(f"control plane answered {response.status}")
            raise ControlPlaneError(detail.get("error") or ("CLUSTER_AUTHORIZATION_FAILED"
                                                            if response.status in (401, 403) else None),
                                    str(detail.get("message") or f"control plane answered {response.status}"))
        return response.body

    async def _register(self) -> None:
        s = self.settings
        body = await self._call("POST", "/brokers/register", {
            "broker_id": s.broker_id, "listeners": s.listeners, "rack": s.rack or "", "log_dirs": list(s.log_dirs)})
        assert isinstance(body, dict)
        self.registration_epoch = int(body["registration_epoch"])
        self.heartbeat_interval_ms = int(body.get("heartbeat_interval_ms", self.heartbeat_interval_ms))
        self.session_timeout_ms = int(body.get("session_timeout_ms", self.session_timeout_ms))
        self.state = "running"
        self._set_report()
        self._producer_ids = []  # a block belongs to a registration epoch
        if self._session is not None:  # the session belongs to a registration epoch too
            self._restart_session()
        log.info("registered broker %d with the control plane (registration epoch %d)", s.broker_id,
                 self.registration_epoch)

    async def _send_heartbeat(self, report: HeartbeatReport, client: JsonHttpClient | None = None) -> dict:
        body = await self._call("POST", f"/brokers/{self.settings.broker_id}/heartbeat", {
            "registration_epoch": report.registration_epoch, "shutting_down": report.shutting_down},
            timeout_ms=max(report.interval_ms * 2, 1000), idempotent=True,  # a repeat changes nothing
            client=client)
        assert isinstance(body, dict)
        return body

    async def _heartbeat(self) -> None:
        """A heartbeat from the event loop (controlled shutdown, stop), registering again if told to."""
        try:
            body = await self._send_heartbeat(self._report)
        except ControlPlaneError as exc:
            if exc.kafka_error in _STALE and not self._shutting_down:
                await self._register()
                return
            raise
        if self._heartbeat_answered(body):
            log.warning("broker %d was fenced by the controller; registering again", self.settings.broker_id)
            await self._register()

    def _heartbeat_answered(self, body: dict) -> bool:
        """Take in a heartbeat's answer; True if the broker was fenced and must register again."""
        self.state = str(body.get("state", self.state))
        version = body.get("metadata_version")
        if version is not None and self._image is not None and int(version) > self._image.metadata_version:
            self._wake_poller.set()
        return self.state == "fenced" and not self._shutting_down

    async def _beat(self, client: JsonHttpClient) -> None:
        """One periodic heartbeat, on the heartbeat thread: it reads only `_report` and hands the outcome to
        the event loop (`_on_heartbeat`)."""
        report = self._report
        try:
            outcome: dict | MetadataError = await self._send_heartbeat(report, client)
        except (ControlPlaneUnavailableError, ControlPlaneError) as exc:
            outcome = exc
        assert self._loop is not None
        with contextlib.suppress(RuntimeError):  # the broker's loop closed: it is stopping
            self._loop.call_soon_threadsafe(self._on_heartbeat, report, outcome)

    def _on_heartbeat(self, report: HeartbeatReport, outcome: dict | MetadataError) -> None:
        """A periodic heartbeat's outcome, on the event loop: register again when fenced or stale (once, in a
        task), log failures. Outcomes of an older registration's heartbeats are ignored."""
        if report.registration_epoch != self.registration_epoch:
            return
        if isinstance(outcome, dict):
            if self._heartbeat_failures:
                log.info("control plane reachable again")
            self._heartbeat_failures = 0
            if self._heartbeat_answered(outcome):
                self._register_again("was fenced by the controller")
            return
        if isinstance(outcome, ControlPlaneError) and outcome.kafka_error in _STALE and not self._shutting_down:
            self._register_again(f"heartbeat refused: {outcome.kafka_error}")
            return
        self._heartbeat_failures += 1
        if self._heartbeat_failures == 1 or self._heartbeat_failures % 50 == 0:
            log.warning("heartbeat failed (%s); serving with metadata version %d", outcome,
                        self._image.metadata_version if self._image is not None else -1)

    def _register_again(self, reason: str) -> None:
        """Start one re-registration (answers queued while the loop was held ask for it many times)."""
        if self._reregistering is None or self._reregistering.done():
            log.warning("broker %d %s; registering again", self.settings.broker_id, reason)
            self._reregistering = asyncio.get_running_loop().create_task(self._retry(self._register, "register again"),
                                                                          name="cp-register")

    def _restart_session(self) -> None:
        if self._session is not None:
            self._session.cancel()  # the control plane sees it close and ignores it: an old registration's
        self._session = asyncio.get_running_loop().create_task(self._session_loop(), name="cp-session")

    async def _session_loop(self) -> None:
        """Keep one session request open for this registration at all times."""
        backoff = self.settings.retry_backoff_ms
        path = (f"/brokers/{self.settings.broker_id}/session?registration_epoch={self.registration_epoch}"
                f"&hold_ms={SESSION_HOLD_MS}")
        while True:
            try:
                body = await self._call("GET", path, timeout_ms=SESSION_HOLD_MS + self.settings.request_timeout_ms)
                backoff = self.settings.retry_backoff_ms
                if isinstance(body, dict) and body.get("watching") is False:
                    await asyncio.sleep(SESSION_HOLD_MS / 1000)  # this control plane cannot see hang-ups
            except (ControlPlaneUnavailableError, ControlPlaneError) as exc:
                log.debug("session request failed: %s", exc)
                await asyncio.sleep(backoff / 1000)
                backoff = min(backoff * 2, self.settings.max_retry_backoff_ms)

    async def _refresh(self, wait_ms: int = 0) -> None:
        """Catch up with the metadata log: the changes since our version (held up to `wait_ms` until there
        is one), or a snapshot when we hold none, are too far behind, or a delta does not apply."""
        since = "" if self._image is None else f"since={self._image.metadata_version}&"
        raw = await self._call("GET", f"/metadata/changes?{since}wait_ms={wait_ms}",
                               timeout_ms=wait_ms + self.settings.request_timeout_ms, raw=True)
        try:
            image = await self._image_after(raw)  # type: ignore[arg-type]
        except DeltaGapError as exc:
            log.warning("metadata delta does not apply (%s); loading a snapshot", exc)
            raw = await self._call("GET", "/metadata/changes", timeout_ms=self.settings.request_timeout_ms, raw=True)
            image = await self._image_after(raw)  # type: ignore[arg-type]
        if image is not None:
            self._apply(image)

    async def _image_after(self, raw: bytes) -> ClusterImage | None:
        """The image after a `/metadata/changes` answer (`apply_body`); None when it brings nothing new (an empty
        delta, or one overtaken by a concurrent answer). An answer of `DECODE_OFF_LOOP_MIN_BYTES` or more (a
        failover's change, a snapshot) is decoded and applied on a worker thread (`image_off_loop`), so the event
        loop keeps serving meanwhile."""
        if len(raw) < DECODE_OFF_LOOP_MIN_BYTES:
            return image_after(self._image, _answer(raw, json.loads))
        return await asyncio.to_thread(image_off_loop, self._image, raw)

    async def _metadata_loop(self) -> None:
        backoff = self.settings.retry_backoff_ms
        while True:
            try:
                self._wake_poller.clear()
                await self._refresh(self.settings.metadata_wait_ms)
                backoff = self.settings.retry_backoff_ms
            except (ControlPlaneUnavailableError, ControlPlaneError) as exc:
                log.debug("metadata poll failed: %s", exc)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(backoff / 1000):
                        await self._wake_poller.wait()
                backoff = min(backoff * 2, self.settings.max_retry_backoff_ms)

    def _apply(self, image: ClusterImage) -> None:
        old = self._image
        if old is not None and image.metadata_version <= old.metadata_version:
            return
        self._image = image
        self._new_image.set()
        if old is None:
            return
        for listener in self._listeners:
            try:
                listener(old, image)
            except Exception:  # noqa: BLE001 - one listener must not starve the others
                log.exception("metadata listener failed")

    # --- MetadataStore ---------------------------------------------------------------------------------

    @property
    def image(self) -> ClusterImage:
        assert self._image is not None, "start() first"
        return self._image

    def add_listener(self, listener: ImageListener) -> None:
        self._listeners.append(listener)

    async def refresh(self) -> None:
        """Re-read the image now (after a refused conditional update)."""
        await self._refresh()

    async def create_topic(self, topic: NewTopic, validate_only: bool = False,
                           origin: AdminOrigin | None = None) -> TopicMetadata:
        body = await self._call("POST", "/topics", origin=origin, body={
            "name": topic.name, "num_partitions": topic.num_partitions,
            "replication_factor": topic.replication_factor,
            "assignments": [{"partition": k, "replicas": list(v)} for k, v in sorted(topic.assignments.items())]
            or None,
            "configs": dict(topic.configs), "validate_only": validate_only})
        if validate_only:
            return parse_topic(body) if isinstance(body, dict) and "name" in body else TopicMetadata(
                topic.name, "", ())
        await self._refresh()
        created = self.image.topics.get(topic.name)
        return created if created is not None else parse_topic(body)  # type: ignore[arg-type]

    async def delete_topic(self, name: str, origin: AdminOrigin | None = None) -> None:
        await self._call("DELETE", f"/topics/{quote(name, safe='')}", origin=origin)
        await self._refresh()

    async def create_partitions(self, name: str, total_count: int, validate_only: bool = False,
                                assignments: list[list[int]] | None = None, origin: AdminOrigin | None = None
                                ) -> None:
        await self._call("POST", f"/topics/{quote(name, safe='')}/partitions",
                         {"count": total_count, "assignments": assignments, "validate_only": validate_only},
                         origin=origin)
        if not validate_only:
            await self._refresh()

    async def set_topic_configs(self, name: str, overrides: Mapping[str, str], validate_only: bool = False,
                                origin: AdminOrigin | None = None) -> None:
        await self._call("POST", f"/topics/{quote(name, safe='')}/configs",
                         {"set": dict(overrides), "delete": [], "replace": True, "validate_only": validate_only},
                         origin=origin)
        if not validate_only:
            await self._refresh()

    async def allocate_producer_id(self) -> int:
        if not self._producer_ids or self._producer_ids[0] >= self._producer_ids[1]:
            body = await self._call("POST", "/producer-ids", {"broker_id": self.settings.broker_id,
                                                              "registration_epoch": self.registration_epoch})
            assert isinstance(body, dict)
            first = int(body["first_producer_id"])
            self._producer_ids = [first, first + int(body["count"])]
        producer_id = self._producer_ids[0]
        self._producer_ids[0] += 1
        return producer_id

    async def alter_partitions(self, proposals: Sequence[IsrProposal]) -> list[PartitionAssignment | MetadataError]:
        """Kafka's AlterPartition, every proposal in one request and one control-plane transaction: per
        partition the committed state or a ControlPlaneError (e.g. INVALID_UPDATE_VERSION,
        FENCED_LEADER_EPOCH); raises when the whole request was refused (a stale registration) or unanswered."""
        body = await self._call("POST", "/partitions/alter", {
            "broker_id": self.settings.broker_id, "registration_epoch": self.registration_epoch,
            "partitions": [{"topic": p.topic, "partition": p.partition, "leader_epoch": p.leader_epoch,
                            "partition_epoch": p.partition_epoch, "isr": list(p.isr)} for p in proposals]})
        assert isinstance(body, dict)
        results = body.get("partitions") or []
        if len(results) != len(proposals):
            raise ControlPlaneError(None, f"AlterPartition answered {len(results)} of {len(proposals)} partitions")
        return [ControlPlaneError(r["error"], str(r.get("message") or r["error"])) if r.get("error")
                else parse_partition(r) for r in results]

    async def elect_leaders(self, election_type: str, partitions: list[tuple[str, int]] | None,
                            origin: AdminOrigin | None = None) -> list[tuple[str, int, str | None]]:
        """(topic, partition, Kafka error name or None) per partition."""
        body = await self._call("POST", "/elect-leaders", {
            "election_type": election_type,
            "partitions": None if partitions is None else [{"topic": t, "partition": p} for t, p in partitions]},
            origin=origin)
        assert isinstance(body, dict)
        return [(r["topic"], int(r["partition"]), r.get("error") or None) for r in body.get("results", ())]

    async def alter_partition_reassignments(self, requests: list[tuple[str, int, list[int] | None]],
                                            origin: AdminOrigin | None = None
                                            ) -> list[tuple[str, int, str | None, str | None]]:
        body = await self._call("POST", "/reassignments", {"partitions": [
            {"topic": t, "partition": p, "replicas": r} for t, p, r in requests]}, origin=origin)
        assert isinstance(body, dict)
        return [(r["topic"], int(r["partition"]), r.get("error") or None, r.get("message"))
                for r in body.get("results", ())]

    async def list_partition_reassignments(self, partitions: list[tuple[str, int]] | None
                                           ) -> list[Reassignment]:
        body = await self._call("POST", "/reassignments/list", {
            "partitions": None if partitions is None else [{"topic": t, "partition": p} for t, p in partitions]})
        assert isinstance(body, dict)
        return [Reassignment(r["topic"], int(r["partition"]), tuple(r["replicas"]), tuple(r["adding_replicas"]),
                             tuple(r["removing_replicas"])) for r in body.get("reassignments", ())]


def secret_from(properties: Mapping[str, str]) -> str | None:
    return properties.get("strom.cluster.secret") or os.environ.get(SECRET_ENV) or None
