"""Disk: per broker and log dir, bytes used by partition logs, capacity, growth per day and days until full,
and used bytes over the last week."""

from datetime import timedelta

import dash
from dash import Input, Output, callback, html

from webui import figures, ids
from webui.components import graph, human_bytes
from webui.data import Series
from webui.pages._empty import NO_HISTORY, no_data_in_range
from webui.source import source

dash.register_page(__name__, path="/disk", name="Disk", title="Disk · Strom dashboard", order=4)
pid = ids.page("disk")
COLUMNS = ("broker", "log dir", "used by logs", "capacity", "free", "growth / day", "days until full")


def layout(**_kwargs):
    return html.Div([
        html.H1("Disk"),
        html.Div(className="card", children=[html.H2("Log directories"), html.Div(id=pid("table"))]),
        graph(pid("history")),
    ])


def _table(rows) -> html.Table | html.P:
    if not rows:
        return html.P(NO_HISTORY, className="empty")
    body = []
    for r in rows:
        days = r.days_until_full
        body.append(html.Tr([
            html.Td(str(r.broker_id)), html.Td(html.Code(r.path)), html.Td(human_bytes(r.used_bytes)),
            html.Td(human_bytes(r.capacity_bytes)), html.Td(human_bytes(r.free_bytes)),
            html.Td("–" if r.growth_bytes_per_day is None else human_bytes(r.growth_bytes_per_day)),
            html.Td("–" if r.growth_bytes_per_day is None else "not filling" if days is None else f"{days:,.1f}",
                    className="error" if days is not None and days < 7 else ""),
        ]))
    return html.Table([html.Thead(html.Tr([html.Th(c) for c in COLUMNS])), html.Tbody(body)])


@callback(Output(pid("table"), "children"), Output(pid("history"), "figure"),
          Input(ids.INTERVAL, "n_intervals"), Input(ids.TIMEZONE, "data"))
def refresh(_n, tz_name):
    data = source()
    now = figures.now()
    history = data.disk_history(now - timedelta(days=7), now)
    scaled = [Series(s.name, s.times, [None if v is None else v / 1e9 for v in s.values]) for s in history.series]
    return (_table(data.disk_usage()),
            figures.time_series_figure("Bytes used by partition logs per log dir, last 7 days", "GB", scaled, tz_name,
                                       no_data_in_range(history.history_starts, "disk samples")))
