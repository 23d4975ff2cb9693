"""WSGI entry point (gunicorn, runserver): Django plus the Dash dashboard at /dashboard/."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
django_application = get_wsgi_application()  # sets Django up; the dashboard's imports need the app registry

from controlplane.dashboard.mount import with_dashboard  # noqa: E402

application = with_dashboard(django_application)
