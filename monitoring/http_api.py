"""The monitor's HTTP API, served from its own process (the evaluation results live there): Burrow's
HTTP API v3 at Burrow's paths and shapes, Prometheus `/metrics` with the lag metric families, and Strom's
own JSON under `/strom/v1/`. `python -m monitoring --http-port` serves it to the world as Burrow does; the
control plane's `run_lag_monitor` serves it on 127.0.0.1 behind a bearer secret, and its web views proxy to
it (adding API-token authentication, the role check and auditing).

    GET    /burrow/admin, /burrow/admin/ready            text GOOD; READY once a round is published, else 503 STARTING
    GET    /metrics[?family=burrow&family=…]             Prometheus text 0.0.4 (gzip when accepted)
    GET    /v3/kafka[/<cluster>[/topic[/<t>[/consumers]]]]
    GET    /v3/kafka/<cluster>/consumer[/<group>[/status|/lag]]
    DELETE /v3/kafka/<cluster>/consumer/<group>[/topic/<t>]
    GET    /v3/config[/<kind>[/<name>]], /v3/admin/loglevel
    GET    /strom/v1/status, /strom/v1/groups, /strom/v1/groups/<group>, /strom/v1/topics/<topic>/groups

Metrics are rendered once per evaluation round and family selection (the series only change per round),
so a scrape of 20,000 partitions costs a copy, not a render; the monitor's `process_*` metrics are
rendered per scrape. An unknown route is Burrow's text/plain 404; a known path with another method is 405.
"""

import gzip
import hmac
import http.server
import json
import logging
import socket
import threading
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from monitoring import burrow_api, prometheus, strom_api
from monitoring.evaluator import not_found
from monitoring.service import LagMonitor

logger = logging.getLogger(__name__)

JSON = "application/json"
TEXT = "text/plain; charset=utf-8"
STORAGE_MODULE = EVALUATOR_MODULE = "default"


@dataclass(frozen=True)
class Answer:
    status: int
    content_type: str
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)


def _json(status: int, body: dict) -> Answer:
    return Answer(status, JSON, json.dumps(body, separators=(",", ":")).encode())


def _text(status: int, body: str) -> Answer:
    return Answer(status, TEXT, body.encode())


UNKNOWN_ROUTE = Answer(404, TEXT, burrow_api.UNKNOWN_ROUTE_BODY.encode())
METHOD_NOT_ALLOWED = Answer(405, TEXT, b"Method Not Allowed\n")


