"""Report runs."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='ReportRun',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('report', models.CharField(choices=[('lag', 'Lag report'), ('retention', 'Retention report')], max_length=20)),
                ('run_id', models.CharField(help_text="the job's --run-id (names its output dirs)", max_length=100, unique=True)),
                ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], default='queued', max_length=10)),
                ('trigger', models.CharField(choices=[('manual', 'Manual'), ('schedule', 'Schedule')], default='manual', max_length=10)),
                ('parameters', models.JSONField(blank=True, default=dict, help_text='job options, e.g. {"period_hours": 24}')),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('celery_task_id', models.CharField(blank=True, max_length=64)),
                ('cancel_requested', models.BooleanField(default=False, help_text='the runner stops the job at its next check')),
                ('step', models.CharField(blank=True, max_length=50)),
                ('step_index', models.IntegerField(default=0)),
                ('steps', models.IntegerField(default=0)),
                ('stages_done', models.IntegerField(default=0)),
                ('stages_total', models.IntegerField(default=0)),
                ('tasks_done', models.IntegerField(default=0)),
                ('tasks_total', models.IntegerField(default=0)),
                ('fraction', models.FloatField(default=0.0)),
                ('master', models.CharField(blank=True, help_text='the Spark master it ran on', max_length=200)),
                ('report_date', models.DateField(blank=True, help_text='partition of its outputs', null=True)),
                ('rows', models.JSONField(blank=True, default=dict, help_text='{table: rows written}')),
                ('warnings', models.JSONField(blank=True, default=list)),
                ('error', models.TextField(blank=True)),
                ('log_path', models.CharField(blank=True, help_text="the job's stderr (Spark's log)", max_length=500)),
                ('requested_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['-created_at', '-pk'],
                'indexes': [models.Index(fields=['report', '-created_at'], name='reports_run_report_created')],
            },
        ),
    ]
