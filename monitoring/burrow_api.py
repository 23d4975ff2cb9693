"""Burrow's HTTP API v3 bodies, built from the monitor's state: the control plane's views only route,
authenticate and serialise what these return (status code, JSON-compatible body).

Every body is Burrow's envelope: `error`, `message`, the payload key, and `request` = {`url`: the request
path, `host`: this server's host name}. Numbers as Go encodes them (a float 1.0 is written `1`). Lists come
sorted (Burrow's are in random map order, which no client can rely on).
"""

from collections.abc import Iterable, Sequence

from monitoring.config import OFFSETS_TOPIC, MonitorConfig
from monitoring.evaluator import current_lag
from monitoring.model import Commit, GroupResult, PartitionInput, PartitionResult, Status

Response = tuple[int, dict]

UNKNOWN_ROUTE_BODY = '{"error":true,"message":"invalid request type","result":{}}\n'  # 404, text/plain


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def _envelope(message: str, url: str, host: str, error: bool = False, **payload) -> dict:
    return {"error": error, "message": message, **payload, "request": {"url": url, "host": host}}


def error(status: int, message: str, url: str, host: str) -> Response:
    return status, _envelope(message, url, host, error=True)


def cluster_list(clusters: Iterable[str], url: str, host: str) -> Response:
    return 200, _envelope("cluster list returned", url, host, clusters=sorted(clusters))


def cluster_detail(config: MonitorConfig | None, url: str, host: str) -> Response:
    """`/v3/kafka/<cluster>` (and `/v3/config/cluster/<cluster>`): the cluster module's configuration."""
    if config is None:
        return error(404, "cluster module not found", url, host)
    module = {
        "class-name": "kafka", "servers": config.bootstrap_servers.split(","), "client-profile": _client_profile(),
        "topic-refresh": _number(config.topic_refresh_s), "offset-refresh": _number(config.offset_refresh_s),
    }
    return 200, _envelope("cluster module detail returned", url, host, module=module)


def _client_profile() -> dict:
    return {"name": "default", "client-id": "strom-lag-monitor", "kafka-version": "3.9.0", "tls": None, "sasl": None}


def _names(names: Iterable[str] | None, key: str, message: str, url: str, host: str,
           missing: str = "cluster not found") -> Response:
    if names is None:
        return error(404, missing, url, host)
    return 200, _envelope(message, url, host, **{key: sorted(names)})


def topic_list(topics: Iterable[str] | None, url: str, host: str) -> Response:
    return _names(topics, "topics", "topic list returned", url, host)


def topic_detail(offsets: Sequence[int] | None, url: str, host: str) -> Response:
    """`offsets`: the latest head of each partition that has one (None: unknown topic)."""
    if offsets is None:
        return error(404, "cluster or topic not found", url, host)
    return 200, _envelope("topic offsets returned", url, host, offsets=list(offsets))


def topic_consumers(consumers: Iterable[str] | None, url: str, host: str) -> Response:
    return _names(consumers, "consumers", "consumers of topic returned", url, host)


def consumer_list(groups: Iterable[str] | None, url: str, host: str) -> Response:
    return _names(groups, "consumers", "consumer list returned", url, host)


def consumer_detail(partitions: Sequence[PartitionInput] | None, url: str, host: str) -> Response:
    """`/v3/kafka/<cluster>/consumer/<group>`: the stored windows (`intervals` slots oldest → newest, null
    for empty ones; `[]` for a partition without commits) and `current-lag` (with a hyphen, as Burrow)."""
    if partitions is None:
        return error(404, "cluster or consumer not found", url, host)
    topics: dict[str, list[dict]] = {}
    for p in partitions:
        slots = [None] * (p.intervals - len(p.commits)) + [commit_json(c) for c in p.commits] if p.commits else []
        topics.setdefault(p.topic, []).append({"offsets": slots, "owner": p.owner, "client_id": p.client_id,
                                               "current-lag": current_lag(p.commits, p.heads)})
    return 200, _envelope("consumer detail returned", url, host, topics=topics)


