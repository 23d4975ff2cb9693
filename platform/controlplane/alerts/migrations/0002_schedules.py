"""Schedule the outbox sweep (due webhook deliveries, every 5 s) and the cluster-alert check (every 15 s) in
django-celery-beat's database scheduler."""

from django.db import migrations

from controlplane.alerts.schedule import CLUSTER_TASK_NAME, TASK_NAME, ensure_cluster_schedule, ensure_schedule


def schedule(apps, schema_editor):
    models = (apps.get_model("django_celery_beat", "IntervalSchedule"),
              apps.get_model("django_celery_beat", "PeriodicTask"))
    ensure_schedule(*models)
    ensure_cluster_schedule(*models)


def unschedule(apps, schema_editor):
    periodic_task = apps.get_model("django_celery_beat", "PeriodicTask")
    periodic_task.objects.filter(name__in=(TASK_NAME, CLUSTER_TASK_NAME)).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("alerts", "0001_initial"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(schedule, unschedule)]
