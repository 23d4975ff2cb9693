"""Small builders of evaluation results for the monitoring unit tests."""

from monitoring.evaluator import group_result
from monitoring.model import Commit, GroupResult, PartitionResult, Status


def partition(status: Status = Status.OK, topic: str = "orders", number: int = 0, lag: int = 0,
              complete: float = 1.0, committed: int | None = 100, seconds: float | None = None,
              breached: bool = False, owner: str = "/10.0.0.1", client_id: str = "app-1") -> PartitionResult:
    start = end = None
    if committed is not None:
        start = Commit(committed - 10, 1, 1_700_000_000_000, 1_700_000_000_500, lag + 10)
        end = Commit(committed, 2, 1_700_000_060_000, 1_700_000_060_500, lag)
    return PartitionResult(topic, number, owner, client_id, status, start, end, lag, complete,
                           None if committed is None else committed + lag, seconds, breached)


def group(*partitions: PartitionResult, name: str = "billing", cluster: str = "prod",
          now_ms: int = 1_700_000_100_000) -> GroupResult:
    return group_result(cluster, name, partitions, now_ms)
