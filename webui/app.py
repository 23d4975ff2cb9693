"""The dashboard app: Dash pages (one module per page in `pages/`) inside a shell with the console's navigation
and session bar, refreshed by one dcc.Interval whose ticks update only the pages' figures.

The shell knows nothing about individual pages: the dashboard's sub-navigation comes from Dash's page
registry. The viewer's time zone is read in the browser (a clientside callback) so charts show local time; it is
kept in a cookie (`ids.TIMEZONE_COOKIE`), so a layout built on the server knows it on the next visit.
`use_async=False`: callbacks call the control plane's synchronous ORM through the injected data source.
`eager_loading`: plotly.js and the async components the pages use load with the page under fingerprinted URLs,
so a browser caches them for good instead of fetching and parsing plotly.js again on every visit; `scripts`
keeps that set small and compressed.
"""

from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import dash
import flask
from dash import ALL, Dash, Input, Output, State, dcc, html

from . import ids, scripts
from .actions import DashboardActions
from .components import viewer_zone
from .data import DashboardDataSource
from .source import inject


@dataclass(frozen=True)
class Shell:
    """What the host tells the shell: its navigation (label, URL), where the dashboard lives, session links.

    The signed-in user's name and a CSRF token for the logout form come per request in the WSGI environ
    (`strom.user`, `strom.csrf_token`), set by the host's login middleware."""

    navigation: tuple[tuple[str, str], ...] = ()
    dashboard_url: str = "/dashboard/"
    home_url: str = "/"
    session_links: tuple[tuple[str, str], ...] = ()
    logout_url: str = ""
    stylesheets: tuple[str, ...] = field(default_factory=tuple)


def _header(shell: Shell) -> html.Header:
    environ = flask.request.environ if flask.has_request_context() else {}
    session: list = [html.Span(environ.get("strom.user", ""))]
    session += [html.A(label, href=url) for label, url in shell.session_links]
    if shell.logout_url:
        session.append(html.Form(method="post", action=shell.logout_url, children=[
            dcc.Input(type="hidden", name="csrfmiddlewaretoken", value=environ.get("strom.csrf_token", "")),
            html.Button("Log out", type="submit")]))
    return html.Header(className="topbar", children=[
        html.A("Strom", className="brand", href=shell.home_url),
        html.Nav(className="nav", **{"aria-label": "Main"}, children=[
            html.A(label, href=url, className="current" if url == shell.dashboard_url else "")
            for label, url in shell.navigation]),
        html.Div(className="session", children=session),
    ])


def _page_container() -> html.Div:
    """Dash pages' container, holding the layout of the page the browser is on when the request says which (the
    layout is fetched by the page's own script, whose same-origin Referer is the page's URL): the page then
    draws without the routing callback's round trip, as its Location already matches the browser's. Without a
    Referer naming a page, Dash's empty container, which that callback fills."""
    referrer = urlsplit(flask.request.referrer or "") if flask.has_request_context() else urlsplit("")
    page = next((p for p in dash.page_registry.values() if p["relative_path"] == referrer.path), None)
    if page is None:
        return dash.page_container
    search = f"?{referrer.query}" if referrer.query else ""
    layout = page["layout"](**dict(parse_qsl(referrer.query))) if callable(page["layout"]) else page["layout"]
    return html.Div([
        dcc.Location(id=ids.PAGES_LOCATION, refresh="callback-nav", pathname=referrer.path, search=search),
        html.Div(layout, id=ids.PAGES_CONTENT, disable_n_clicks=True),
        dcc.Store(id=ids.PAGES_STORE, data={"title": page["title"]}),
        html.Div(id=ids.PAGES_DUMMY, disable_n_clicks=True),
    ])


def _layout(shell: Shell, refresh_ms: int) -> html.Div:
    subnav = html.Nav(className="subnav", **{"aria-label": "Dashboard"}, children=[
        dcc.Link(page["name"], href=page["relative_path"], id={"type": "subnav", "index": page["module"]})
        for page in sorted(dash.page_registry.values(), key=lambda p: p["order"])])
    return html.Div([
        _header(shell),
        html.Main(className="content", children=[subnav, _page_container()]),
        dcc.Store(id=ids.TIMEZONE, data=viewer_zone()),
        dcc.Interval(id=ids.INTERVAL, interval=refresh_ms, n_intervals=0),
    ])


def create_app(data_source: DashboardDataSource, actions: DashboardActions, *,
               requests_pathname_prefix: str = "/dashboard/", refresh_ms: int = 10_000,
               shell: Shell | None = None) -> Dash:
    """Build the Dash app over `data_source`, its mutations going through `actions` (see `source`: one app per
    process). Page layouts are built per request, so an action's button reflects the user's role."""
    inject(data_source, actions)
    shell = shell or Shell(dashboard_url=requests_pathname_prefix)
    app = Dash(__name__, use_pages=True, pages_folder=str(Path(__file__).with_name("pages")),
               requests_pathname_prefix=requests_pathname_prefix, routes_pathname_prefix="/", use_async=False,
               title="Strom dashboard", update_title=None, external_stylesheets=list(shell.stylesheets),
               suppress_callback_exceptions=True, eager_loading=True)
    scripts.load_lean(app)
    app.layout = partial(_layout, shell, refresh_ms)
    app.clientside_callback(  # a page change must not re-run every callback that reads the zone: only a new zone
        "function(_, zone) { var here = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';"
        " if (zone === here) { return window.dash_clientside.no_update; }"
        f" document.cookie = '{ids.TIMEZONE_COOKIE}=' + here + '; path=/; max-age=31536000; SameSite=Lax';"
        " return here; }",
        Output(ids.TIMEZONE, "data"), Input(ids.PAGES_LOCATION, "pathname"), State(ids.TIMEZONE, "data"))
    app.clientside_callback(
        "function(path, hrefs) { return hrefs.map(h => h === path ? 'current' : ''); }",
        Output({"type": "subnav", "index": ALL}, "className"), Input(ids.PAGES_LOCATION, "pathname"),
        State({"type": "subnav", "index": ALL}, "href"))
    return app
