"""Schedule the outbox sweep (due webhook deliveries) every 5 s in django-celery-beat's database scheduler."""

from django.db import migrations

from controlplane.alerts.schedule import TASK_NAME, ensure_schedule


def schedule(apps, schema_editor):
    ensure_schedule(apps.get_model("django_celery_beat", "IntervalSchedule"),
                    apps.get_model("django_celery_beat", "PeriodicTask"))


def unschedule(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name=TASK_NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("alerts", "0001_initial"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(schedule, unschedule)]
