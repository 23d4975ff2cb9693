"""The internal API brokers use (ARCHITECTURE.md, "Broker ↔ control plane internal API (v1)").

Thin views: authenticate, read the body, call one service function, answer JSON. `KafkaApiError`s become
`{"error": NAME, "message": …}` with their 4xx status. Not part of the public REST API or its schema.

The admin calls (topics, configs, elections) are Kafka Admin API requests a broker forwards: each change (not
a validate-only request) is recorded in the audit log with the Kafka client as actor — its address and client
id, which the broker sends as headers (brokerd.metadata.cluster), or the broker itself when it acts on its own.
Kafka clients are not authenticated (PLAINTEXT listeners), so there is no permission to check.
"""

import contextlib
import logging
from collections.abc import Callable, Iterator
from urllib.parse import unquote

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_http_methods

from controlplane.access import actions
from controlplane.access.actions import Action
from controlplane.access.checks import Change, recorded
from controlplane.audit.models import Source
from controlplane.audit.services import Actor
from controlplane.cluster import broker_configs, changelog, metadata, services
from controlplane.controller import election, reassignment
from controlplane.core.errors import KafkaApiError
from controlplane.topics import services as topics

from .auth import cluster_secret_required
from .hangup import hangup_waiter
from .requests import Body

log = logging.getLogger(__name__)

SESSION_HOLD_MAX_MS = 60_000

__all__ = ("alter_broker_configs", "alter_partition", "alter_reassignments", "broker_heartbeat", "broker_session",
           "elect_leaders", "list_reassignments", "metadata_changes", "metadata_image", "producer_ids",
           "register_broker", "topic_configs", "topic_detail", "topic_partitions", "topics_create")


def internal_api(*methods: str) -> Callable[[Callable[..., object]], Callable[..., HttpResponse]]:
    """Decorate a view returning a dict (200), a JSON body already encoded (bytes, 200), None (204) or raising
    KafkaApiError."""

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
            if isinstance(result, bytes):
                return HttpResponse(result, content_type="application/json")
            return JsonResponse(result)

        wrapper.__name__ = view.__name__
        wrapper.__doc__ = view.__doc__
        return wrapper

    return decorate


def kafka_actor(request: HttpRequest) -> Actor:
    """The Kafka client behind a forwarded admin call, or the broker itself when it sent no client."""
    host = unquote(request.headers.get("X-Strom-Client-Host", ""))
    client_id = unquote(request.headers.get("X-Strom-Client-Id", ""))
    if not host and not client_id:
        return Actor(client_id=f"broker {request.headers.get('X-Strom-Broker-Id', '?')}")
    return Actor(address=host, client_id=client_id)


@contextlib.contextmanager
def kafka_change(request: HttpRequest, action: Action, target: str) -> Iterator[Change]:
    """Record the change a forwarded Kafka Admin API call makes in the block."""
    with recorded(kafka_actor(request), Source.KAFKA, action, target) as change:
        change.detail = f"Kafka Admin API via broker {request.headers.get('X-Strom-Broker-Id', '?')}"
        yield change


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
def metadata_image(request: HttpRequest) -> bytes:
    try:
        min_version = int(request.GET.get("min_version", 0))
        wait_ms = int(request.GET.get("wait_ms", 0))
    except ValueError:
        raise KafkaApiError("INVALID_REQUEST", "min_version and wait_ms must be integers") from None
    if min_version > 0 and wait_ms > 0:
        metadata.wait_for_version(min_version, wait_ms)
    return metadata.image_json().encode()


