"""Machine-readable progress of a job: JSON lines on stdout (and optionally appended to a file) that a
runner (the control plane's Celery task) relays to a progress bar.

Events, one JSON object per line, every one with `event`, `report` and `run_id`:
- `started`: `master`, `period_start`/`period_end` (ISO 8601 UTC) where the job has a period;
- `progress`: `step` (name), `step_index` (0-based), `steps`, Spark's `stages_done`/`stages_total` and
  `tasks_done`/`tasks_total` of that step's jobs (status tracker), and `fraction` in [0, 1] over the whole
  run, never decreasing;
- `finished`: `rows` ({table: row count}), `output` (the run's directory), `seconds`;
- `failed`: `error` (one line).
Nothing else is printed on stdout (Spark logs to stderr).
"""

import json
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


class ProgressReporter:
    """Emits the events above; `run_step` runs one Spark action under a job group and reports the tasks
    of its stages every `interval_s` while it runs."""

    def __init__(self, report: str, run_id: str, steps: list[str], progress_file: Path | None = None,
                 interval_s: float = 0.5):
        self.report = report
        self.run_id = run_id
        self.steps = steps
        self.progress_file = progress_file
        self.interval_s = interval_s
        self._fraction = 0.0
        self._lock = threading.Lock()

    def emit(self, event: str, **fields) -> None:
        line = json.dumps({"event": event, "report": self.report, "run_id": self.run_id, **fields})
        with self._lock:
            print(line, file=sys.stdout, flush=True)
            if self.progress_file is not None:
                with self.progress_file.open("a") as handle:
                    handle.write(line + "\n")

    def run_step(self, spark, step: str, action: Callable[[], T]) -> T:
        index = self.steps.index(step)
        context = spark.sparkContext
        group = f"strom-{self.report}-{uuid.uuid4().hex[:12]}"
        context.setJobGroup(group, f"{self.report} {step}", interruptOnCancel=True)
        stop = threading.Event()
        poller = threading.Thread(target=self._poll, args=(context, group, step, index, stop), daemon=True)
        poller.start()
        try:
            result = action()
        except BaseException:
            context.cancelJobGroup(group)
            raise
        finally:
            stop.set()
            poller.join()
        self._report(context, group, step, index, finished=True)
        return result

    def _poll(self, context, group: str, step: str, index: int, stop: threading.Event) -> None:
        while not stop.wait(self.interval_s):
            self._report(context, group, step, index, finished=False)

    def _report(self, context, group: str, step: str, index: int, finished: bool) -> None:
        tracker = context.statusTracker()
        stages_done = stages_total = tasks_done = tasks_total = 0
        for job_id in tracker.getJobIdsForGroup(group):
            job = tracker.getJobInfo(job_id)
            for stage_id in (job.stageIds if job else []):
                stage = tracker.getStageInfo(stage_id)
                if stage is None:
                    continue
                # a stage skipped (its output reused) never completes: count it done with its job
                done = job.status == "SUCCEEDED" or stage.numCompletedTasks >= stage.numTasks
                stages_total += 1
                stages_done += done
                tasks_total += stage.numTasks
                tasks_done += stage.numTasks if done else stage.numCompletedTasks
        within = 1.0 if finished else (tasks_done / tasks_total if tasks_total else 0.0)
        fraction = max(self._fraction, (index + within) / len(self.steps))
        if fraction == self._fraction and not finished:
            return
        self._fraction = fraction
        self.emit("progress", step=step, step_index=index, steps=len(self.steps), stages_done=stages_done,
                  stages_total=stages_total, tasks_done=tasks_done, tasks_total=tasks_total,
                  fraction=round(fraction, 4))
