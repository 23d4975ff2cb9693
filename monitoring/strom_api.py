"""Strom's own lag API bodies (what the console and `/api/lag/` show), built from the monitor's state: the
latest round's verdict per group with Strom's facts beside Burrow's (lag in seconds, threshold breaches, the
alert status notifications act on, the open incident), a group's partitions with their windows, and the
monitor's own health.

Times are ISO-8601 UTC strings (`…Z`, milliseconds); lags are records (`lag`, `totallag`) or seconds
(`lag_seconds`); a value not known (no committed offset, lag in seconds not read yet) is null.
"""

import datetime
from collections.abc import Iterable, Mapping, Sequence

from monitoring.burrow_api import commit_json
from monitoring.model import GroupResult, PartitionInput, PartitionResult, Status
from monitoring.notifier.incidents import Incident
from monitoring.prometheus import MonitorStats
from monitoring.thresholds import alert_status


def iso_ms(ms: int | float) -> str | None:
    """`ms` since the epoch as ISO-8601 UTC with milliseconds; None for 0 (never)."""
    if not ms:
        return None
    moment = datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def incident_json(incident: Incident | None) -> dict | None:
    if incident is None:
        return None
    return {"id": incident.id, "start": iso_ms(incident.start_ms), "status": incident.status.name,
            "notified_status": incident.notified_status.name if incident.notified_status else None}


def group_summary(result: GroupResult, incident: Incident | None = None) -> dict:
    """One group at a glance: Burrow's status, the alert status (ERR while a threshold is breached), lag
    in records and seconds, partitions per status, and the open incident."""
    counts = dict.fromkeys((s.name for s in (Status.OK, Status.WARN, Status.STOP, Status.STALL, Status.REWIND)), 0)
    for p in result.partitions:
        counts[p.status.name] = counts.get(p.status.name, 0) + 1
    maxlag = result.maxlag
    return {
        "cluster": result.cluster, "group": result.group, "status": result.status.name,
        "alert_status": alert_status(result).name, "complete": result.complete,
        "partition_count": result.partition_count, "partition_statuses": counts, "totallag": result.totallag,
        "lag_seconds": result.lag_seconds, "threshold_breached": result.threshold_breached,
        "maxlag": None if maxlag is None else {"topic": maxlag.topic, "partition": maxlag.partition,
                                               "lag": maxlag.current_lag},
        "evaluated_at": iso_ms(result.evaluated_ms), "incident": incident_json(incident),
    }


def partition_json(p: PartitionResult, window: Sequence | None) -> dict:
    return {"topic": p.topic, "partition": p.partition, "status": p.status.name, "owner": p.owner,
            "client_id": p.client_id, "committed_offset": p.committed_offset, "end_offset": p.end_offset,
            "lag": p.lag, "lag_seconds": p.lag_seconds, "complete": p.complete,
            "threshold_breached": p.threshold_breached, "window": list(window or [])}


def group_detail(result: GroupResult, inputs: Iterable[PartitionInput] | None,
                 incident: Incident | None = None) -> dict:
    """The summary plus every partition (topic, partition order) with its stored window of commits, oldest
    first (Burrow's ConsumerOffset JSON)."""
    windows = {(p.topic, p.partition): [commit_json(c) for c in p.commits] for p in inputs or ()}
    partitions = sorted(result.partitions, key=lambda p: (p.topic, p.partition))
    return {**group_summary(result, incident),
            "partitions": [partition_json(p, windows.get((p.topic, p.partition))) for p in partitions]}


def group_list(cluster: str, results: Iterable[GroupResult], incidents: Mapping[str, Incident],
               stats: MonitorStats) -> dict:
    """Every evaluated group's summary, by name."""
    return {"cluster": cluster, "evaluated_at": iso_ms(stats.evaluated_at_seconds * 1000),
            "groups": [group_summary(r, incidents.get(r.group)) for r in sorted(results, key=lambda r: r.group)]}


def topic_groups(cluster: str, topic: str, results: Iterable[GroupResult], incidents: Mapping[str, Incident],
                 stats: MonitorStats) -> dict:
    """The groups with committed offsets or owners on `topic`, by name, each with its lag on that topic only:
    `lag` (records, summed over the topic's partitions with a commit; null when none has one), `lag_seconds`
    (the largest of the topic's partitions, null if unknown), `topic_status` (the worst partition status on the
    topic), `committed_partitions` (how many of the topic's partitions the group committed to), beside the
    group's own Burrow and alert status."""
    groups = []
    for result in sorted(results, key=lambda r: r.group):
        on_topic = [p for p in result.partitions if p.topic == topic]
        if not on_topic:
            continue
        lags = [p.lag for p in on_topic if p.lag is not None]
        seconds = [p.lag_seconds for p in on_topic if p.lag_seconds is not None]
        groups.append({"group": result.group, "status": result.status.name,
                       "alert_status": alert_status(result).name,
                       "topic_status": max(p.status for p in on_topic).name, "committed_partitions": len(lags),
                       "lag": sum(lags) if lags else None, "lag_seconds": max(seconds) if seconds else None,
                       "threshold_breached": any(p.threshold_breached for p in on_topic),
                       "incident": incident_json(incidents.get(result.group))})
    return {"cluster": cluster, "topic": topic, "evaluated_at": iso_ms(stats.evaluated_at_seconds * 1000),
            "groups": groups}


def monitor_status(cluster: str, ready: bool, stats: MonitorStats, evaluation_interval_ms: int) -> dict:
    """The monitor's health: whether it has evaluated since start, the latest round and the collector's
    backlog on `__consumer_offsets` (records)."""
    return {"cluster": cluster, "ready": ready, "evaluated_at": iso_ms(stats.evaluated_at_seconds * 1000),
            "evaluation_interval_seconds": evaluation_interval_ms / 1000, "groups": stats.groups,
            "partitions": stats.partitions, "evaluation_seconds": stats.evaluation_seconds,
            "record_times_seconds": stats.record_times_seconds, "lag_seconds_unknown": stats.lag_seconds_unknown,
            "offsets_topic_lag": stats.offsets_topic_lag, "commits_stored": stats.commits_stored,
            "records_undecodable": stats.records_undecodable}
