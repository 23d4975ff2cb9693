"""Users in the Django admin, with every change also written to the audit log; API tokens shown read-only (they
are created and revoked on the console's Tokens page)."""

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin

from controlplane.audit.models import Result, Source
from controlplane.audit.services import record
from controlplane.core.admin import ReadOnlyModelAdmin

from .actions import CHANGE_USER
from .models import ApiToken
from .rest import actor_of

User = get_user_model()
admin.site.unregister(User)


@admin.register(User)
class AuditedUserAdmin(UserAdmin):
    """Django's user admin (which needs the admin role's user permissions); additions, changes (groups =
    roles, passwords, flags) and deletions are recorded as `change_user`."""

    def _record(self, request, user, what: str) -> None:
        record(actor_of(request), CHANGE_USER.name, f"user:{user.get_username()}", None, None, Result.OK,
               Source.CONSOLE, detail=f"Django admin: {what}")

    def log_addition(self, request, obj, message):
        self._record(request, obj, "added")
        return super().log_addition(request, obj, message)

    def log_change(self, request, obj, message):
        fields = sorted({field for entry in message if isinstance(entry, dict)
                         for field in entry.get("changed", {}).get("fields", ())})
        self._record(request, obj, f"changed {', '.join(fields) or 'nothing'}")
        return super().log_change(request, obj, message)

    def log_deletions(self, request, queryset):
        for user in queryset:
            self._record(request, user, "deleted")
        return super().log_deletions(request, queryset)


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyModelAdmin):
    list_display = ("name", "user", "token_key", "created", "expiry")
    search_fields = ("name", "token_key", "user__username")
    fields = ("name", "user", "token_key", "created", "expiry")
