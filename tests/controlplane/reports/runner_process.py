"""A report runner in a process of its own, as a Celery worker's pool process runs it: `python runner_process.py
RUN_PK REPORTS_DIR PID_FILE` runs the queued run `RUN_PK` with the stand-in job (`fake_job.py --behaviour hang`,
whose child's pid goes to PID_FILE) on the database of DATABASE_URL. Tests kill it to orphan the run."""

import os
import sys
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
os.environ["STROM_REPORTS_DIR"] = sys.argv[2]
django.setup()

from controlplane.reports.models import ReportRun  # noqa: E402 (needs django.setup())
from controlplane.reports.runner import JobCommand, ReportRunner  # noqa: E402

run = ReportRun.objects.get(pk=int(sys.argv[1]))
command = JobCommand([sys.executable, str(Path(__file__).with_name("fake_job.py")), "--behaviour", "hang",
                      "--run-id", run.run_id, "--output", sys.argv[2], "--pid-file", sys.argv[3]], dict(os.environ))
ReportRunner(run, command, 600).execute()
