"""WSGI composition: Django at /, the Dash dashboard at /dashboard/, both behind the same login and role check.

The dashboard's code and style (`webui.scripts.is_code`: the Dash, React and plotly.js bundles and its CSS, the
same for everyone, like Django's /static/) are served without a login, so that every console page, the login
page included, can fetch them ahead (`dashboard_bundles`: prefetch links, and the service worker that keeps
them compiled in CacheStorage): the dashboard's first open then finds them in the browser."""

from http.cookies import SimpleCookie
from importlib import import_module
from types import SimpleNamespace
from urllib.parse import quote

from django.conf import settings
from django.contrib.auth import get_user
from django.core.handlers.wsgi import WSGIRequest
from django.core.signals import request_finished, request_started
from django.middleware.csrf import get_token
from django.shortcuts import resolve_url
from django.templatetags.static import static
from django.urls import reverse
from werkzeug.middleware.dispatcher import DispatcherMiddleware

from controlplane.access.actions import VIEW_CLUSTER
from controlplane.access.checks import refusal
from controlplane.console.navigation import DASHBOARD_URL, SECTIONS
from webui.app import Shell, create_app
from webui.scripts import SERVICE_WORKER, bundle_urls, is_code

from .actions import USER_KEY, ControlPlaneActions
from .data_source import MetadataStoreDataSource

MOUNT_POINT = "/dashboard"
SECURITY_HEADERS = [("X-Frame-Options", "DENY"), ("X-Content-Type-Options", "nosniff"),
                    ("Referrer-Policy", "same-origin"), ("Cross-Origin-Opener-Policy", "same-origin")]
"""What Django's middleware adds to its own answers (settings), for the dashboard's, which bypass it."""


class LoginRequired:
    """WSGI middleware letting through only requests whose Django session belongs to an active user with a role,
    and GET or HEAD requests of the dashboard's code and style (`is_code`), which need no session.

    Anonymous page requests are redirected to the login page (with `next`); Dash's XHR endpoints answer
    401; users without a role get 403. The user goes to `actions.ControlPlaneActions` in the environ
    (USER_KEY). Django's request signals are sent around each request, as Django's own handler does, so that
    database connections are recycled the same way for the dashboard's ORM reads. The user's name and a CSRF
    token (for the shell's logout form) go to the dashboard in the environ (`strom.user`, `strom.csrf_token`).
    """

    def __init__(self, app):
        self.app = app
        self.session_store = import_module(settings.SESSION_ENGINE).SessionStore

    def authenticated_user(self, environ):
        """The active user of the request's session, or None."""
        cookies = SimpleCookie(environ.get("HTTP_COOKIE", ""))
        session_key = cookies[settings.SESSION_COOKIE_NAME].value if settings.SESSION_COOKIE_NAME in cookies \
            else None
        if not session_key:
            return None
        user = get_user(SimpleNamespace(session=self.session_store(session_key)))
        return user if user.is_authenticated else None

    def __call__(self, environ, start_response):
        def start_with_headers(status, headers, exc_info=None):
            return start_response(status, headers + SECURITY_HEADERS, exc_info)

        if environ.get("REQUEST_METHOD") in ("GET", "HEAD") and is_code(environ.get("PATH_INFO", "")):
            return self.app(environ, start_with_headers)
        request_started.send(sender=self.__class__, environ=environ)
        try:
            user = self.authenticated_user(environ)
            if user is not None:
                if reason := refusal(user, VIEW_CLUSTER):
                    start_with_headers("403 Forbidden", [("Content-Type", "text/plain; charset=utf-8")])
                    return [reason.encode()]
                environ[USER_KEY] = user
                environ["strom.user"] = user.get_username()
                if "/_dash-" not in environ.get("PATH_INFO", "") and "/assets/" not in environ.get("PATH_INFO", ""):
                    environ["strom.csrf_token"] = get_token(WSGIRequest(environ))
                return self.app(environ, start_with_headers)
        finally:
            request_finished.send(sender=self.__class__)
        path = MOUNT_POINT + environ.get("PATH_INFO", "")
        if "/_dash-" in path:
            start_with_headers("401 Unauthorized", [("Content-Type", "text/plain")])
            return [b"login required"]
        target = f"{resolve_url(settings.LOGIN_URL)}?next={quote(path)}"
        start_with_headers("302 Found", [("Location", target), ("Content-Length", "0")])
        return [b""]


def console_shell() -> Shell:
    """The console's navigation, session links and stylesheet, for the dashboard's shell."""
    return Shell(navigation=(*((label, reverse(name)) for label, name in SECTIONS), ("Dashboard", DASHBOARD_URL)),
                 dashboard_url=DASHBOARD_URL, home_url=reverse("console:overview"),
                 session_links=(("Tokens", reverse("console:tokens")), ("Admin", reverse("admin:index")),
                                ("API", reverse("api:docs"))),
                 logout_url=reverse("logout"), stylesheets=(static("console/console.css"),))


_bundles: tuple[str, ...] = ()
"""The mounted dashboard's immutable scripts and stylesheets (`webui.scripts.bundle_urls`), set by `with_dashboard`."""


def dashboard_bundles(request) -> dict:
    """Template context processor: `dashboard_bundles`, the URLs the console's pages prefetch, and the dashboard's
    service worker with its scope, which they register (none in a process that has not mounted the dashboard)."""
    if not _bundles:
        return {}
    return {"dashboard_bundles": _bundles, "dashboard_service_worker": MOUNT_POINT + SERVICE_WORKER,
            "dashboard_scope": MOUNT_POINT + "/"}


def with_dashboard(django_app):
    """Django's WSGI app with the dashboard mounted beside it at MOUNT_POINT."""
    global _bundles
    dash_app = create_app(MetadataStoreDataSource(), ControlPlaneActions(), requests_pathname_prefix=MOUNT_POINT + "/",
                          refresh_ms=settings.STROM_DASHBOARD_REFRESH_MS, shell=console_shell())
    _bundles = bundle_urls(dash_app)
    return DispatcherMiddleware(django_app, {MOUNT_POINT: LoginRequired(dash_app.server)})
