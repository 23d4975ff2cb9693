"""Pieces several pages share: the time-range control, chart containers, number formatting."""

from datetime import UTC, datetime, timedelta

import flask
from dash import dcc, html

from . import ids

GRAPH_CONFIG = {"displaylogo": False, "responsive": True}
RANGES = {"1h": ("1 h", timedelta(hours=1)), "24h": ("24 h", timedelta(hours=24)),
          "7d": ("7 d", timedelta(days=7)), "custom": ("custom", None)}
DEFAULT_RANGE = "1h"


def viewer_zone() -> str | None:
    """The viewer's zone name from the request's cookie (None: not known yet, e.g. on a first visit)."""
    return flask.request.cookies.get(ids.TIMEZONE_COOKIE) if flask.has_request_context() else None


def graph(component_id: str, figure: dict | None = None) -> html.Div:
    """A chart container; `figure` (optional) is drawn before the first callback answers."""
    return html.Div(dcc.Graph(id=component_id, config=GRAPH_CONFIG, figure=figure or {}), className="chart")


def range_control(id_of) -> html.Div:
    """Range radio (1 h / 24 h / 7 d / custom) and the custom dates; ids `range`, `custom`."""
    return html.Div(className="controls", children=[
        html.Span("Range", className="control-label"),
        dcc.RadioItems(id=id_of("range"), value=DEFAULT_RANGE, inline=True,
                       options=[{"label": label, "value": key} for key, (label, _) in RANGES.items()]),
        dcc.DatePickerRange(id=id_of("custom"), display_format="YYYY-MM-DD", clearable=True,
                            minimum_nights=0, style={"maxWidth": "340px"}),
    ])


def resolve_range(choice: str | None, start_date: str | None, end_date: str | None,
                  now: datetime | None = None) -> tuple[datetime, datetime]:
    """[since, until) in UTC for a range choice; a custom range covers whole days (UTC), up to now."""
    now = now or datetime.now(UTC)
    if choice == "custom" and start_date:
        since = datetime.fromisoformat(start_date[:10]).replace(tzinfo=UTC)
        end = datetime.fromisoformat((end_date or start_date)[:10]).replace(tzinfo=UTC) + timedelta(days=1)
        return since, min(end, now)
    _, span = RANGES.get(choice or DEFAULT_RANGE, RANGES[DEFAULT_RANGE])
    return now - (span or RANGES[DEFAULT_RANGE][1]), now


def human_bytes(value: float | None) -> str:
    if value is None:
        return "–"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(value) < 1000 or unit == "TB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1000
    return f"{value:,.1f} TB"


def page_title(title: str, subtitle: str) -> html.Div:
    return html.Div([html.H1(title), html.P(subtitle, className="meta")])