class MonitorApi:
    """Answers one request from the monitor's state (no I/O but reading it)."""

    def __init__(self, monitor: LagMonitor, host: str | None = None) -> None:
        self.monitor = monitor
        self.host = host or socket.gethostname()
        self._metrics_lock = threading.Lock()
        self._metrics: dict[tuple[str, ...], tuple[float, bytes, bytes]] = {}
        self._process = CollectorRegistry(auto_describe=True)
        ProcessCollector(registry=self._process)

    def handle(self, method: str, path: str, query: Mapping[str, Sequence[str]] | None = None,
               accept_gzip: bool = False) -> Answer:
        segments = [urllib.parse.unquote(s) for s in path.strip("/").split("/")] if path.strip("/") else []
        query = query or {}
        try:
            if segments[:1] == ["v3"]:
                return self._burrow(method, segments[1:], path)
            if segments[:2] == ["strom", "v1"]:
                return self._strom(method, segments[2:])
            if segments == ["metrics"]:
                return self._get_only(method) or self._scrape(query.get("family", []), accept_gzip)
            if segments[:2] == ["burrow", "admin"] and len(segments) <= 3:
                if refused := self._get_only(method):
                    return refused
                if segments[2:] == []:
                    return _text(200, "GOOD")
                if segments[2:] == ["ready"]:
                    return _text(200, "READY") if self.monitor.ready else _text(503, "STARTING")
        except _BadRequest as bad:
            return _json(400, {"error": True, "message": str(bad)})
        return UNKNOWN_ROUTE

    @staticmethod
    def _get_only(method: str) -> Answer | None:
        return None if method in ("GET", "HEAD") else METHOD_NOT_ALLOWED

    #
    # Burrow's /v3
    #

    def _burrow(self, method: str, s: list[str], path: str) -> Answer:
        url, host, monitor = path, self.host, self.monitor
        cluster = monitor.config.cluster
        if s[:1] == ["kafka"] and len(s) >= 2 and method == "DELETE":
            if len(s) == 4 and s[2] == "consumer" or len(s) == 6 and s[2] == "consumer" and s[4] == "topic":
                if s[1] == cluster:
                    monitor.delete_group(s[3], s[5] if len(s) == 6 else None)
                return _json(*burrow_api.consumer_removed(url, host))
            return UNKNOWN_ROUTE
        if method not in ("GET", "HEAD"):
            return METHOD_NOT_ALLOWED if self._is_route(s) else UNKNOWN_ROUTE
        known = s[1:2] == [cluster]
        match s:
            case ["kafka"]:
                return _json(*burrow_api.cluster_list([cluster], url, host))
            case ["kafka", _]:
                return _json(*burrow_api.cluster_detail(monitor.config if known else None, url, host))
            case ["kafka", _, "topic"]:
                return _json(*burrow_api.topic_list(monitor.topics() if known else None, url, host))
            case ["kafka", _, "topic", topic]:
                return _json(*burrow_api.topic_detail(monitor.topic_heads(topic) if known else None, url, host))
            case ["kafka", _, "topic", topic, "consumers"]:
                return _json(*burrow_api.topic_consumers(monitor.consumers_of(topic) if known else None, url, host))
            case ["kafka", _, "consumer"]:
                return _json(*burrow_api.consumer_list(monitor.groups() if known else None, url, host))
            case ["kafka", _, "consumer", group]:
                return _json(*burrow_api.consumer_detail(monitor.partition_inputs(group) if known else None,
                                                         url, host))
            case ["kafka", name, "consumer", group, ("status" | "lag") as view]:
                result = monitor.group_result(group) if known else not_found(name, group, monitor.clock_ms())
                return _json(*burrow_api.consumer_status(result, view == "lag", url, host))
            case ["config"]:
                return _json(*burrow_api.main_config(url, host))
            case ["config", kind]:
                names = self._modules().get(kind)
                return UNKNOWN_ROUTE if names is None else _json(*burrow_api.module_list(kind, names, url, host))
            case ["config", kind, name]:
                return self._module(kind, name, url)
            case ["admin", "loglevel"]:
                level = logging.getLevelName(logging.getLogger("monitoring").getEffectiveLevel()).lower()
                return _json(*burrow_api.log_level(level, url, host))
        return UNKNOWN_ROUTE

    @staticmethod
    def _is_route(s: list[str]) -> bool:
        """Whether a GET route has this path (for 405 rather than 404)."""
        return (s[:1] == ["kafka"] and len(s) <= 5) or s[:1] == ["config"] or s == ["admin", "loglevel"]

    def _modules(self) -> dict[str, list[str]]:
        cluster = self.monitor.config.cluster
        return {"storage": [STORAGE_MODULE], "evaluator": [EVALUATOR_MODULE], "cluster": [cluster],
                "consumer": [cluster], "notifier": []}

    def _module(self, kind: str, name: str, url: str) -> Answer:
        config, host = self.monitor.config, self.host
        if name not in self._modules().get(kind, ()):
            if kind not in self._modules():
                return UNKNOWN_ROUTE
            return _json(*burrow_api.error(404, f"{kind} module not found", url, host))
        if kind == "storage":
            return _json(*burrow_api.storage_module(config, url, host))
        if kind == "evaluator":
            return _json(*burrow_api.evaluator_module(config, url, host))
        if kind == "cluster":
            return _json(*burrow_api.cluster_detail(config, url, host))
        return _json(*burrow_api.consumer_module(config, url, host))

    #
    # Strom's /strom/v1
    #

    def _strom(self, method: str, s: list[str]) -> Answer:
        if refused := self._get_only(method):
            return refused
        monitor = self.monitor
        config = monitor.config
        incidents = {i.group: i for i in monitor.open_incidents()}
        match s:
            case ["status"]:
                return _json(200, strom_api.monitor_status(config.cluster, monitor.ready, monitor.stats(),
                                                           config.evaluation_interval_ms))
            case ["groups"]:
                return _json(200, strom_api.group_list(config.cluster, monitor.results().values(), incidents,
                                                       monitor.stats()))
            case ["groups", group]:
                result = monitor.results().get(group)
                if result is None:
                    return _json(404, {"error": True, "message": f"consumer group '{group}' is not evaluated by "
                                                                  f"the lag monitor (no committed offsets seen)"})
                return _json(200, strom_api.group_detail(result, monitor.partition_inputs(group),
                                                         incidents.get(group)))
            case ["topics", topic, "groups"]:
                return _json(200, strom_api.topic_groups(config.cluster, topic, monitor.results().values(),
                                                         incidents, monitor.stats()))
        return UNKNOWN_ROUTE

    #
    # /metrics
    #

    def _scrape(self, families: Sequence[str], accept_gzip: bool) -> Answer:
        """The lag families (rendered once per evaluation round, whatever the number of scrapes), then the
        monitor's health and process metrics as of now."""
        try:
            chosen = prometheus.check_families(f for value in families for f in value.split(",") if f)
        except ValueError as exc:
            raise _BadRequest(str(exc)) from None
        chosen = chosen or prometheus.FAMILIES
        round_at = self.monitor.stats().evaluated_at_seconds
        with self._metrics_lock:
            cached = self._metrics.get(chosen)
            if cached is None or cached[0] != round_at:
                text = prometheus.render(self.monitor.metrics_snapshot(), chosen)
                cached = self._metrics[chosen] = (round_at, text, gzip.compress(text, 1))
        _, text, compressed = cached
        live = prometheus.render_health(self.monitor.stats()) + generate_latest(self._process)
        if accept_gzip:
            return Answer(200, CONTENT_TYPE_PLAIN_0_0_4, compressed + gzip.compress(live, 1),
                          {"Content-Encoding": "gzip"})
        return Answer(200, CONTENT_TYPE_PLAIN_0_0_4, text + live)


