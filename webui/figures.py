"""Pure builders: typed rows → Plotly figures."""

import plotly.graph_objects as go

from .data import BrokerLoad, HealthPoint

_LAYOUT = dict(margin=dict(l=40, r=20, t=40, b=40), height=320, template="plotly_white",
               legend=dict(orientation="h", y=-0.2))


def broker_load_figure(rows: list[BrokerLoad]) -> go.Figure:
    labels = [f"broker {r.broker_id}" for r in rows]
    figure = go.Figure([
        go.Bar(name="leader partitions", x=labels, y=[r.leaders for r in rows]),
        go.Bar(name="replicas", x=labels, y=[r.replicas for r in rows]),
    ])
    figure.update_layout(title="Partitions per broker", barmode="group", **_LAYOUT)
    return figure


def health_history_figure(points: list[HealthPoint]) -> go.Figure:
    times = [p.taken_at for p in points]
    figure = go.Figure([
        go.Scatter(name="brokers running", x=times, y=[p.brokers_running for p in points], mode="lines+markers"),
        go.Scatter(name="under-replicated", x=times, y=[p.under_replicated_partitions for p in points],
                   mode="lines+markers"),
        go.Scatter(name="offline partitions", x=times, y=[p.offline_partitions for p in points],
                   mode="lines+markers"),
    ])
    figure.update_layout(title="Cluster health over time", **_LAYOUT)
    return figure
