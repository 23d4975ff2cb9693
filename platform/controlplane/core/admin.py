"""Shared Django-admin building blocks."""

from django.contrib import admin


class ReadOnlyAdminMixin:
    """The Django admin may show these rows but never add, change or delete them: the cluster's metadata changes
    only through the services that take the controller-state lock and bump epochs and the metadata version (and
    audit entries only through `audit.services`)."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class ReadOnlyModelAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    pass
