"""The Celery app: Redis is broker and result backend; schedules live in the DB (django-celery-beat).

Nothing here touches Spark: a report task starts its Spark job as a subprocess (`controlplane.reports.runner`).
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")

app = Celery("controlplane")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
