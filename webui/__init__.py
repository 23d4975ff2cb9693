"""Strom's Plotly Dash dashboard.

It never touches a database or a broker: the control plane injects a `DashboardDataSource` (webui.data)
when it mounts the app, so the dashboard reads everything through the control plane.
"""
