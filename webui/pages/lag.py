"""Consumer lag per group over time: records and seconds behind, with Burrow's status as shaded bands. The
history comes from the lag monitor's samples (`__strom_lag_samples`)."""

import dash
from dash import Input, Output, callback, dcc, html

from webui import figures, ids
from webui.components import graph, range_control, resolve_range
from webui.source import source

dash.register_page(__name__, path="/lag", name="Consumer lag", title="Consumer lag · Strom dashboard", order=2)
pid = ids.page("lag")
NO_MONITOR = ("No lag history: the lag monitor is not running (it publishes its evaluations to "
              "__strom_lag_samples, which `manage.py consume_metrics` records).")


def layout(group: str | None = None, **_kwargs):
    """`?group=<id>` (the console's "lag chart" links) preselects a group."""
    return html.Div([
        html.H1("Consumer lag"),
        html.Div(className="controls", children=[
            html.Span("Group", className="control-label"),
            dcc.Dropdown(id=pid("group"), value=group, placeholder="choose a consumer group",
                         className="dash-dropdown"),
        ]),
        range_control(pid),
        graph(pid("chart")),
    ])


@callback(Output(pid("group"), "options"), Output(pid("group"), "value"),
          Input(ids.INTERVAL, "n_intervals"), Input(pid("group"), "value"))
def groups(_n, chosen):
    names = source().lag_groups()
    value = chosen if chosen in names else (names[0] if names else None)
    return [{"label": g, "value": g} for g in names], value


@callback(Output(pid("chart"), "figure"),
          Input(ids.INTERVAL, "n_intervals"), Input(ids.TIMEZONE, "data"), Input(pid("group"), "value"),
          Input(pid("range"), "value"), Input(pid("custom"), "start_date"), Input(pid("custom"), "end_date"))
def refresh(_n, tz_name, group, range_choice, start_date, end_date):
    if not group:
        return figures.empty_figure("Consumer lag", NO_MONITOR, height=380)
    since, until = resolve_range(range_choice, start_date, end_date)
    history = source().lag_history(group, since, until)
    return figures.lag_figure(history, tz_name, f"No lag samples of {group} in this range.")
