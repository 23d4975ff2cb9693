"""Schedule the cluster-alert check every 15 s in django-celery-beat's database scheduler."""

from django.db import migrations

from controlplane.alerts.schedule import CLUSTER_TASK_NAME, ensure_cluster_schedule


def schedule(apps, schema_editor):
    ensure_cluster_schedule(apps.get_model("django_celery_beat", "IntervalSchedule"),
                            apps.get_model("django_celery_beat", "PeriodicTask"))


def unschedule(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name=CLUSTER_TASK_NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("alerts", "0003_cluster_alert"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(schedule, unschedule)]
