"""Overview: health tiles coloured by state (brokers, controller, offline and under-replicated partitions,
open alerts), the cluster's throughput over the last hour, partitions per broker, and one action: preferred
leader election (disabled, with the reason, for users whose role may not)."""

from datetime import timedelta

import dash
from dash import Input, Output, callback, html

from webui import figures, ids
from webui.actions import ELECT_PREFERRED_LEADERS, ActionRefusedError
from webui.components import graph, human_bytes, viewer_zone
from webui.pages._empty import no_data_in_range
from webui.source import actions, source

dash.register_page(__name__, path="/", name="Overview", title="Overview · Strom dashboard", order=0)
pid = ids.page("overview")
TILES = ("brokers", "controller", "offline", "under-replicated", "alerts")


def layout(**_kwargs):
    """The tiles and figures are drawn into the layout itself, in the viewer's zone from its cookie (UTC until
    the browser has written it; the next refresh then shows local time): the dashboard's landing page paints
    without waiting for a callback round trip."""
    drawn = _outputs(0, viewer_zone())
    tiles = [html.Div(id=pid(f"tile-{key}"), children=drawn[2 * i], className=drawn[2 * i + 1])
             for i, key in enumerate(TILES)]
    return html.Div([
        html.H1("Cluster overview"),
        html.Div(className="tiles", children=tiles),
        html.Div(className="charts", children=[graph(pid("throughput"), drawn[-3]), graph(pid("load"), drawn[-2])]),
        _elect_leaders_button(),
        html.P(drawn[-1], id=pid("refreshed"), className="meta"),
    ])


def _elect_leaders_button() -> html.Div:
    """Enabled for users who may elect preferred leaders; otherwise disabled, with the reason beside it."""
    reason = actions().refusal(ELECT_PREFERRED_LEADERS)
    return html.Div(className="controls", children=[
        html.Button("Elect preferred leaders", id=pid("elect-leaders"), n_clicks=0, disabled=reason is not None,
                    title=reason or "Move each partition's leadership back to its preferred replica"),
        html.Span(reason or "", id=pid("elect-leaders-outcome"), className="meta"),
    ])


@callback(Output(pid("elect-leaders-outcome"), "children"), Input(pid("elect-leaders"), "n_clicks"),
          prevent_initial_call=True)
def elect_leaders(_n_clicks):
    try:
        return actions().elect_preferred_leaders()
    except ActionRefusedError as refused:
        return refused.reason


def _tile(value: str, label: str, state: str, hint: str = "") -> tuple[list, str]:
    children = [html.Span(value, className="figure"), html.Span(label, className="label")]
    if hint:
        children.append(html.Span(hint, className="hint"))
    return children, f"tile {state}"


@callback([Output(pid(f"tile-{key}"), prop) for key in TILES for prop in ("children", "className")]
          + [Output(pid("throughput"), "figure"), Output(pid("load"), "figure"), Output(pid("refreshed"), "children")],
          Input(ids.INTERVAL, "n_intervals"), Input(ids.TIMEZONE, "data"), prevent_initial_call=True)
def refresh(n_intervals, tz_name):
    return _outputs(n_intervals, tz_name)


def _outputs(n_intervals, tz_name) -> list:
    """Each tile's (children, className), the throughput and load figures, the refresh note."""
    data = source()
    summary = data.cluster_summary()
    tiles = [
        _tile(f"{summary.brokers_running} / {summary.brokers_total}", "brokers running",
              "ok" if summary.brokers_total and summary.brokers_running == summary.brokers_total else "bad"),
        _tile(f"broker {summary.controller_id}" if summary.controller_id >= 0 else "none", "controller",
              "ok" if summary.controller_id >= 0 else "bad", f"epoch {summary.controller_epoch}"),
        _tile(str(summary.offline_partitions), "offline partitions", "bad" if summary.offline_partitions else "ok",
              f"of {summary.partitions:,} in {summary.topics:,} topics"),
        _tile(str(summary.under_replicated_partitions), "under-replicated partitions",
              "warn" if summary.under_replicated_partitions else "ok"),
        _tile("–", "open alerts", "", "alerting is not set up yet") if summary.open_alerts is None else
        _tile(str(summary.open_alerts), "open alerts", "bad" if summary.open_alerts else "ok"),
    ]
    now = figures.now()
    throughput = data.cluster_throughput(now - timedelta(hours=1), now)
    latest = {s.name: s.values[-1] for s in throughput.series if s.values}
    title = "Cluster throughput, last hour" + (
        f" · now {human_bytes(latest.get('bytes in'))}/s in, {human_bytes(latest.get('bytes out'))}/s out"
        if latest else "")
    return [*[part for tile in tiles for part in tile],
            figures.sparkline_figure(title, "bytes/s", throughput.series, tz_name,
                                     no_data_in_range(throughput.history_starts)),
            figures.broker_load_figure(data.broker_load()),
            f"Refreshed every 10 s · update #{n_intervals}"]
