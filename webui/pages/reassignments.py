"""Reassignments: live progress of partition moves (bytes copied to the new replicas)."""

import dash
from dash import Input, Output, callback, html

from webui import ids
from webui.components import human_bytes
from webui.source import source

dash.register_page(__name__, path="/reassignments", name="Reassignments", title="Reassignments · Strom dashboard",
                   order=5)
pid = ids.page("reassignments")
UNSUPPORTED = ("This Strom cannot reassign partitions yet (Kafka's AlterPartitionReassignments arrives with the "
               "reassignment work), so nothing is moving.")
NONE_RUNNING = "No partition reassignment is in progress."


def layout(**_kwargs):
    return html.Div([
        html.H1("Reassignments"),
        html.Div(id=pid("list"), className="card", children=html.P("…", className="empty")),
    ])


@callback(Output(pid("list"), "children"), Input(ids.INTERVAL, "n_intervals"))
def refresh(_n):
    moves = source().reassignments()
    if moves is None:
        return [html.H2("Partition reassignments"), html.P(UNSUPPORTED, className="empty")]
    if not moves:
        return [html.H2("Partition reassignments"), html.P(NONE_RUNNING, className="empty")]
    rows = []
    for move in moves:
        share = move.moved_bytes / move.total_bytes if move.total_bytes else 1.0
        rows.append(html.Tr([
            html.Td(f"{move.topic}-{move.partition}"),
            html.Td(f"+{move.adding} −{move.removing}"),
            html.Td(html.Div(className="progress", children=html.Div(style={"width": f"{share:.0%}"}))),
            html.Td(f"{human_bytes(move.moved_bytes)} of {human_bytes(move.total_bytes)} ({share:.0%})"),
        ]))
    return [html.H2(f"Partition reassignments ({len(moves)} in progress)"),
            html.Table([html.Thead(html.Tr([html.Th(c) for c in ("partition", "replicas", "progress", "copied")])),
                        html.Tbody(rows)])]
