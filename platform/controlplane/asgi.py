"""ASGI entry point for Django alone (the dashboard is served by the WSGI app)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")

application = get_asgi_application()
