"""The data source the control plane injected (`create_app` sets it; page callbacks read it). One dashboard
app per process: a second `create_app` replaces the source for both."""

from .data import DashboardDataSource

_source: DashboardDataSource | None = None


def set_source(source: DashboardDataSource) -> None:
    global _source
    _source = source


def source() -> DashboardDataSource:
    assert _source is not None, "create_app() injects the data source first"
    return _source