@internal_api("GET")
def metadata_changes(request: HttpRequest) -> bytes:
    """The metadata log (`cluster.changelog`): `since=N` → the delta from version N, held up to `wait_ms`
    until there is one; without `since` (or N not served by the retained log) → a snapshot."""
    try:
        since = int(request.GET["since"]) if "since" in request.GET else None
        wait_ms = int(request.GET.get("wait_ms", 0))
    except ValueError:
        raise KafkaApiError("INVALID_REQUEST", "since and wait_ms must be integers") from None
    if since is not None and since >= 0 and wait_ms > 0:
        metadata.wait_for_version(since + 1, wait_ms)
    return changelog.catch_up(since)


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
    wait_for_hangup = hangup_waiter(request)
    if wait_for_hangup is None:
        return {"watching": False}
    if wait_for_hangup(hold_ms / 1000):
        recorded = services.connection_lost(broker_id, registration_epoch)
        log.warning("broker %s (registration epoch %s) hung up its session%s", broker_id, registration_epoch,
                    "" if recorded else "; not a live registration, ignored")
        return None
    return {"watching": True}


@internal_api("POST")
def alter_partition(request: HttpRequest) -> dict:
    """Kafka's AlterPartition. `{"broker_id", "registration_epoch", "partitions": [{"topic", "partition",
    "leader_epoch", "partition_epoch", "isr"}, ...]}` → `{"partitions": [one result per entry]}`, each
    partition refused or accepted on its own (`services.alter_partitions`); the single-partition form (the
    fields at the top level) answers the partition's state or its error."""
    body = Body(request)
    if "partitions" in body.data:
        changes = [services.IsrChange(entry.str("topic"), entry.int("partition"), entry.int("leader_epoch"),
                                      entry.int("partition_epoch"), tuple(entry.list_of("isr", int)))
                   for entry in (Body.of(e, "partitions") for e in body.list_of("partitions", dict))]
        return {"partitions": services.alter_partitions(body.int("broker_id"), body.int("registration_epoch"),
                                                        changes)}
    return services.alter_partition(body.int("broker_id"), body.int("registration_epoch"), body.str("topic"),
                                    body.int("partition"), body.int("leader_epoch"), body.int("partition_epoch"),
                                    body.list_of("isr", int))


@internal_api("POST")
def topics_create(request: HttpRequest) -> dict:
    body = Body(request)
    name, validate_only = body.raw("name"), body.bool("validate_only", False)

    def create() -> dict:
        return topics.create_topic(name, body.int("num_partitions", topics.DEFAULT),
                                   body.int("replication_factor", topics.DEFAULT),
                                   topics.parse_assignments(body.raw("assignments")), body.dict("configs", {}) or {},
                                   validate_only)

    if validate_only:
        return create()
    with kafka_change(request, actions.CREATE_TOPICS, f"topic:{name}") as change:
        created = create()
        change.after = topics.audit_state(name)
    return created


@internal_api("DELETE")
def topic_detail(request: HttpRequest, name: str) -> None:
    with kafka_change(request, actions.DELETE_TOPICS, f"topic:{name}") as change:
        change.before = topics.audit_state(name)
        topics.delete_topic(name)


@internal_api("POST")
def topic_partitions(request: HttpRequest, name: str) -> dict:
    body = Body(request)
    count, assignments = body.int("count"), topics.parse_assignments(body.raw("assignments"))
    if body.bool("validate_only", False):
        return topics.create_partitions(name, count, assignments, True)
    with kafka_change(request, actions.CREATE_PARTITIONS, f"topic:{name}") as change:
        change.before = topics.audit_state(name)
        grown = topics.create_partitions(name, count, assignments, False)
        change.after = topics.audit_state(name)
    return grown


@internal_api("POST")
def topic_configs(request: HttpRequest, name: str) -> dict:
    body = Body(request)
    set_configs, delete = body.dict("set", {}) or {}, body.list_of("delete", str, []) or []
    replace = body.bool("replace", False)
    if body.bool("validate_only", False):
        return topics.alter_configs(name, set_configs, delete, replace, True)
    with kafka_change(request, actions.ALTER_CONFIGS, f"topic:{name}") as change:
        change.before = topics.audit_state(name)
        altered = topics.alter_configs(name, set_configs, delete, replace, False)
        change.after = topics.audit_state(name)
    return altered


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
    election_type, targets = body.str("election_type", election.PREFERRED), parse_election_partitions(
        body.raw("partitions"))
    with kafka_change(request, election.election_action(election_type), election.audit_target(targets)) as change:
        results = election.elect_leaders(election_type, targets)
        change.before, change.after = election.audit_states(results)
    return {"results": [{"topic": r.topic, "partition": r.partition, "error": r.error} for r in results]}


