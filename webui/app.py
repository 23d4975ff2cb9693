"""The dashboard app: a cluster page refreshed by a dcc.Interval."""

from dash import Dash, Input, Output, dcc, html

from . import ids
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


def create_app(data_source: DashboardDataSource, *, requests_pathname_prefix: str = "/dashboard/",
               refresh_ms: int = 5000) -> Dash:
    """Build the Dash app. `use_async=False`: callbacks call the control plane's synchronous ORM."""
    app = Dash(__name__, requests_pathname_prefix=requests_pathname_prefix, routes_pathname_prefix="/",
               use_async=False, title="Strom dashboard", update_title=None)
    app.layout = html.Div(style=_STYLE["page"], children=[
        html.Div(style={"display": "flex", "justifyContent": "space-between", "alignItems": "baseline"},
                 children=[html.H1("Cluster dashboard", style={"fontSize": "1.5rem"}),
                           html.A("← console", href="/")]),
        html.Div(style=_STYLE["tiles"], children=[
            html.Div(style=_STYLE["tile"], children=[
                html.Div("…", id=tile_id, style=_STYLE["figure"]), html.Div(label, style=_STYLE["label"])])
            for label, tile_id in _TILES
        ]),
        dcc.Graph(id=ids.BROKER_LOAD),
        dcc.Graph(id=ids.HEALTH_HISTORY),
        html.Div(id=ids.REFRESHED, style=_STYLE["label"]),
        dcc.Interval(id=ids.INTERVAL, interval=refresh_ms, n_intervals=0),
    ])

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

    return app
