from django.contrib import admin

from controlplane.core.admin import ReadOnlyModelAdmin

from .models import Broker, ControllerState


@admin.register(Broker)
class BrokerAdmin(ReadOnlyModelAdmin):
    list_display = ("broker_id", "listeners", "rack", "state", "last_heartbeat", "registration_epoch")
    list_filter = ("state", "rack")
    search_fields = ("listeners", "rack")


@admin.register(ControllerState)
class ControllerStateAdmin(ReadOnlyModelAdmin):
    list_display = ("controller_epoch", "active_controller_id", "metadata_version", "updated_at")
