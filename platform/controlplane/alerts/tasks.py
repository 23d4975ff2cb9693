"""Celery tasks of the alerts app: one attempt of a delivery, and the beat sweep re-queuing due ones
(see `outbox`; the schedule is the 0002 data migration's)."""

from celery import shared_task

from . import cluster_alerts, outbox


@shared_task(name="controlplane.alerts.send_delivery", ignore_result=True)
def send_delivery(delivery_id: int) -> None:
    outbox.send(delivery_id)


@shared_task(name="controlplane.alerts.dispatch_due_deliveries", ignore_result=True)
def dispatch_due_deliveries() -> int:
    """Queue every due pending delivery (those whose Celery message was lost); returns how many."""
    due = outbox.due_ids()
    outbox.wake(due)
    return len(due)


@shared_task(name="controlplane.alerts.check_cluster_alerts", ignore_result=True)
def check_cluster_alerts() -> int:
    """Announce cluster problems that opened or ended (broker down, offline and under-replicated partitions)."""
    return len(cluster_alerts.check())
