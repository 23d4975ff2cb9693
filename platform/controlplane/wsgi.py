"""WSGI entry point (gunicorn, runserver): Django plus the Dash dashboard at /dashboard/."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")

from controlplane.dashboard.mount import with_dashboard  # noqa: E402  (needs settings configured)

application = with_dashboard(get_wsgi_application())
