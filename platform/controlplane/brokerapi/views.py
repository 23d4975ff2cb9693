"""The internal API brokers use (ARCHITECTURE.md, "Broker ↔ control plane internal API (v1)").

Thin views: authenticate, read the body, call one service function, answer JSON. `KafkaApiError`s become
`{"error": NAME, "message": …}` with their 4xx status. Not part of the public REST API or its schema.
"""

import logging
import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_http_methods

from controlplane.cluster import metadata, services
from controlplane.controller import election
from controlplane.core.errors import KafkaApiError
from controlplane.topics import services as topics

from .auth import cluster_secret_required
from .hangup import hangup_probe
from .requests import Body

log = logging.getLogger(__name__)

SESSION_HOLD_MAX_MS = 60_000
SESSION_PROBE_S = 0.02
"""How often a held session checks whether the broker hung up."""

__all__ = ("alter_partition", "broker_heartbeat", "broker_session", "elect_leaders", "metadata_image", "producer_ids",
           "register_broker", "topic_configs", "topic_detail", "topic_partitions", "topics_create")


def internal_api(*methods: str) -> Callable[[Callable[..., object]], Callable[..., HttpResponse]]:
    """Decorate a view returning a dict (200), None (204) or raising KafkaApiError."""

    def decorate(view: Callable[..., object]) -> Callable[..., HttpResponse]:
        @cluster_secret_required
        @require_http_methods(list(methods))
        def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            try:
                result = view(request, *args, **kwargs)
            except KafkaApiError as e:
                return JsonResponse(e.as_json(), status=e.status)
            if result is None:
                return HttpResponse(status=204)
            return JsonResponse(result)

        wrapper.__name__ = view.__name__
        wrapper.__doc__ = view.__doc__
        return wrapper

    return decorate


@internal_api("POST")
def register_broker(request: HttpRequest) -> dict:
    body = Body(request)
    return services.register_broker(body.int("broker_id"), body.str("listeners"), body.raw("rack"),
                                    body.list_of("log_dirs", str, []))


@internal_api("POST")
def broker_heartbeat(request: HttpRequest, broker_id: int) -> dict:
    body = Body(request)
    return services.heartbeat(broker_id, body.int("registration_epoch"), body.bool("shutting_down", False))


@internal_api("GET")
def metadata_image(request: HttpRequest) -> dict:
    try:
        min_version = int(request.GET.get("min_version", 0))
        wait_ms = int(request.GET.get("wait_ms", 0))
    except ValueError:
        raise KafkaApiError("INVALID_REQUEST", "min_version and wait_ms must be integers") from None
    if min_version > 0 and wait_ms > 0:
        metadata.wait_for_version(min_version, wait_ms)
    return metadata.image()


@internal_api("GET")
def broker_session(request: HttpRequest, broker_id: int) -> dict | None:
    """The broker's liveness connection, held open for `hold_ms` (at most 60 000) while the broker keeps it.
    If the broker hangs up first, its process died (or it is stopping): the connection loss is recorded
    for the controller and nothing is answered. `{"watching": false}` at once where hang-ups cannot be seen
    (not under gunicorn)."""
    try:
        registration_epoch = int(request.GET["registration_epoch"])
        hold_ms = min(max(int(request.GET.get("hold_ms", SESSION_HOLD_MAX_MS)), 0), SESSION_HOLD_MAX_MS)
    except (KeyError, ValueError):
        raise KafkaApiError("INVALID_REQUEST", "registration_epoch (and hold_ms) must be integers") from None
    services.check_registration(broker_id, registration_epoch)
    hung_up = hangup_probe(request)
    if hung_up is None:
        return {"watching": False}
    deadline = time.monotonic() + hold_ms / 1000
    while time.monotonic() < deadline:
        if hung_up():
            recorded = services.connection_lost(broker_id, registration_epoch)
            log.warning("broker %s (registration epoch %s) hung up its session%s", broker_id, registration_epoch,
                        "" if recorded else "; not a live registration, ignored")
            return None
        time.sleep(SESSION_PROBE_S)
    return {"watching": True}


@internal_api("POST")
def alter_partition(request: HttpRequest) -> dict:
    body = Body(request)
    return services.alter_partition(body.int("broker_id"), body.int("registration_epoch"), body.str("topic"),
                                    body.int("partition"), body.int("leader_epoch"), body.int("partition_epoch"),
                                    body.list_of("isr", int))


@internal_api("POST")
def topics_create(request: HttpRequest) -> dict:
    body = Body(request)
    return topics.create_topic(body.raw("name"), body.int("num_partitions", topics.DEFAULT),
                               body.int("replication_factor", topics.DEFAULT),
                               topics.parse_assignments(body.raw("assignments")), body.dict("configs", {}) or {},
                               body.bool("validate_only", False))


@internal_api("DELETE")
def topic_detail(request: HttpRequest, name: str) -> None:
    topics.delete_topic(name)


@internal_api("POST")
def topic_partitions(request: HttpRequest, name: str) -> dict:
    body = Body(request)
    return topics.create_partitions(name, body.int("count"), topics.parse_assignments(body.raw("assignments")),
                                    body.bool("validate_only", False))


@internal_api("POST")
def topic_configs(request: HttpRequest, name: str) -> dict:
    body = Body(request)
    return topics.alter_configs(name, body.dict("set", {}) or {}, body.list_of("delete", str, []) or [],
                                body.bool("replace", False), body.bool("validate_only", False))


def parse_election_partitions(raw: object) -> list[tuple[str, int]] | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(
            isinstance(p, dict) and isinstance(p.get("topic"), str) and isinstance(p.get("partition"), int)
            for p in raw):
        raise KafkaApiError("INVALID_REQUEST", "partitions must be null or a list of {topic, partition}")
    return [(p["topic"], p["partition"]) for p in raw]


@internal_api("POST")
def elect_leaders(request: HttpRequest) -> dict:
    body = Body(request)
    results = election.elect_leaders(body.str("election_type", election.PREFERRED),
                                     parse_election_partitions(body.raw("partitions")))
    return {"results": [{"topic": r.topic, "partition": r.partition, "error": r.error} for r in results]}


@internal_api("POST")
def producer_ids(request: HttpRequest) -> dict:
    body = Body(request)
    return services.allocate_producer_ids(body.int("broker_id"), body.int("registration_epoch"))
