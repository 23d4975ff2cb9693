"""Reassignment executions: a plan run by the executor (`controller.executor`) in batches, one task per partition,
with its progress kept here so a page reload or another user sees the same (Cruise Control's executor state,
/work/shared/reference/reassignment.md §2.5-§2.7)."""

from collections import Counter

from django.conf import settings
from django.db import models
from django.utils import timezone

from .progress import Progress, progress


class ExecutionState(models.TextChoices):
    RUNNING = "running"
    PAUSED = "paused", "paused (no new moves start)"
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    FAILED = "failed", "finished with failed moves"


ACTIVE_STATES = (ExecutionState.RUNNING, ExecutionState.PAUSED)


class TaskState(models.TextChoices):
    """pending → copying (reassignment started) → in ISR (every new replica caught up; the move completes once
    the rest of the target is in sync too) → done; or cancelled (by the execution's cancel, or outside it), or
    failed (refused, or changed outside the execution)."""

    PENDING = "pending"
    COPYING = "copying"
    IN_ISR = "in_isr", "in ISR"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"


IN_PROGRESS_STATES = (TaskState.COPYING, TaskState.IN_ISR)
FINAL_TASK_STATES = (TaskState.DONE, TaskState.CANCELLED, TaskState.FAILED)


class ReassignmentExecution(models.Model):
    """One plan being executed. Invariants: `finished_at` is set exactly when `state` is final; `copy_started_at`
    is the start of its first move (the rate is averaged from there); limits are ≥ 1."""

    description = models.CharField(max_length=200, help_text="where the plan came from, e.g. 'decommission 2'")
    state = models.CharField(max_length=10, choices=ExecutionState.choices, default=ExecutionState.RUNNING)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    copy_started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    throttle = models.BigIntegerField(default=-1, help_text="replication throttle of the moves, bytes/s; -1: none")
    max_moves_per_broker = models.PositiveIntegerField(
        default=10, help_text="moves in progress involving one broker (Cruise Control's "
                              "num.concurrent.partition.movements.per.broker)")
    max_moves = models.PositiveIntegerField(
        default=1250, help_text="moves in progress in the cluster (max.num.cluster.partition.movements)")
    bytes_to_copy = models.BigIntegerField(default=0, help_text="sum over the tasks, refreshed by the executor")
    bytes_copied = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(default=timezone.now, help_text="the executor's last look")

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"reassignment {self.pk} ({self.description}, {self.state})"

    @property
    def is_active(self) -> bool:
        return self.state in ACTIVE_STATES

    @property
    def throttle_mb_s(self) -> float | None:
        """The throttle in MB/s (10^6 bytes, as the console's form takes it); None: no throttle."""
        return None if self.throttle < 0 else self.throttle / 1_000_000

    def progress(self) -> Progress:
        """As of the executor's last look (when the bytes were measured)."""
        return progress(self.bytes_to_copy, self.bytes_copied, self.copy_started_at,
                        self.finished_at or self.updated_at, finished=self.state == ExecutionState.COMPLETED)

    def tasks_by_state(self) -> dict[str, int]:
        """Every task state with its count (0s included), in the order of `TaskState`."""
        counts = Counter(t.state for t in self.tasks.all())
        return {state.value: counts[state.value] for state in TaskState}


class ReassignmentTask(models.Model):
    """One partition's move: from `source_replicas` (its replicas when the execution was created) to
    `target_replicas`. Invariants: `started_at` is set once it left pending for copying; `finished_at` once final;
    0 ≤ `bytes_copied` ≤ `bytes_to_copy`; a done task has copied everything."""

    execution = models.ForeignKey(ReassignmentExecution, on_delete=models.CASCADE, related_name="tasks")
    topic = models.CharField(max_length=249)
    partition = models.IntegerField()
    source_replicas = models.JSONField()
    target_replicas = models.JSONField()
    state = models.CharField(max_length=10, choices=TaskState.choices, default=TaskState.PENDING)
    size_estimate = models.BigIntegerField(default=0, help_text="one replica's bytes when planned (orders batches)")
    bytes_to_copy = models.BigIntegerField(default=0, help_text="the leader's bytes × new replicas")
    bytes_copied = models.BigIntegerField(default=0, help_text="the new replicas' bytes so far, each capped")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["topic", "partition"]
        constraints = [models.UniqueConstraint(fields=["execution", "topic", "partition"],
                                               name="controller_task_unique_partition")]

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition} {self.source_replicas} → {self.target_replicas} ({self.state})"

    @property
    def adding(self) -> list[int]:
        return [b for b in self.target_replicas if b not in self.source_replicas]

    def progress(self) -> Progress:
        """As of the executor's last look."""
        return progress(self.bytes_to_copy, self.bytes_copied, self.started_at,
                        self.finished_at or self.execution.updated_at, finished=self.state == TaskState.DONE)
