from django.db import models
from knox.models import AbstractAuthToken

from .actions import permissions


class ActionPermissions(models.Model):
    """No table: carries the permissions `access.<codename>` of the declared actions (`actions.permissions`)."""

    class Meta:
        managed = False
        default_permissions = ()
        permissions = [(codename, name) for codename, (name, _) in sorted(permissions().items())]


class ApiToken(AbstractAuthToken):
    """A named API token (django-rest-knox: only a SHA-512 digest and the first characters are stored; the
    token itself is shown once, at creation). A user may hold several; `expiry` null means it never expires.
    Revoking deletes it."""

    name = models.CharField(max_length=100)

    class Meta:
        ordering = ("user", "-created")
        constraints = [models.UniqueConstraint(fields=("user", "name"), name="access_apitoken_unique_user_name")]

    def __str__(self) -> str:
        return f"{self.name} ({self.user})"