@internal_api("POST")
def producer_ids(request: HttpRequest) -> dict:
    body = Body(request)
    return services.allocate_producer_ids(body.int("broker_id"), body.int("registration_epoch"))


def _partition_list(raw: object, with_replicas: bool) -> list:
    """`[{topic, partition[, replicas]}]` → tuples; INVALID_REQUEST for anything else."""
    def valid(p: object) -> bool:
        return isinstance(p, dict) and isinstance(p.get("topic"), str) and isinstance(p.get("partition"), int) and (
            not with_replicas or p.get("replicas") is None or (
                isinstance(p["replicas"], list) and all(isinstance(b, int) for b in p["replicas"])))
    if not isinstance(raw, list) or not all(valid(p) for p in raw):
        raise KafkaApiError("INVALID_REQUEST", "partitions must be a list of {topic, partition"
                                               + (", replicas (a list of broker ids, or null to cancel)}" if
                                                  with_replicas else "}"))
    return [(p["topic"], p["partition"], p.get("replicas")) if with_replicas else (p["topic"], p["partition"])
            for p in raw]


@internal_api("POST")
def alter_reassignments(request: HttpRequest) -> dict:
    """Kafka's AlterPartitionReassignments: `{partitions: [{topic, partition, replicas | null}]}` →
    `{results: [{topic, partition, error, message}]}`; audited as starting (or, if every entry cancels,
    cancelling) a reassignment."""
    requests = _partition_list(Body(request).raw("partitions"), with_replicas=True)
    action = actions.CANCEL_REASSIGNMENT if all(r is None for _, _, r in requests) else actions.START_REASSIGNMENT
    with kafka_change(request, action, reassignment.audit_target(requests)) as change:
        change.before = {"reassigning": reassignment.list_reassignments([(t, n) for t, n, _ in requests])}
        results = reassignment.alter_reassignments(requests)
        change.after = {"targets": {f"{t}-{n}": r for t, n, r in requests},
                        "errors": {f"{r.topic}-{r.partition}": r.error for r in results if r.error}}
    return {"results": [{"topic": r.topic, "partition": r.partition, "error": r.error, "message": r.message}
                        for r in results]}


@internal_api("POST")
def list_reassignments(request: HttpRequest) -> dict:
    """Kafka's ListPartitionReassignments: `{partitions: [{topic, partition}] | null}` (null: all) →
    `{reassignments: [{topic, partition, replicas, adding_replicas, removing_replicas}]}`."""
    raw = Body(request).raw("partitions")
    return {"reassignments": reassignment.list_reassignments(
        None if raw is None else _partition_list(raw, with_replicas=False))}


@internal_api("POST")
def alter_broker_configs(request: HttpRequest) -> dict:
    """IncrementalAlterConfigs on brokers: `{broker_ids: [id, …] (-1: the cluster default), set: {k: v},
    delete: [k], validate_only}` → `{configs: {"<id>": {k: v}}}`."""
    body = Body(request)
    broker_ids = body.list_of("broker_ids", int)
    set_configs, delete = body.dict("set", {}) or {}, body.list_of("delete", str, []) or []
    if body.bool("validate_only", False):
        answers = broker_configs.alter_broker_configs(broker_ids, set_configs, delete, validate_only=True)
    else:
        target = "brokers:" + ",".join("default" if b == -1 else str(b) for b in broker_ids)
        with kafka_change(request, actions.ALTER_CONFIGS, target) as change:
            change.before = {str(b): broker_configs.broker_configs(b) for b in broker_ids}
            answers = broker_configs.alter_broker_configs(broker_ids, set_configs, delete)
            change.after = {str(b): c for b, c in answers.items()}
    return {"configs": {str(b): c for b, c in answers.items()}}
