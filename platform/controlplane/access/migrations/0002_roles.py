"""The role groups viewer, operator and admin with their permissions (controlplane.access.roles)."""

from django.db import migrations

from controlplane.access.actions import Role
from controlplane.access.roles import sync_roles


def create_roles(apps, schema_editor):
    sync_roles(apps)


def delete_roles(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=[role.group_name for role in Role]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("access", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_roles, delete_roles)]
