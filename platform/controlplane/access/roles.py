"""The role groups (viewer, operator, admin) and users' membership of them.

A role is the Django group named like it, holding the permission of every action at or below its level
(`actions.permissions`) plus the Django admin's view permissions of the cluster models (and, for admins, the
user permissions). The groups are defined by code: `sync_roles` makes them exactly that, from the 0002
migration and after every `migrate`; give someone more by giving them a higher role.
"""

from django.apps import apps as global_apps
from django.contrib.auth.management import create_permissions
from django.contrib.auth.models import Group
from django.db import router

from .actions import Role, permissions

__all__ = ("role_of", "set_role", "sync_roles", "sync_roles_after_migrate")

# Django admin model permissions each role gets besides the actions' permissions: (app label, codename).
_VIEW_MODELS = (("cluster", "view_broker"), ("cluster", "view_controllerstate"), ("topics", "view_topic"),
                ("topics", "view_partition"), ("health", "view_clusterhealthsnapshot"),
                ("audit", "view_auditentry"))
_ADMIN_MODELS = (("auth", "view_user"), ("auth", "add_user"), ("auth", "change_user"), ("auth", "delete_user"),
                 ("auth", "view_group"))


def _codenames(role: Role) -> set[tuple[str, str]]:
    wanted = {("access", codename) for codename, (_, lowest) in permissions().items() if lowest <= role}
    wanted.update(_VIEW_MODELS)
    if role >= Role.ADMIN:
        wanted.update(_ADMIN_MODELS)
    return wanted


def sync_roles(apps) -> None:
    """Create the role groups and set their permissions. `apps` is the app registry (or a migration's)."""
    for app_config in apps.get_app_configs():
        if getattr(app_config, "models_module", None) is None:  # a migration's app configs have none
            app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
    group_model = apps.get_model("auth", "Group")
    permission_model = apps.get_model("auth", "Permission")
    for role in Role:
        wanted = _codenames(role)
        found = [p for p in permission_model.objects.filter(codename__in={c for _, c in wanted})
                 .select_related("content_type") if (p.content_type.app_label, p.codename) in wanted]
        group, _ = group_model.objects.get_or_create(name=role.group_name)
        group.permissions.set(found)


def sync_roles_after_migrate(sender, apps=None, using="default", **kwargs) -> None:
    """post_migrate receiver (a flush sends it without `apps`); not for a database without the groups (the
    liveness database)."""
    if sender.label == "access" and router.allow_migrate_model(using, Group):
        sync_roles(apps or global_apps)


def role_of(user) -> Role | None:
    """The highest role `user` holds (superusers: ADMIN), or None."""
    if user.is_superuser:
        return Role.ADMIN
    names = set(user.groups.values_list("name", flat=True))
    return max((role for role in Role if role.group_name in names), default=None)


def set_role(user, role: Role | None) -> None:
    """Make `user` a member of exactly `role`'s group (None: no role). Admins may also log in to the Django
    admin (staff)."""
    user.groups.remove(*Group.objects.filter(name__in=[r.group_name for r in Role]))
    if role is not None:
        user.groups.add(Group.objects.get(name=role.group_name))
    user.is_staff = role == Role.ADMIN or user.is_superuser
    user.save(update_fields=["is_staff"])
