"""Read-only: alerting is changed through the console and REST, where each change is checked and audited."""

from django.contrib import admin

from controlplane.core.admin import ReadOnlyModelAdmin

from .models import ClusterAlert, Delivery, LagThreshold, Silence, WebhookEndpoint


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ReadOnlyModelAdmin):
    list_display = ("name", "url", "preset", "enabled")
    exclude = ("secret",)


@admin.register(Delivery)
class DeliveryAdmin(ReadOnlyModelAdmin):
    list_display = ("created_at", "endpoint", "event", "subject", "state", "attempts", "last_status_code")
    list_filter = ("state", "event")


admin.site.register(LagThreshold, ReadOnlyModelAdmin)
admin.site.register(Silence, ReadOnlyModelAdmin)
admin.site.register(ClusterAlert, ReadOnlyModelAdmin)
