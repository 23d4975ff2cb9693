"""What every report job shares: its common arguments and its run — session, the report's steps, Parquet
tables, CSV files, the manifest — with progress events (`spark_jobs.progress`) and one exit status.

Exit status: 0 done; 1 the run failed (one `error: …` line on stderr and a `failed` event); 2 bad
arguments (argparse).
"""

import argparse
import re
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

from spark_jobs.progress import ProgressReporter
from spark_jobs.results import ReportLayout, check_run_id, default_location, read_run, write_csv, write_manifest
from spark_jobs.session import spark_master

CSV_STEP = "csv"


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", type=Path, default=default_location(),
                        help="report location (default: $STROM_VAR_DIR/reports, i.e. var/reports)")
    parser.add_argument("--run-id", type=_run_id,
                        help="names this run's partitions and manifest (default: the period end, UTC)")
    parser.add_argument("--progress-file", type=Path, help="also append the progress events (JSON lines) here")
    parser.add_argument("--master", help="Spark master (default: $STROM_SPARK_MASTER, else local[*])")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", type=_conf_pair,
                        help="Spark setting, repeatable (e.g. spark.executor.memory=1g)")


def parse_time(text: str) -> datetime:
    """An ISO 8601 time for the command line; UTC unless it names a zone."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@dataclass
class ReportRun:
    """One run of a report: the steps a job body calls, in order, and what they wrote."""

    report: str
    run_id: str
    report_date: date
    layout: ReportLayout
    reporter: ProgressReporter
    spark: object
    tables: dict[str, object] = field(default_factory=dict)  # table -> its Spark schema (StructType), in order

    def step(self, name: str, action: Callable[[], object]) -> object:
        """Run one Spark action as the progress step `name`."""
        return self.reporter.run_step(self.spark, name, action)

    def write(self, table: str, frame) -> None:
        """Write `frame` as this run's partition of `table` (replacing an earlier run with the same id)."""
        from pyspark.sql import functions as F

        shutil.rmtree(self.layout.run_partition(table, self.report_date, self.run_id), ignore_errors=True)
        partitioned = (frame.withColumn("report_date", F.lit(self.report_date))
                       .withColumn("run_id", F.lit(self.run_id)))
        self.tables[table] = frame.schema
        self.step(table, lambda: partitioned.write.mode("append").partitionBy("report_date", "run_id")
                  .parquet(str(self.layout.table_dir(table))))


def run_report(report: str, args: argparse.Namespace, steps: list[str], as_of: datetime,
               period: tuple[datetime, datetime] | None, body: Callable[[ReportRun], None]) -> int:
    """Create the session, run `body` (whose steps are `steps`, each table it writes one of them), then write
    the CSV files and the manifest. `as_of` (UTC) dates the run and names it unless `--run-id` does.
    Returns the exit status."""
    started = time.time()
    run_id = args.run_id or as_of.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    report_date = as_of.astimezone(UTC).date()
    reporter = ProgressReporter(report, run_id, [*steps, CSV_STEP], args.progress_file)
    master = args.master or spark_master()
    period_fields = {"period_start": period[0].isoformat(), "period_end": period[1].isoformat()} if period else {}
    reporter.emit("started", master=master, **period_fields)
    spark = owned = None
    try:
        from pyspark.sql import SparkSession

        from spark_jobs.session import create_session
        from spark_jobs.source import register

        # a process that already has a session (a test, a notebook) keeps it: the job neither configures
        # nor stops it
        spark = SparkSession.getActiveSession()
        if spark is None:
            spark = owned = create_session(f"strom-{report}-report", dict(args.conf), master)
        else:
            register(spark)
        run = ReportRun(report, run_id, report_date, ReportLayout(args.output, report), reporter, spark)
        body(run)
        rows = run.step(CSV_STEP, lambda: _write_csv_files(run))
        manifest = {"report": report, "run_id": run_id, "report_date": report_date.isoformat(), "tables": rows,
                    "started_at": datetime.fromtimestamp(started, UTC).isoformat(),
                    "finished_at": datetime.now(UTC).isoformat(), "seconds": round(time.time() - started, 3),
                    "master": spark.sparkContext.master, "parameters": _parameters(args), **period_fields}
        write_manifest(run.layout, manifest)
        reporter.emit("finished", rows=rows, output=str(args.output / report), seconds=manifest["seconds"])
        return 0
    except Exception as exc:  # the one line a runner shows; Spark's own trace went to stderr already
        message = _one_line(exc)
        reporter.emit("failed", error=message)
        print(f"error: {message}", file=sys.stderr)
        return 1
    finally:
        if owned is not None:
            owned.stop()


def fail_before_start(report: str, args: argparse.Namespace, message: str) -> int:
    """Report an input refused before any run started (e.g. an unreadable snapshot); returns the exit status."""
    ProgressReporter(report, args.run_id or "-", [], args.progress_file).emit("failed", error=message)
    print(f"error: {message}", file=sys.stderr)
    return 1


def _write_csv_files(run: ReportRun) -> dict[str, int]:
    from pyspark.sql.pandas.types import to_arrow_schema

    rows = {}
    for table, schema in run.tables.items():
        data = read_run(run.layout, table, run.report_date, run.run_id, to_arrow_schema(schema, timezone="UTC"))
        write_csv(run.layout, table, run.report_date, run.run_id, data)
        rows[table] = data.num_rows
    return rows


def _one_line(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # Spark wraps Python data source errors: the cause is the last line of the embedded traceback
    if "PYTHON_DATA_SOURCE_ERROR" in text or "Traceback" in text:
        cause = lines[-2 if lines[-1].startswith("SQLSTATE") and len(lines) > 1 else -1]
        return re.sub(r"^[\w.]*(Error|Exception): ", "", cause)
    return lines[0]


def _parameters(args: argparse.Namespace) -> dict:
    return {key: (str(value) if isinstance(value, Path | datetime) else value)
            for key, value in vars(args).items() if key not in ("progress_file",)}


def _run_id(text: str) -> str:
    try:
        return check_run_id(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _conf_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"--conf takes KEY=VALUE, not {text!r}")
    return key.strip(), value
