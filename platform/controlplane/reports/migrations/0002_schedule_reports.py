"""Schedule the lag report hourly and the retention report daily in django-celery-beat's database scheduler."""

from django.db import migrations

from controlplane.reports.schedule import DEFAULT_CRONTABS, TASK_NAMES, set_schedule


def schedule(apps, schema_editor):
    for report, expression in DEFAULT_CRONTABS.items():
        set_schedule(apps.get_model("django_celery_beat", "CrontabSchedule"),
                     apps.get_model("django_celery_beat", "PeriodicTask"), report, expression, enabled=True)


def unschedule(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name__in=TASK_NAMES.values()).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("reports", "0001_initial"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(schedule, unschedule)]
