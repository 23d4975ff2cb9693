"""A stand-in for a report job (`spark_jobs.<report>`), speaking its protocol: JSON progress lines on stdout, Spark's
log on stderr, a manifest, an exit status. `--behaviour` picks the script:

- `succeed`: started, two progress events, a warning, the manifest, finished; exit 0
- `fail`: started, progress, a failed event; exit 1
- `crash`: a traceback on stderr; exit 1
- `hang`: started, progress, then it starts a child (as pyspark starts its JVM) and both sleep; the child's pid goes
  to `--pid-file`
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def emit(event: str, **fields) -> None:
    print(json.dumps({"event": event, "report": "lag", "run_id": ARGS.run_id, **fields}), flush=True)


parser = argparse.ArgumentParser()
parser.add_argument("--behaviour", required=True)
parser.add_argument("--run-id", required=True)
parser.add_argument("--output", type=Path, required=True)
parser.add_argument("--pid-file", type=Path)
ARGS = parser.parse_args()

emit("started", master="local[2]")
print("INFO SparkContext: Running Spark version 4.3.0", file=sys.stderr, flush=True)
progress = {"step_index": 0, "steps": 2, "stages_done": 1, "stages_total": 2, "tasks_done": 3, "tasks_total": 4}
emit("progress", step="partitions", fraction=0.375, **progress)
if ARGS.behaviour == "succeed":
    emit("progress", step="groups", fraction=0.25, **{**progress, "step_index": 1})  # never goes back
    emit("warning", message="no lag samples in the period")
    manifest = ARGS.output / "lag" / "runs" / f"{ARGS.run_id}.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"run_id": ARGS.run_id, "report_date": "2026-11-23", "finished_at": "x"}))
    emit("finished", rows={"partitions": 7, "groups": 2}, output=str(ARGS.output), seconds=1.0)
elif ARGS.behaviour == "fail":
    emit("failed", error="cannot reach the brokers at 127.0.0.1:1")
    sys.exit(1)
elif ARGS.behaviour == "crash":
    print("Traceback (most recent call last):\nRuntimeError: the JVM died", file=sys.stderr, flush=True)
    sys.exit(1)
elif ARGS.behaviour == "hang":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    ARGS.pid_file.write_text(str(child.pid))
    time.sleep(600)
