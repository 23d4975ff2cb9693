"""Throughput: bytes or messages in and out per second, per broker and for the top-N topics, over a range."""

import dash
from dash import Input, Output, callback, dcc, html

from webui import figures, ids
from webui.components import graph, range_control, resolve_range
from webui.pages._empty import no_data_in_range
from webui.source import source

dash.register_page(__name__, path="/throughput", name="Throughput", title="Throughput · Strom dashboard", order=1)
pid = ids.page("throughput")
METRICS = {"bytes_in": ("Bytes in", "bytes/s"), "bytes_out": ("Bytes out (consumers)", "bytes/s"),
           "messages_in": ("Messages in", "messages/s")}


def layout(**_kwargs):
    return html.Div([
        html.H1("Throughput"),
        range_control(pid),
        html.Div(className="controls", children=[
            html.Span("Metric", className="control-label"),
            dcc.RadioItems(id=pid("metric"), value="bytes_in", inline=True,
                           options=[{"label": label, "value": key} for key, (label, _) in METRICS.items()]),
            html.Span("Top topics", className="control-label"),
            dcc.Dropdown(id=pid("top"), value=10, clearable=False, style={"width": "90px"},
                         options=[{"label": str(n), "value": n} for n in (5, 10, 20)]),
        ]),
        html.Div(className="charts", children=[graph(pid("brokers")), graph(pid("topics"))]),
    ])


INPUTS = (Input(ids.INTERVAL, "n_intervals"), Input(ids.TIMEZONE, "data"), Input(pid("range"), "value"),
          Input(pid("custom"), "start_date"), Input(pid("custom"), "end_date"), Input(pid("metric"), "value"),
          Input(pid("top"), "value"))
"""The two charts have a callback each: the browser asks for both at once and the server answers them side by
side (the database reads release the GIL), instead of one after the other."""


@callback(Output(pid("brokers"), "figure"), *INPUTS)
def refresh_brokers(_n, tz_name, range_choice, start_date, end_date, metric, _top):
    since, until = resolve_range(range_choice, start_date, end_date)
    label, unit = METRICS[metric]
    brokers = source().broker_throughput(metric, since, until)
    step = f" · {brokers.step_s // 60} min points" if brokers.step_s >= 60 else f" · {brokers.step_s} s points"
    return figures.time_series_figure(f"{label} per broker{step}", unit, brokers.series, tz_name,
                                      no_data_in_range(brokers.history_starts))


@callback(Output(pid("topics"), "figure"), *INPUTS)
def refresh_topics(_n, tz_name, range_choice, start_date, end_date, metric, top):
    since, until = resolve_range(range_choice, start_date, end_date)
    label, unit = METRICS[metric]
    topics = source().topic_throughput(metric, since, until, int(top))
    return figures.time_series_figure(f"{label}: top {top} topics", unit, topics.series, tz_name,
                                      no_data_in_range(topics.history_starts, "topic traffic"))
