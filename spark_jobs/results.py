"""Report outputs on disk, and reading them without Spark (pyarrow only: the console may import this
module; an import-linter contract keeps pyspark out of it).

Layout under a location (default `$STROM_VAR_DIR/reports`, i.e. `var/reports/`), per report (`lag`,
`retention`) and run:

    <location>/<report>/<table>/report_date=YYYY-MM-DD/run_id=<run id>/part-*.parquet   (Spark writes these)
    <location>/<report>/csv/report_date=YYYY-MM-DD/run_id=<run id>/<table>.csv
    <location>/<report>/runs/<run id>.json        the run's manifest, written last

The manifest holds `report`, `run_id`, `report_date`, `period_start`/`period_end` (ISO 8601 UTC, where the
report has a period), `tables` ({table: rows}), `started_at`, `finished_at`, `seconds`, `master` and
`parameters` (the job's arguments). A run without a manifest is incomplete (running or failed).
Re-running a run id replaces that run's partitions only.
"""

import json
import os
import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path

RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


def default_location() -> Path:
    return Path(os.environ.get("STROM_VAR_DIR", "var")) / "reports"


def check_run_id(run_id: str) -> str:
    if not RUN_ID.fullmatch(run_id):
        raise ValueError(f"run id {run_id!r} must be 1-100 letters, digits, '_', '.' or '-' (it names a directory)")
    return run_id


@dataclass(frozen=True)
class ReportLayout:
    """Where one report's tables, CSV files and manifests live."""

    location: Path
    report: str

    def table_dir(self, table: str) -> Path:
        return self.location / self.report / table

    def run_partition(self, table: str, report_date: date, run_id: str) -> Path:
        return self.table_dir(table) / f"report_date={report_date.isoformat()}" / f"run_id={run_id}"

    def csv_path(self, table: str, report_date: date, run_id: str) -> Path:
        return (self.location / self.report / "csv" / f"report_date={report_date.isoformat()}"
                / f"run_id={run_id}" / f"{table}.csv")

    def manifest_path(self, run_id: str) -> Path:
        return self.location / self.report / "runs" / f"{run_id}.json"


def read_table(layout: ReportLayout, table: str, run_id: str | None = None, columns: list[str] | None = None):
    """A report table as a pyarrow Table (every run, or one run), with `report_date` (date) and `run_id`.
    Raises FileNotFoundError when no run has written a row of it yet."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    partitioning = ds.partitioning(pa.schema([("report_date", pa.date32()), ("run_id", pa.string())]),
                                   flavor="hive")
    dataset = ds.dataset(layout.table_dir(table), format="parquet", partitioning=partitioning)
    where = None if run_id is None else ds.field("run_id") == run_id
    return dataset.to_table(columns=columns, filter=where)


def read_run(layout: ReportLayout, table: str, report_date: date, run_id: str, schema=None):
    """One run's rows of a table (without the partition columns); a run that wrote no row has no files:
    then an empty table of `schema` (a pyarrow schema), or None without one."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    directory = layout.run_partition(table, report_date, run_id)
    if not directory.is_dir():
        return None if schema is None else pa.Table.from_batches([], schema=schema)
    return ds.dataset(directory, format="parquet").to_table()


def write_csv(layout: ReportLayout, table: str, report_date: date, run_id: str, rows) -> Path:
    """Write `rows` (a pyarrow Table) as the run's CSV file of `table`; timestamps in ISO 8601."""
    import pyarrow.csv as csv

    path = layout.csv_path(table, report_date, run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    csv.write_csv(rows, path)
    return path


def write_manifest(layout: ReportLayout, manifest: dict) -> Path:
    path = layout.manifest_path(manifest["run_id"])
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".json.tmp")
    partial.write_text(json.dumps(manifest, indent=2, sort_keys=True))
    partial.replace(path)  # readers never see half a manifest
    return path


def list_runs(layout: ReportLayout) -> list[dict]:
    """Every finished run's manifest, newest first."""
    runs_dir = layout.location / layout.report / "runs"
    manifests = [json.loads(path.read_text()) for path in runs_dir.glob("*.json")] if runs_dir.is_dir() else []
    return sorted(manifests, key=lambda manifest: manifest["finished_at"], reverse=True)
