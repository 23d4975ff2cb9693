from django.contrib import admin

from .models import Delivery, LagThreshold, Silence, WebhookEndpoint


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    list_display = ("name", "url", "preset", "enabled")
    exclude = ("secret",)


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ("created_at", "endpoint", "event", "subject", "state", "attempts", "last_status_code")
    list_filter = ("state", "event")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


admin.site.register(LagThreshold)
admin.site.register(Silence)
