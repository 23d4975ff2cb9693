from django.apps import AppConfig
from django.db.models.signals import post_migrate


def migrate_liveness_database(sender, using="default", **kwargs) -> None:
    """post_migrate receiver: migrating the metadata store migrates the liveness database too (when it is a
    file of its own), so `manage.py migrate` sets both up. Not for the test runner, which sets up every
    database it uses itself (and would otherwise migrate the real liveness file while creating the test one)."""
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections

    alias = settings.STROM_LIVENESS_DATABASE
    metadata = connections["default"].settings_dict
    if using != "default" or alias == "default" or metadata["NAME"] == metadata.get("TEST", {}).get("NAME"):
        return
    call_command("migrate", database=alias, interactive=False, verbosity=0)


class LivenessConfig(AppConfig):
    name = "controlplane.liveness"
    label = "liveness"

    def ready(self):
        post_migrate.connect(migrate_liveness_database, sender=self,
                             dispatch_uid="controlplane.liveness.migrate_liveness_database")