class _BadRequest(ValueError):
    pass


class _Handler(http.server.BaseHTTPRequestHandler):
    api: MonitorApi
    secret: str | None
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self._answer("GET")

    def do_HEAD(self) -> None:  # noqa: N802
        self._answer("HEAD")

    def do_DELETE(self) -> None:  # noqa: N802
        self._answer("DELETE")

    def do_POST(self) -> None:  # noqa: N802
        self._answer("POST")

    def _answer(self, method: str) -> None:
        parts = urllib.parse.urlsplit(self.path)
        if self.secret is not None and not hmac.compare_digest(
                self.headers.get("Authorization", "").encode(), f"Bearer {self.secret}".encode()):
            answer = _json(401, {"error": True, "message": "missing or wrong bearer secret"})
        else:
            accept_gzip = "gzip" in self.headers.get("Accept-Encoding", "")
            answer = self.api.handle(method, parts.path, urllib.parse.parse_qs(parts.query), accept_gzip)
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        self.send_header("Content-Length", str(len(answer.body)))
        for name, value in answer.headers.items():
            self.send_header(name, value)
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(answer.body)

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (http.server's signature)
        logger.debug("%s " + format, self.address_string(), *args)


class MonitorHttpServer:
    """`MonitorApi` on `address:port` (port 0: a free one) from a background thread; requests are served
    by their own threads. `secret`: answer only requests carrying `Authorization: Bearer <secret>`."""

    def __init__(self, monitor: LagMonitor, address: str = "127.0.0.1", port: int = 0,
                 secret: str | None = None) -> None:
        handler = type("Handler", (_Handler,), {"api": MonitorApi(monitor), "secret": secret})
        self._server = http.server.ThreadingHTTPServer((address, port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="lag-http", daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
