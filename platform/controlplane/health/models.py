"""Periodic snapshots of cluster health, recorded by a Celery beat task."""

from django.db import models


class ClusterHealthSnapshot(models.Model):
    """The cluster's health at `taken_at`, derived from the metadata store."""

    taken_at = models.DateTimeField(db_index=True)
    brokers_total = models.IntegerField()
    brokers_running = models.IntegerField()
    topics = models.IntegerField()
    partitions = models.IntegerField()
    offline_partitions = models.IntegerField(help_text="partitions without a leader")
    under_replicated_partitions = models.IntegerField(help_text="partitions whose ISR is smaller than replicas")
    controller_epoch = models.BigIntegerField()

    class Meta:
        ordering = ["-taken_at"]
        get_latest_by = "taken_at"

    def __str__(self) -> str:
        return f"health at {self.taken_at:%Y-%m-%d %H:%M:%S}"
