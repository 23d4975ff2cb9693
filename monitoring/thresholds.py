"""Strom's optional thresholds on top of Burrow's rules (Burrow has none: issue #425, #452): a partition
breaches when its lag exceeds a matching threshold's `max_lag` records or `max_lag_seconds`.

Thresholds match a group and a topic by shell-style globs (`orders-*`; an exact name matches itself);
every matching threshold is checked. A breach does not change Burrow's status; it sets
`threshold_breached` (kept in the lag samples) and makes the group's alert status ERR (`alert_status`).
"""

import dataclasses
import fnmatch
from collections.abc import Sequence

from monitoring.config import Threshold
from monitoring.model import GroupResult, PartitionResult, Status


def matching(thresholds: Sequence[Threshold], group: str, topic: str) -> list[Threshold]:
    return [t for t in thresholds if fnmatch.fnmatchcase(group, t.group) and fnmatch.fnmatchcase(topic, t.topic)]


def exceeds(threshold: Threshold, partition: PartitionResult) -> bool:
    """Lag above `max_lag` or lag seconds above `max_lag_seconds`; a partition without a committed offset
    (or an unknown lag in seconds) exceeds nothing."""
    if threshold.max_lag is not None and partition.lag is not None and partition.lag > threshold.max_lag:
        return True
    return (threshold.max_lag_seconds is not None and partition.lag_seconds is not None
            and partition.lag_seconds > threshold.max_lag_seconds)


def mark_breaches(thresholds: Sequence[Threshold], group: str,
                  partitions: Sequence[PartitionResult]) -> list[PartitionResult]:
    """The partitions with `threshold_breached` set where a matching threshold is exceeded."""
    if not thresholds:
        return list(partitions)
    by_topic: dict[str, list[Threshold]] = {}
    marked = []
    for p in partitions:
        applicable = by_topic.get(p.topic)
        if applicable is None:
            applicable = by_topic[p.topic] = matching(thresholds, group, p.topic)
        if any(exceeds(t, p) for t in applicable):
            p = dataclasses.replace(p, threshold_breached=True)
        marked.append(p)
    return marked


def alert_status(result: GroupResult) -> Status:
    """What alerting acts on: Burrow's group status, raised to ERR while a threshold is breached."""
    if result.threshold_breached and result.status < Status.ERR:
        return Status.ERR
    return result.status
