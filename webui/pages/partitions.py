"""Partitions: a heatmap of brokers × topics (leaders, replicas, out-of-sync replicas or size on disk) for the
topics with the most of it."""

import dash
from dash import Input, Output, callback, dcc, html

from webui import figures, ids
from webui.components import graph
from webui.pages._empty import NO_BROKERS
from webui.source import source

dash.register_page(__name__, path="/partitions", name="Partitions", title="Partitions · Strom dashboard", order=3)
pid = ids.page("partitions")
METRICS = {"leaders": "Leaders", "replicas": "Replicas", "out_of_sync": "Out of sync", "size_bytes": "Size"}
EMPTY = {"size_bytes": "No sizes recorded yet: they come with the brokers' metric samples (every 10 s)."}


def layout(**_kwargs):
    return html.Div([
        html.H1("Partitions"),
        html.Div(className="controls", children=[
            html.Span("Show", className="control-label"),
            dcc.RadioItems(id=pid("metric"), value="leaders", inline=True,
                           options=[{"label": label, "value": key} for key, label in METRICS.items()]),
            html.Span("Topics", className="control-label"),
            dcc.Dropdown(id=pid("top"), value=30, clearable=False, style={"width": "90px"},
                         options=[{"label": str(n), "value": n} for n in (15, 30, 60)]),
        ]),
        graph(pid("heatmap")),
    ])


@callback(Output(pid("heatmap"), "figure"),
          Input(ids.INTERVAL, "n_intervals"), Input(pid("metric"), "value"), Input(pid("top"), "value"))
def refresh(_n, metric, top):
    heatmap = source().partition_heatmap(metric, int(top))
    reason = NO_BROKERS if not heatmap.brokers else EMPTY.get(metric, "The cluster has no topics yet.")
    return figures.heatmap_figure(heatmap, metric, reason)
