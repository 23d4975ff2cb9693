"""Alerting's stored state: where announcements go (`WebhookEndpoint`), the durable outbox of what is to be
sent (`Delivery`, one per endpoint and event, and its `DeliveryAttempt` log), the lag rules operators add on
top of Burrow's (`LagThreshold`) and time-boxed `Silence`s.

Invariants: a `Delivery` keeps the same `webhook_id`, URL, headers and body on every attempt (receivers
deduplicate on the id); `(endpoint, webhook_id)` is unique, so enqueuing an event twice sends it once; a
delivery is `pending` until an attempt ends it (`delivered`, `failed`, `gave_up`, `disabled`), and
`next_attempt_at` of a pending one is when it is due (a claimed attempt pushes it past the attempt's timeout,
so a worker that dies mid-attempt leaves it due again).
"""

import re

from django.core.exceptions import ValidationError
from django.db import models

from monitoring.model import Status
from monitoring.notifier.incidents import NotifyPolicy
from monitoring.notifier.payloads import TemplateError, check_template
from monitoring.notifier.sender import Preset
from monitoring.notifier.sender import WebhookEndpoint as EndpointSpec
from monitoring.notifier.signing import new_secret


def _check_regex(value: str) -> None:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValidationError(f"not a regular expression: {exc}") from None


