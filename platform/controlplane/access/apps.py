from django.apps import AppConfig
from django.db.models.signals import post_migrate


class AccessConfig(AppConfig):
    name = "controlplane.access"
    label = "access"
    verbose_name = "Access"

    def ready(self):
        from .roles import sync_roles_after_migrate

        # After every migrate (and every test-database flush): the role groups equal actions.ACTIONS.
        post_migrate.connect(sync_roles_after_migrate, dispatch_uid="controlplane.access.sync_roles")
