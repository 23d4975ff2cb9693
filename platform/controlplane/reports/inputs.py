"""What each report job is given: its options (checked here, so a bad one is a 400, not a failed run) and, for
the retention report, the cluster snapshot and size history the control plane writes for it.

Retention inputs come from the metadata store and the metrics rollups (`controlplane.metrics`, fed by the
brokers' `__strom_metrics` records): effective topic configs (`kafkaspec.topic_config`), the latest size of
each replica the metadata store places on a broker (`PartitionReplicaSize`), and the latest reading of each
broker log dir within `LOG_DIR_MAX_AGE` (`LogDirMetricPoint`, finest resolution). Each run keeps its snapshot
(`<reports dir>/inputs/retention/<run id>.json`); the replica rows of the earlier snapshots of the last
`history_days` are the run's size history (growth per day needs at least two snapshots a few hours apart).
"""

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from django.utils import timezone

from controlplane.groups.kafka_client import bootstrap_servers
from controlplane.metrics.models import LogDirMetricPoint, PartitionReplicaSize
from controlplane.metrics.rollup import RESOLUTIONS_S
from controlplane.topics.models import Partition, Topic
from kafkaspec.topic_config import TOPIC_CONFIGS

from .models import Report, ReportRun

SNAPSHOT_CONFIGS = ("cleanup.policy", "retention.ms", "retention.bytes", "segment.ms", "segment.bytes",
                    "min.cleanable.dirty.ratio")
LOG_DIR_MAX_AGE = timedelta(hours=1)


@dataclass(frozen=True)
class Parameter:
    option: str
    """The job's command-line option."""
    default: float
    minimum: float
    help: str


PARAMETERS: dict[str, dict[str, Parameter]] = {
    Report.LAG: {
        "period_hours": Parameter("--period-hours", 1.0, 0.01, "hours before the end the report covers"),
    },
    Report.RETENTION: {
        "horizon_hours": Parameter("--horizon-hours", 24.0, 0.01,
                                   "flag consumers whose lag reaches retention within this many hours"),
        "history_days": Parameter("--history-days", 7.0, 0.01, "growth is measured over this many days"),
        "lag_hours": Parameter("--lag-hours", 6.0, 0.01, "the lag trend's window in hours"),
    },
}


class ParameterError(ValueError):
    """A report parameter that is unknown or out of range (one line)."""


def check_parameters(report: str, given: dict) -> dict[str, float]:
    """`given` completed with the defaults; unknown names and values out of range raise ParameterError."""
    known = PARAMETERS[report]
    if unknown := sorted(set(given) - set(known)):
        raise ParameterError(f"unknown parameter(s) {', '.join(unknown)} for the {report} report; "
                             f"it takes {', '.join(known)}")
    checked = {}
    for name, parameter in known.items():
        value = given.get(name, parameter.default)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < parameter.minimum:
            raise ParameterError(f"{name} must be a number of at least {parameter.minimum:g}, not {value!r}")
        checked[name] = float(value)
    return checked


def inputs_dir(reports_dir: Path, report: str) -> Path:
    return reports_dir / "inputs" / report


def job_arguments(run: ReportRun, reports_dir: Path) -> list[str]:
    """The report's own options for `run` (writing the retention snapshot first). Raises KafkaApiError (503)
    when no broker is known to bootstrap from."""
    arguments = ["--bootstrap-servers", bootstrap_servers()]
    for name, parameter in PARAMETERS[run.report].items():
        arguments += [parameter.option, f"{run.parameters.get(name, parameter.default):g}"]
    if run.report == Report.RETENTION:
        directory = inputs_dir(reports_dir, run.report)
        snapshot = write_snapshot(directory / f"{run.run_id}.json", retention_snapshot())
        arguments += ["--snapshot", str(snapshot)]
        days = run.parameters.get("history_days", PARAMETERS[run.report]["history_days"].default)
        if history := write_size_history(directory, snapshot, timedelta(days=days)):
            arguments += ["--size-history", str(history)]
    return arguments


def retention_snapshot(now: datetime | None = None) -> dict:
    """The retention job's snapshot (format: `spark_jobs.snapshot`) from the metadata store and rollups."""
    now = now or timezone.now()
    topics = list(Topic.objects.order_by("name"))
    placed = {(topic, partition, broker) for topic, partition, replicas in
              Partition.objects.values_list("topic__name", "partition", "replicas") for broker in replicas}
    replicas = [
        {"topic": row.topic, "partition": row.partition, "broker": row.broker_id, "log_dir": row.log_dir,
         "size_bytes": row.size_bytes, "leader": row.leader}
        for row in PartitionReplicaSize.objects.order_by("topic", "partition", "broker_id")
        if (row.topic, row.partition, row.broker_id) in placed]
    latest: dict[tuple[int, str], LogDirMetricPoint] = {}
    for point in LogDirMetricPoint.objects.filter(resolution=RESOLUTIONS_S[0], start__gte=now - LOG_DIR_MAX_AGE
                                                  ).order_by("start"):
        latest[(point.broker_id, point.path)] = point
    return {
        "taken_at_ms": int(now.timestamp() * 1000),
        "topics": [{"topic": topic.name, "configs": _effective_configs(topic)} for topic in topics],
        "replicas": replicas,
        "log_dirs": [{"broker": broker, "log_dir": path, "total_bytes": point.total_bytes,
                      "usable_bytes": point.free_bytes} for (broker, path), point in sorted(latest.items())],
    }


def _effective_configs(topic: Topic) -> dict[str, str]:
    effective = topic.effective_configs()
    return {name: TOPIC_CONFIGS[name].render(effective[name]) for name in SNAPSHOT_CONFIGS}


def write_snapshot(path: Path, snapshot: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(snapshot))
    return path


def write_size_history(directory: Path, current: Path, window: timedelta) -> Path | None:
    """The replica sizes of the snapshots in `directory` taken within `window` before `current`, as JSON Lines
    `{ts, broker, log_dir, topic, partition, size_bytes}` beside it (`<run id>.history.jsonl`); None if none."""
    taken_at_ms = json.loads(current.read_text())["taken_at_ms"]
    oldest_ms = taken_at_ms - window.total_seconds() * 1000
    lines = []
    for path in sorted(directory.glob("*.json")):
        if path == current:
            continue
        try:
            earlier = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        ts = earlier.get("taken_at_ms", 0)
        if oldest_ms <= ts < taken_at_ms:
            lines += [json.dumps({"ts": ts, "broker": r["broker"], "log_dir": r["log_dir"], "topic": r["topic"],
                                  "partition": r["partition"], "size_bytes": r["size_bytes"]})
                      for r in earlier.get("replicas", [])]
    if not lines:
        return None
    history = current.with_suffix(".history.jsonl")
    history.write_text("\n".join(lines) + "\n")
    return history