class WebhookEndpoint(models.Model):
    """An HTTP endpoint announcements are sent to, signed the Standard Webhooks way with `secret`."""

    PRESETS = [(p.value, p.name.title() if p is not Preset.PAGERDUTY else "PagerDuty Events v2") for p in Preset]
    METHODS = [("POST", "POST"), ("PUT", "PUT")]
    THRESHOLDS = [(Status.WARN.name, "WARN and worse"), (Status.ERR.name, "ERR only")]
    MIN_REMINDER_S = 10

    name = models.CharField(max_length=100, unique=True)
    url = models.URLField(max_length=2000)
    preset = models.CharField(max_length=16, choices=PRESETS, default=Preset.STANDARD.value)
    method = models.CharField(max_length=8, choices=METHODS, default="POST")
    headers = models.JSONField(default=dict, blank=True, help_text="extra request headers {name: value}")
    secret = models.CharField(max_length=100, default=new_secret, help_text="Standard Webhooks signing secret")
    template_open = models.TextField(blank=True, help_text="Jinja body for open/update/reminder (Burrow's "
                                                           "variables); empty: Strom's JSON")
    template_close = models.TextField(blank=True, help_text="Jinja body for close; empty: Strom's JSON")
    extras = models.JSONField(default=dict, blank=True, help_text="Burrow's `extras` for templates")
    routing_key = models.CharField(max_length=64, blank=True, help_text="PagerDuty integration key")
    link = models.URLField(max_length=2000, blank=True, help_text="link put in chat messages")
    group_allowlist = models.CharField(max_length=500, blank=True, validators=[_check_regex],
                                       help_text="only groups matching this regular expression")
    group_denylist = models.CharField(max_length=500, blank=True, validators=[_check_regex],
                                      help_text="never groups matching this regular expression")
    notify_threshold = models.CharField(
        max_length=4, choices=THRESHOLDS, default=Status.WARN.name,
        help_text="the group status that opens an incident for this endpoint (Burrow's `threshold`); once told, "
                  "it hears every change until the close")
    reminder_interval_s = models.PositiveIntegerField(
        null=True, blank=True, help_text="re-announce an unchanged open incident this many seconds after the "
                                         "last announcement (empty: on status change only)")
    enabled = models.BooleanField(default=True)
    disabled_reason = models.CharField(max_length=500, blank=True)
    timeout_s = models.FloatField(default=15.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("name",)

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors: dict[str, str] = {}
        for field in ("template_open", "template_close"):
            try:
                check_template(getattr(self, field))
            except TemplateError as exc:
                errors[field] = str(exc)
        if self.preset == Preset.PAGERDUTY and not self.routing_key:
            errors["routing_key"] = "a PagerDuty endpoint needs its integration (routing) key"
        if not isinstance(self.headers, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in self.headers.items()):
            errors["headers"] = "headers must be an object of string names to string values"
        if not isinstance(self.extras, dict):
            errors["extras"] = "extras must be an object"
        if self.reminder_interval_s is not None and self.reminder_interval_s < self.MIN_REMINDER_S:
            errors["reminder_interval_s"] = f"a reminder interval must be at least {self.MIN_REMINDER_S} seconds"
        if not 0.5 <= self.timeout_s <= 60:
            errors["timeout_s"] = "timeout must be between 0.5 and 60 seconds"
        if errors:
            raise ValidationError(errors)

    def notify_policy(self) -> NotifyPolicy:
        """When the lag monitor announces to this endpoint (its subscriber key is `str(pk)`)."""
        return NotifyPolicy(min_status=Status[self.notify_threshold],
                            reminder_interval_ms=None if self.reminder_interval_s is None
                            else self.reminder_interval_s * 1000)

    def spec(self) -> EndpointSpec:
        """What monitoring's sender needs."""
        return EndpointSpec(url=self.url, preset=Preset(self.preset), method=self.method, headers=self.headers,
                            secret=self.secret or None, template_open=self.template_open or None,
                            template_close=self.template_close or None, extras=self.extras,
                            routing_key=self.routing_key or None, link=self.link or None, timeout_s=self.timeout_s)


class Delivery(models.Model):
    """One event for one endpoint: what is sent (fixed at enqueue time) and where it stands."""

    class State(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"        # an answer a retry would not change (3xx, 4xx), or a body that cannot be built
        GAVE_UP = "gave_up"      # the retry schedule ran out
        DISABLED = "disabled"    # the receiver answered 410 Gone: the endpoint was disabled

    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    webhook_id = models.CharField(max_length=100)
    event = models.CharField(max_length=60, help_text="e.g. open, close, update, reminder, test")
    subject = models.CharField(max_length=300, help_text="what the event is about, e.g. the consumer group")
    url = models.URLField(max_length=2000)
    method = models.CharField(max_length=8)
    headers = models.JSONField(default=dict)
    body = models.TextField()
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    last_latency_ms = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at", "-id")
        constraints = [models.UniqueConstraint(fields=("endpoint", "webhook_id"), name="one_delivery_per_event")]
        indexes = [models.Index(fields=("state", "next_attempt_at"))]
        verbose_name_plural = "deliveries"

    def __str__(self) -> str:
        return f"{self.event} {self.subject} → {self.endpoint_id} ({self.state})"


class DeliveryAttempt(models.Model):
    """One HTTP attempt of a delivery: the delivery log's row."""

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField(help_text="1 for the first attempt")
    at = models.DateTimeField()
    outcome = models.CharField(max_length=10)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.FloatField()
    error = models.TextField(blank=True)

    class Meta:
        ordering = ("delivery", "number")
        constraints = [models.UniqueConstraint(fields=("delivery", "number"), name="one_row_per_attempt")]


class LagThreshold(models.Model):
    """Strom's threshold on top of Burrow's rules: partitions of groups and topics matching the globs breach
    when their lag exceeds `max_lag` records or `max_lag_seconds`."""

    group = models.CharField(max_length=300, default="*", help_text="shell glob, e.g. orders-*")
    topic = models.CharField(max_length=300, default="*", help_text="shell glob")
    max_lag = models.PositiveBigIntegerField(null=True, blank=True, help_text="records")
    max_lag_seconds = models.FloatField(null=True, blank=True, help_text="seconds")
    comment = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("group", "topic", "id")

    def clean(self) -> None:
        if self.max_lag is None and self.max_lag_seconds is None:
            raise ValidationError("set max_lag (records), max_lag_seconds, or both")
        if self.max_lag_seconds is not None and self.max_lag_seconds <= 0:
            raise ValidationError({"max_lag_seconds": "must be positive"})

    def __str__(self) -> str:
        return f"{self.group}/{self.topic}"


class Silence(models.Model):
    """No announcements for consumer groups matching `group` (shell glob) between `starts_at` and `ends_at`."""

    group = models.CharField(max_length=300, help_text="shell glob, e.g. batch-*")
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    comment = models.CharField(max_length=300, blank=True)
    created_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("-ends_at", "id")

    def clean(self) -> None:
        if self.starts_at and self.ends_at and self.ends_at <= self.starts_at:
            raise ValidationError({"ends_at": "a silence must end after it starts"})

    def __str__(self) -> str:
        return f"{self.group} until {self.ends_at:%Y-%m-%d %H:%M}"


class ClusterAlert(models.Model):
    """A cluster problem beside consumer lag (`cluster_alerts`): seen since `first_seen_at`, announced at
    `opened_at` once past its kind's grace period (null: not yet), over at `resolved_at` (null: still on).
    A problem that ends before it is announced leaves no row."""

    key = models.CharField(max_length=400, help_text="kind:subject, e.g. broker-down:3")
    kind = models.CharField(max_length=40)
    subject = models.CharField(max_length=300)
    detail = models.CharField(max_length=500, blank=True)
    alert_id = models.CharField(max_length=32, unique=True)
    first_seen_at = models.DateTimeField()
    opened_at = models.DateTimeField(null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-first_seen_at",)
        constraints = [models.UniqueConstraint(fields=("key",), condition=models.Q(resolved_at__isnull=True),
                                               name="one_live_alert_per_key")]

    def __str__(self) -> str:
        return self.key
