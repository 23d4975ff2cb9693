"""WSGI composition: Django at /, the Dash dashboard at /dashboard/, both behind the same login."""

from http.cookies import SimpleCookie
from importlib import import_module
from types import SimpleNamespace
from urllib.parse import quote

from django.conf import settings
from django.contrib.auth import get_user
from django.core.signals import request_finished, request_started
from django.shortcuts import resolve_url
from werkzeug.middleware.dispatcher import DispatcherMiddleware

from webui.app import create_app

from .data_source import MetadataStoreDataSource

MOUNT_POINT = "/dashboard"


class LoginRequired:
    """WSGI middleware letting through only requests whose Django session belongs to an active user.

    Anonymous page requests are redirected to the login page (with `next`); Dash's XHR endpoints answer
    401. Django's request signals are sent around each request, as Django's own handler does, so that
    database connections are recycled the same way for the dashboard's ORM reads.
    """

    def __init__(self, app):
        self.app = app
        self.session_store = import_module(settings.SESSION_ENGINE).SessionStore

    def is_authenticated(self, environ) -> bool:
        cookies = SimpleCookie(environ.get("HTTP_COOKIE", ""))
        session_key = cookies[settings.SESSION_COOKIE_NAME].value if settings.SESSION_COOKIE_NAME in cookies \
            else None
        if not session_key:
            return False
        return get_user(SimpleNamespace(session=self.session_store(session_key))).is_authenticated

    def __call__(self, environ, start_response):
        request_started.send(sender=self.__class__, environ=environ)
        try:
            if self.is_authenticated(environ):
                return self.app(environ, start_response)
        finally:
            request_finished.send(sender=self.__class__)
        path = MOUNT_POINT + environ.get("PATH_INFO", "")
        if "/_dash-" in path:
            start_response("401 Unauthorized", [("Content-Type", "text/plain")])
            return [b"login required"]
        target = f"{resolve_url(settings.LOGIN_URL)}?next={quote(path)}"
        start_response("302 Found", [("Location", target), ("Content-Length", "0")])
        return [b""]


def with_dashboard(django_app):
    """Django's WSGI app with the dashboard mounted beside it at MOUNT_POINT."""
    dash_app = create_app(MetadataStoreDataSource(), requests_pathname_prefix=MOUNT_POINT + "/")
    return DispatcherMiddleware(django_app, {MOUNT_POINT: LoginRequired(dash_app.server)})
