"""Pure builders: typed rows → Plotly figures as plain dicts (what dcc.Graph sends to plotly.js; building
`go.Figure` objects would validate every property on each refresh and add a 10 KB template per figure).

Every figure has a title and axis titles with units; times are shown in the viewer's zone (`local_times`,
axis title "time (<zone>)"); a figure without data is an empty state whose text says why.
"""

from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .data import BrokerLoad, Heatmap, LagHistory, Series

FONT = {"family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", "size": 12, "color": "#1d2330"}
GRID = "#eef0f3"
STATUS_COLORS = {"OK": "rgba(47,133,90,.12)", "WARN": "rgba(183,121,31,.18)", "REWIND": "rgba(183,121,31,.18)",
                 "STALL": "rgba(197,48,48,.18)", "STOP": "rgba(197,48,48,.18)", "ERR": "rgba(197,48,48,.25)"}


def zone(name: str | None) -> tuple[ZoneInfo, str]:
    """The viewer's zone from the browser's IANA name; UTC when unknown."""
    try:
        return ZoneInfo(name), name  # type: ignore[arg-type]
    except (ZoneInfoNotFoundError, TypeError, ValueError):
        return ZoneInfo("UTC"), "UTC"


def local_times(times: list[datetime], tz: ZoneInfo, formatted: dict[datetime, str] | None = None) -> list[str]:
    """Wall-clock times in `tz` as ISO strings without offset (plotly shows them as they are). `formatted`
    memoizes across calls: a chart's series share their steps, and formatting dominates building the figure."""
    formatted = {} if formatted is None else formatted
    for t in times:
        if t not in formatted:
            formatted[t] = t.astimezone(tz).strftime("%Y-%m-%dT%H:%M:%S")
    return [formatted[t] for t in times]


def _layout(title: str, x_title: str, y_title: str, height: int = 340, **extra) -> dict:
    return {"title": {"text": title, "x": 0.01, "font": {"size": 15}}, "height": height, "font": FONT,
            "margin": {"l": 64, "r": 16, "t": 48, "b": 96}, "paper_bgcolor": "#fff", "plot_bgcolor": "#fff",
            "xaxis": {"title": {"text": x_title, "standoff": 8}, "gridcolor": GRID, "zeroline": False,
                      "automargin": True},
            "yaxis": {"title": {"text": y_title}, "gridcolor": GRID, "rangemode": "tozero", "zeroline": False,
                      "automargin": True},
            "legend": {"orientation": "h", "x": 0, "y": -0.42, "yanchor": "top"}, "hovermode": "x unified",
            **extra}


def empty_figure(title: str, reason: str, height: int = 320) -> dict:
    """A chart with nothing to draw: the title, and in its middle why it is empty."""
    layout = _layout(title, "", "", height)
    layout.update(xaxis={"visible": False}, yaxis={"visible": False}, annotations=[{
        "text": reason, "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5, "showarrow": False,
        "font": {"size": 13, "color": "#667085"}}])
    return {"data": [], "layout": layout}


def time_series_figure(title: str, unit: str, series: list[Series], tz_name: str | None, empty_reason: str,
                       height: int = 320, stacked: bool = False) -> dict:
    """Lines over time (one per series), y in `unit`."""
    if not any(v is not None for s in series for v in s.values):
        return empty_figure(title, empty_reason, height)
    tz, label = zone(tz_name)
    mode = "lines" if max(len(s.values) for s in series) > 20 else "lines+markers"
    formatted: dict[datetime, str] = {}
    data = [{"type": "scatter", "mode": mode, "name": s.name, "x": local_times(s.times, tz, formatted),
             "y": [None if v is None else round(v, 3) for v in s.values], "line": {"width": 1.6},
             **({"stackgroup": "one"} if stacked else {})} for s in series]
    return {"data": data, "layout": _layout(title, f"time ({label})", unit, height)}


