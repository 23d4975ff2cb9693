"""WSGI composition: Django at /, the Dash dashboard at /dashboard/, both behind the same login and role check."""

from http.cookies import SimpleCookie
from importlib import import_module
from types import SimpleNamespace
from urllib.parse import quote

from django.conf import settings
from django.contrib.auth import get_user
from django.core.signals import request_finished, request_started
from django.shortcuts import resolve_url
from werkzeug.middleware.dispatcher import DispatcherMiddleware

from controlplane.access.actions import VIEW_CLUSTER
from controlplane.access.checks import refusal
from webui.app import create_app

from .actions import USER_KEY, ControlPlaneActions
from .data_source import MetadataStoreDataSource

MOUNT_POINT = "/dashboard"
SECURITY_HEADERS = [("X-Frame-Options", "DENY"), ("X-Content-Type-Options", "nosniff"),
                    ("Referrer-Policy", "same-origin"), ("Cross-Origin-Opener-Policy", "same-origin")]
"""What Django's middleware adds to its own answers (settings), for the dashboard's, which bypass it."""


class LoginRequired:
    """WSGI middleware letting through only requests whose Django session belongs to an active user with a role;
    the user is left in the environ (USER_KEY) for `actions.ControlPlaneActions`.

    Anonymous page requests are redirected to the login page (with `next`); Dash's XHR endpoints answer
    401; users without a role get 403. Django's request signals are sent around each request, as Django's own
    handler does, so that database connections are recycled the same way for the dashboard's ORM reads.
    """

    def __init__(self, app):
        self.app = app
        self.session_store = import_module(settings.SESSION_ENGINE).SessionStore

    def user(self, environ):
        """The session's user (AnonymousUser without a valid session)."""
        cookies = SimpleCookie(environ.get("HTTP_COOKIE", ""))
        session_key = cookies[settings.SESSION_COOKIE_NAME].value if settings.SESSION_COOKIE_NAME in cookies \
            else ""
        return get_user(SimpleNamespace(session=self.session_store(session_key or None)))

    def __call__(self, environ, start_response):
        def start_with_headers(status, headers, exc_info=None):
            return start_response(status, headers + SECURITY_HEADERS, exc_info)

        request_started.send(sender=self.__class__, environ=environ)
        try:
            user = self.user(environ)
            if user.is_authenticated:
                if reason := refusal(user, VIEW_CLUSTER):
                    start_with_headers("403 Forbidden", [("Content-Type", "text/plain; charset=utf-8")])
                    return [reason.encode()]
                environ[USER_KEY] = user
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


def with_dashboard(django_app):
    """Django's WSGI app with the dashboard mounted beside it at MOUNT_POINT."""
    dash_app = create_app(MetadataStoreDataSource(), ControlPlaneActions(), requests_pathname_prefix=MOUNT_POINT + "/")
    return DispatcherMiddleware(django_app, {MOUNT_POINT: LoginRequired(dash_app.server)})
