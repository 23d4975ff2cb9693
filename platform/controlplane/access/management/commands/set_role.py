"""`manage.py set_role USER ROLE [--create] [--as ADMIN]`: give a user the viewer, operator or admin role (or
`none`). With --create, a missing user is created; its password comes from STROM_USER_PASSWORD, or is generated
and printed once. Checked for, and recorded as, the --as user (admin role; default the local superuser)."""

import os
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from controlplane.access import actions
from controlplane.access.actions import Role
from controlplane.access.commands import ActorCommand
from controlplane.access.roles import role_of, set_role

_ROLES = {role.group_name: role for role in Role} | {"none": None}


class Command(ActorCommand):
    help = "Give a user a role: viewer, operator, admin or none."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("role", choices=sorted(_ROLES))
        parser.add_argument("--create", action="store_true", help="Create the user if missing.")

    def handle(self, *args, username: str, role: str, create: bool, **options):
        users = get_user_model().objects
        with self.audited(actions.SET_ROLE, f"user:{username}") as change:
            user = users.filter(username=username).first()
            password = None
            if user is None:
                if not create:
                    raise CommandError(f"No user '{username}' (add --create to create it)")
                password = os.environ.get("STROM_USER_PASSWORD") or secrets.token_urlsafe(12)
                user = users.create_user(username, password=password)
                generated = "STROM_USER_PASSWORD" not in os.environ
            before = role_of(user)
            change.before = {"role": before.group_name if before else None}
            set_role(user, _ROLES[role])
            change.after = {"role": role if role != "none" else None}
        if password is not None:
            how = f"with password: {password} (shown once)" if generated else "(password from STROM_USER_PASSWORD)"
            self.stdout.write(f"Created user '{username}' {how}")
        self.stdout.write(f"'{username}' now has the role {role}.")
