"""A finished run's outputs as the console shows them: its tables (first `PREVIEW_ROWS` rows) and Plotly charts,
read from its Parquet files with pyarrow (`spark_jobs.results`), never by starting Spark."""

from dataclasses import dataclass
from pathlib import Path

from spark_jobs.results import ReportLayout, read_run

from .models import Report, ReportRun

PREVIEW_ROWS = 50
STATUS_COLOURS = {"OK": "#2e7d32", "WARN": "#f9a825", "ERR": "#c62828", "STOP": "#6a1b9a", "STALL": "#ef6c00",
                  "REWIND": "#1565c0", "NOTFOUND": "#9e9e9e"}
TABLES = {
    Report.LAG: ("groups", "worst_partitions", "breaches", "partitions"),
    Report.RETENTION: ("consumers_at_risk", "topics", "log_dirs", "replicas"),
}


@dataclass(frozen=True)
class Chart:
    """A bar chart of `values` (columns of `table`, one trace each) against a label made of `label` columns,
    over the first `limit` rows."""

    table: str
    title: str
    label: tuple[str, ...]
    values: tuple[str, ...]
    stacked: bool = False
    limit: int = 30


CHARTS = {
    Report.LAG: (
        Chart("groups", "Seconds in each status, per group", ("group",),
              tuple(f"seconds_{s.lower()}" for s in STATUS_COLOURS), stacked=True),
        Chart("worst_partitions", "Worst partitions: p95 lag (s)", ("group", "topic", "partition"),
              ("lag_seconds_p95",)),
    ),
    Report.RETENTION: (
        Chart("topics", "Data kept vs retention (hours)", ("topic",), ("kept_hours", "retention_hours")),
        Chart("log_dirs", "Days until each log dir is full", ("broker", "log_dir"), ("days_until_full",)),
        Chart("consumers_at_risk", "Consumers at risk: hours until data loss", ("group", "topic", "partition"),
              ("hours_until_data_loss",)),
    ),
}


@dataclass(frozen=True)
class TablePreview:
    name: str
    columns: list[str]
    rows: list[list]
    total_rows: int


def layout(location: Path, run: ReportRun) -> ReportLayout:
    return ReportLayout(location, run.report)


def read_tables(location: Path, run: ReportRun) -> dict:
    """{table: pyarrow Table} of a succeeded run; tables it wrote no file for are left out."""
    found = {}
    for table in TABLES[Report(run.report)]:
        rows = read_run(layout(location, run), table, run.report_date, run.run_id)
        if rows is not None:
            found[table] = rows
    return found


def previews(tables: dict) -> list[TablePreview]:
    return [TablePreview(name, table.column_names, [list(row.values()) for row in table.slice(0, PREVIEW_ROWS)
                                                     .to_pylist()], table.num_rows)
            for name, table in tables.items()]


def figures(report: str, tables: dict) -> list[dict]:
    """Plotly figures (plain dicts for `Plotly.newPlot`) of the charts whose table has a value to draw."""
    found = []
    for chart in CHARTS[Report(report)]:
        table = tables.get(chart.table)
        if table is None or table.num_rows == 0:
            continue
        rows = table.slice(0, chart.limit).to_pylist()
        labels = [" / ".join(str(row.get(column)) for column in chart.label) for row in rows]
        traces = [{"type": "bar", "orientation": "h", "name": column.removeprefix("seconds_").upper()
                   if chart.stacked else column, "y": labels, "x": [row.get(column) for row in rows],
                   **({"marker": {"color": STATUS_COLOURS[column.removeprefix("seconds_").upper()]}}
                      if chart.stacked else {})}
                  for column in chart.values if column in table.column_names]
        if all(value is None for trace in traces for value in trace["x"]):
            continue  # e.g. days until full before any growth is known: nothing to draw
        found.append({"id": f"chart-{chart.table}", "figure_id": f"figure-chart-{chart.table}", "figure": {
            "data": traces,
            "layout": {"title": {"text": chart.title}, "barmode": "stack" if chart.stacked else "group",
                       "height": 160 + 22 * len(rows), "margin": {"l": 220, "r": 20, "t": 40, "b": 40},
                       "yaxis": {"autorange": "reversed", "automargin": True}}}})
    return found
