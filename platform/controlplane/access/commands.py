"""Management commands' side of `checks`: `--as USER` (default: the local superuser, STROM_ADMIN_USER) and the
audited change, so a command's mutation is checked and recorded like the console's:

    class Command(ActorCommand):
        def handle(self, *args, **options):
            with self.audited(actions.RESET_OFFSETS, f"group:{group_id}") as change:
                ...

A refusal ends the command with a non-zero exit and one line naming the role it needs.
"""

import contextlib
import getpass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from controlplane.audit.models import Source
from controlplane.audit.services import Actor

from . import checks
from .actions import Action

__all__ = ("ActorCommand",)


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name and no passwd entry (some containers)
        return "unknown OS user"


class ActorCommand(BaseCommand):
    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.add_argument("--as", dest="as_user", metavar="USER", default=None,
                            help="The Strom user this command acts as, checked and recorded in the audit log "
                                 f"(default: the local superuser, STROM_ADMIN_USER={settings.STROM_ADMIN_USER}).")
        return parser

    def execute(self, *args, **options):
        self._as_user = options.get("as_user") or settings.STROM_ADMIN_USER
        return super().execute(*args, **options)

    @property
    def actor(self) -> Actor:
        user = get_user_model().objects.filter(username=self._as_user).first()
        if user is None:
            raise CommandError(f"No user '{self._as_user}' (create the local superuser with `manage.py "
                               "ensure_admin`, or pass --as USER)")
        return Actor(user, "", f"manage.py ({_os_user()})")

    @contextlib.contextmanager
    def audited(self, action: Action, target: str):
        """Check `action` for the --as user and record the change made in the block."""
        try:
            with checks.audited(self.actor, Source.CLI, action, target) as change:
                yield change
        except checks.ActionRefused as refused:
            raise CommandError(f"Refused: {refused.reason}") from None

    def authorize(self, action: Action, target: str) -> None:
        """Only the check (e.g. for a dry run, which changes nothing and is not recorded when allowed)."""
        try:
            checks.authorize(self.actor, Source.CLI, action, target)
        except checks.ActionRefused as refused:
            raise CommandError(f"Refused: {refused.reason}") from None
