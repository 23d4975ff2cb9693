"""`manage.py ensure_admin`: make sure the console's admin user exists.

The password comes from STROM_ADMIN_PASSWORD; without it a password is generated and printed once, when
the user is created. With STROM_ADMIN_PASSWORD set, an existing admin's password is reset to it.
"""

import os
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create the admin user if missing (password: $STROM_ADMIN_PASSWORD or generated and printed once)."

    def add_arguments(self, parser):
        parser.add_argument("--username", default=settings.STROM_ADMIN_USER)

    def handle(self, *args, username: str, **options):
        users = get_user_model().objects
        password = os.environ.get("STROM_ADMIN_PASSWORD")
        user = users.filter(username=username).first()
        if user is None:
            generated = password is None
            password = password or secrets.token_urlsafe(12)
            users.create_superuser(username=username, email="", password=password)
            if generated:
                self.stdout.write(f"Created console user '{username}' with password: {password}\n"
                                  "(shown once; set STROM_ADMIN_PASSWORD to choose it)")
            else:
                self.stdout.write(f"Created console user '{username}' (password from STROM_ADMIN_PASSWORD)")
        elif password is not None and not user.check_password(password):
            user.set_password(password)
            user.save(update_fields=["password"])
            self.stdout.write(f"Reset the password of '{username}' from STROM_ADMIN_PASSWORD")
