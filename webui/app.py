"""The dashboard app: a cluster page refreshed by a dcc.Interval, with one action (preferred leader election)."""

from dash import Dash, Input, Output, dcc, html

from . import ids
from .actions import ELECT_PREFERRED_LEADERS, ActionRefusedError, DashboardActions
from .data import DashboardDataSource
from .figures import broker_load_figure, health_history_figure

HEALTH_POINTS = 120
_TILES = (
    ("brokers running", ids.BROKERS_RUNNING),
    ("topics", ids.TOPICS),
    ("partitions", ids.PARTITIONS),
    ("under-replicated", ids.UNDER_REPLICATED),
    ("offline partitions", ids.OFFLINE),
)
_STYLE = {
    "page": {"fontFamily": "system-ui, sans-serif", "maxWidth": "1200px", "margin": "0 auto",
             "padding": "1rem 1.5rem", "color": "#1d2330"},
    "tiles": {"display": "grid", "gridTemplateColumns": "repeat(5, 1fr)", "gap": "1rem"},
    "tile": {"border": "1px solid #e3e6eb", "borderRadius": "10px", "padding": ".8rem 1rem",
             "background": "#fff"},
    "figure": {"fontSize": "1.6rem", "fontWeight": 650},
    "label": {"color": "#667085", "fontSize": ".85rem"},
}


def _elect_leaders_button(actions: DashboardActions) -> html.Div:
    """Enabled for users who may elect preferred leaders; otherwise disabled, with the reason beside it."""
    reason = actions.refusal(ELECT_PREFERRED_LEADERS)
    return html.Div(style={"display": "flex", "gap": "1rem", "alignItems": "center", "margin": ".5rem 0"}, children=[
        html.Button("Elect preferred leaders", id=ids.ELECT_LEADERS, n_clicks=0, disabled=reason is not None,
                    title=reason or "Move each partition's leadership back to its preferred replica"),
        html.Span(reason or "", id=ids.ELECT_LEADERS_OUTCOME, style=_STYLE["label"]),
    ])


def create_app(data_source: DashboardDataSource, actions: DashboardActions, *,
               requests_pathname_prefix: str = "/dashboard/", refresh_ms: int = 5000) -> Dash:
    """Build the Dash app. `use_async=False`: callbacks call the control plane's synchronous ORM. The layout is
    built per page load, so the action button reflects the user's role."""
    app = Dash(__name__, requests_pathname_prefix=requests_pathname_prefix, routes_pathname_prefix="/",
               use_async=False, title="Strom dashboard", update_title=None)
    app.layout = lambda: _layout(actions, refresh_ms)

    @app.callback(
        [Output(tile_id, "children") for _, tile_id in _TILES]
        + [Output(ids.BROKER_LOAD, "figure"), Output(ids.HEALTH_HISTORY, "figure"),
           Output(ids.REFRESHED, "children")],
        Input(ids.INTERVAL, "n_intervals"),
    )
    def refresh(n_intervals: int):
        summary = data_source.cluster_summary()
        return (
            f"{summary.brokers_running} / {summary.brokers_total}",
            str(summary.topics),
            str(summary.partitions),
            str(summary.under_replicated_partitions),
            str(summary.offline_partitions),
            broker_load_figure(data_source.broker_load()),
            health_history_figure(data_source.health_history(HEALTH_POINTS)),
            f"refresh #{n_intervals} · controller epoch {summary.controller_epoch}",
        )

    @app.callback(Output(ids.ELECT_LEADERS_OUTCOME, "children"), Input(ids.ELECT_LEADERS, "n_clicks"),
                  prevent_initial_call=True)
    def elect_leaders(n_clicks: int) -> str:
        try:
            return actions.elect_preferred_leaders()
        except ActionRefusedError as refused:
            return refused.reason

    return app


def _layout(actions: DashboardActions, refresh_ms: int) -> html.Div:
    return html.Div(style=_STYLE["page"], children=[
        html.Div(style={"display": "flex", "justifyContent": "space-between", "alignItems": "baseline"},
                 children=[html.H1("Cluster dashboard", style={"fontSize": "1.5rem"}),
                           html.A("← console", href="/")]),
        html.Div(style=_STYLE["tiles"], children=[
            html.Div(style=_STYLE["tile"], children=[
                html.Div("…", id=tile_id, style=_STYLE["figure"]), html.Div(label, style=_STYLE["label"])])
            for label, tile_id in _TILES
        ]),
        dcc.Graph(id=ids.BROKER_LOAD),
        _elect_leaders_button(actions),
        dcc.Graph(id=ids.HEALTH_HISTORY),
        html.Div(id=ids.REFRESHED, style=_STYLE["label"]),
        dcc.Interval(id=ids.INTERVAL, interval=refresh_ms, n_intervals=0),
    ])