def commit_json(commit: Commit | None) -> dict | None:
    """Burrow's ConsumerOffset JSON (`observedAt` in camel case, as Burrow)."""
    if commit is None:
        return None
    return {"offset": commit.offset, "timestamp": commit.timestamp_ms, "observedAt": commit.observed_ms,
            "lag": commit.lag}


def partition_status(p: PartitionResult) -> dict:
    """Burrow's PartitionStatus JSON."""
    return {"topic": p.topic, "partition": p.partition, "owner": p.owner, "client_id": p.client_id,
            "status": p.status.name, "start": commit_json(p.start), "end": commit_json(p.end),
            "current_lag": p.current_lag, "complete": _number(p.complete)}


def group_status(result: GroupResult, show_all: bool) -> dict:
    """Burrow's ConsumerGroupStatus JSON: `/status` lists partitions worse than OK, `/lag` all of them."""
    partitions = result.partitions if show_all else result.problem_partitions
    return {"cluster": result.cluster, "group": result.group, "status": result.status.name,
            "complete": _number(result.complete), "partitions": [partition_status(p) for p in partitions],
            "partition_count": result.partition_count,
            "maxlag": partition_status(result.maxlag) if result.maxlag else None, "totallag": result.totallag}


def consumer_status(result: GroupResult, show_all: bool, url: str, host: str) -> Response:
    """`/status` (show_all False) and `/lag` (True); an unknown group is HTTP 404 with `error: false`."""
    code = 404 if result.status is Status.NOTFOUND else 200
    return code, _envelope("consumer status returned", url, host, status=group_status(result, show_all))


def consumer_removed(url: str, host: str) -> Response:
    """DELETE of a group or of one of its topics: always 200, as Burrow."""
    return 200, _envelope("consumer group removed", url, host)


def storage_module(config: MonitorConfig, url: str, host: str) -> Response:
    """`/v3/config/storage/<name>`."""
    module = {"class-name": "inmemory", "intervals": config.intervals, "min-distance": _number(config.min_distance_s),
              "group-allowlist": config.group_allowlist or "", "expire-group": _number(config.expire_group_s)}
    return 200, _envelope("storage module detail returned", url, host, module=module)


def evaluator_module(config: MonitorConfig, url: str, host: str) -> Response:
    """`/v3/config/evaluator/<name>`; Strom evaluates every group each round, so results are at most one
    evaluation interval old (Burrow's expire-cache)."""
    module = {"class-name": "caching", "expire-cache": _number(config.evaluation_interval_ms / 1000)}
    return 200, _envelope("evaluator module detail returned", url, host, module=module)


def module_list(coordinator: str, modules: Iterable[str], url: str, host: str) -> Response:
    """`/v3/config/<coordinator>`: the module names of one kind."""
    return 200, _envelope("module list returned", url, host, coordinator=coordinator, modules=sorted(modules))


def consumer_module(config: MonitorConfig, url: str, host: str) -> Response:
    """`/v3/config/consumer/<name>`: the `__consumer_offsets` reader."""
    module = {"class-name": "kafka", "cluster": config.cluster, "servers": config.bootstrap_servers.split(","),
              "group-allowlist": config.group_allowlist or "", "zookeeper-path": "", "zookeeper-timeout": 0,
              "client-profile": _client_profile(), "offsets-topic": OFFSETS_TOPIC, "start-latest": False}
    return 200, _envelope("consumer module detail returned", url, host, module=module)


def main_config(url: str, host: str) -> Response:
    """`/v3/config`: Burrow's general sections; Strom has no ZooKeeper, pid file or log file of its own here."""
    return 200, _envelope(
        "main config returned", url, host,
        general={"pidfile": "", "stdout-logfile": "", "access-control-allow-origin": ""},
        logging={"filename": "", "max-size": 0, "max-backups": 0, "max-age": 0, "use-local-time": False,
                 "use-compression": False, "level": "info"},
        zookeeper={"servers": [], "timeout": 0, "root-path": ""}, httpserver={})


def log_level(level: str, url: str, host: str) -> Response:
    """GET `/v3/admin/loglevel`."""
    return 200, _envelope("log level returned", url, host, level=level)
