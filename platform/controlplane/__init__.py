"""Strom's control plane: the Django project that is the cluster's metadata store.

Importing the package loads the Celery app so that `@shared_task` binds to it (Celery's Django pattern).
"""

from .celery import app as celery_app

__all__ = ("celery_app",)