def sparkline_figure(title: str, unit: str, series: list[Series], tz_name: str | None, empty_reason: str) -> dict:
    return time_series_figure(title, unit, series, tz_name, empty_reason, height=300)


def broker_load_figure(rows: list[BrokerLoad]) -> dict:
    if not rows:
        return empty_figure("Partitions per broker", "No broker has registered with the control plane yet.")
    labels = [f"broker {r.broker_id}" for r in rows]
    data = [{"type": "bar", "name": "leader partitions", "x": labels, "y": [r.leaders for r in rows]},
            {"type": "bar", "name": "replicas", "x": labels, "y": [r.replicas for r in rows]}]
    layout = _layout("Partitions per broker", "broker", "partitions", barmode="group")
    layout["hovermode"] = "closest"
    return {"data": data, "layout": layout}


def lag_figure(history: LagHistory, tz_name: str | None, empty_reason: str) -> dict:
    """Lag in records (left axis) and seconds (right axis) over time, over bands coloured by Burrow status."""
    title = f"Consumer lag of {history.group}"
    if not history.times:
        return empty_figure(title, empty_reason, height=380)
    tz, label = zone(tz_name)
    times = local_times(history.times, tz)
    data = [{"type": "scatter", "mode": "lines", "name": "lag (records)", "x": times, "y": history.lag},
            {"type": "scatter", "mode": "lines", "name": "lag (seconds)", "x": times, "y": history.lag_seconds,
             "yaxis": "y2", "line": {"dash": "dot"}}]
    layout = _layout(title, f"time ({label})", "records behind", height=380)
    layout["yaxis2"] = {"title": {"text": "seconds behind"}, "overlaying": "y", "side": "right",
                        "rangemode": "tozero", "showgrid": False}
    layout["margin"]["r"] = 64
    shapes = []
    for i, status in enumerate(history.status):
        end = times[i + 1] if i + 1 < len(times) else times[i]
        if status in STATUS_COLORS and status != "OK":
            shapes.append({"type": "rect", "xref": "x", "yref": "paper", "x0": times[i], "x1": end, "y0": 0, "y1": 1,
                           "fillcolor": STATUS_COLORS[status], "line": {"width": 0}, "layer": "below"})
    layout["shapes"] = shapes
    worst = [s for s in history.status if s not in ("OK", "NOTFOUND")]
    layout["title"]["text"] += f" · status now {history.status[-1]}" + (
        f" (shaded: {', '.join(sorted(set(worst)))})" if worst else "")
    return {"data": data, "layout": layout}


HEATMAP_UNITS = {"leaders": "leader partitions", "replicas": "replicas", "out_of_sync": "out-of-sync replicas",
                 "size_bytes": "GB on disk"}


def heatmap_figure(heatmap: Heatmap, metric: str, empty_reason: str) -> dict:
    title = f"Partitions: {HEATMAP_UNITS[metric]} per broker and topic"
    if not heatmap.topics or not heatmap.brokers:
        return empty_figure(title, empty_reason, height=420)
    scale = 1e-9 if metric == "size_bytes" else 1
    z = [[round(v * scale, 3) for v in row] for row in heatmap.z]
    shown = f"{len(heatmap.topics)} of {heatmap.topics_total} topics"
    colors = "Reds" if metric == "out_of_sync" else "Blues"
    data = [{"type": "heatmap", "x": [f"broker {b}" for b in heatmap.brokers], "y": heatmap.topics, "z": z,
             "colorscale": colors, "reversescale": True, "colorbar": {"title": {"text": HEATMAP_UNITS[metric]}},
             "hovertemplate": "%{y} on %{x}: %{z}<extra></extra>"}]
    layout = _layout(f"{title} ({shown})", "broker", "topic", height=max(420, 22 * len(heatmap.topics) + 120))
    layout["yaxis"].update(autorange="reversed", rangemode=None, type="category")
    layout["hovermode"] = "closest"
    layout["margin"]["b"] = 48
    return {"data": data, "layout": layout}


def now() -> datetime:
    return datetime.now(UTC)
