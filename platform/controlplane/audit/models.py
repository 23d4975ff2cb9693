from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models


class Source(models.TextChoices):
    """Where a change came from."""

    CONSOLE = "console", "Console"
    REST = "rest", "REST API"
    CLI = "cli", "Command line"
    DASH = "dash", "Dashboard"
    KAFKA = "kafka", "Kafka Admin API"


class Result(models.TextChoices):
    OK = "ok", "Done"
    FAILED = "failed", "Failed"
    REFUSED = "refused", "Refused"


class AuditEntry(models.Model):
    """One change to the cluster, or one attempt that failed or was refused. Never edited once written; removed
    only by the retention task (STROM_AUDIT_RETENTION_DAYS).

    `actor` is the user name, or for a Kafka client `<client id>@<address>`; `user` is kept (set to null when
    the user is deleted; `actor` keeps the name). `target` is `<kind>:<name>` (e.g. `group:billing`,
    `topic:orders`, `partitions:orders-0,orders-1`). `before` and `after` are the state the change saw and
    left, as JSON (null where it has none, e.g. before a creation).
    """

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.CharField(max_length=300, db_index=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+")
    address = models.CharField(max_length=64, blank=True, help_text="the client's network address")
    client_id = models.CharField(max_length=255, blank=True,
                                 help_text="the Kafka client id, or the name of the API token used")
    source = models.CharField(max_length=16, choices=Source.choices)
    action = models.CharField(max_length=64, db_index=True, help_text="an action of controlplane.access.actions")
    target = models.CharField(max_length=500, blank=True)
    before = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    after = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    result = models.CharField(max_length=16, choices=Result.choices)
    detail = models.TextField(blank=True, help_text="why it failed or was refused; how it was made")

    class Meta:
        ordering = ("-at", "-id")
        verbose_name = "audit entry"
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor} {self.action} {self.target} {self.result}"
