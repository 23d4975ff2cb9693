from django.apps import AppConfig
from django.db.models.signals import post_migrate


def install_changelog_triggers(sender, using="default", **kwargs) -> None:
    """post_migrate receiver: (re-)create the metadata log's triggers (a migration that rebuilds a SQLite
    table drops its triggers)."""
    from django.db import connections, router

    from .changelog import install_triggers
    from .models import Broker

    if router.allow_migrate_model(using, Broker):  # not in the liveness database
        install_triggers(connections[using])


class ClusterConfig(AppConfig):
    name = "controlplane.cluster"
    label = "cluster"

    def ready(self):
        post_migrate.connect(install_changelog_triggers, sender=self,
                             dispatch_uid="controlplane.cluster.changelog_triggers")
