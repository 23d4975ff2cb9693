"""What the control plane injected (`create_app` sets both; page layouts and callbacks read them): the data
source, and the actions the current user may take. One dashboard app per process: a second `create_app`
replaces them for both."""

from .actions import DashboardActions
from .data import DashboardDataSource

_source: DashboardDataSource | None = None
_actions: DashboardActions | None = None


def inject(source: DashboardDataSource, actions: DashboardActions) -> None:
    global _source, _actions
    _source, _actions = source, actions


def source() -> DashboardDataSource:
    assert _source is not None, "create_app() injects the data source first"
    return _source


def actions() -> DashboardActions:
    assert _actions is not None, "create_app() injects the actions first"
    return _actions
