"""The latest size of each replica, for the retention report."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('metrics', '0002_schedule_prune'),
    ]

    operations = [
        migrations.CreateModel(
            name='PartitionReplicaSize',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('broker_id', models.IntegerField()),
                ('topic', models.CharField(max_length=249)),
                ('partition', models.IntegerField()),
                ('log_dir', models.CharField(max_length=1024)),
                ('size_bytes', models.BigIntegerField()),
                ('log_start_offset', models.BigIntegerField()),
                ('log_end_offset', models.BigIntegerField()),
                ('leader', models.BooleanField(help_text='the broker led the partition when it sampled')),
                ('sampled_at', models.DateTimeField()),
            ],
            options={
                'ordering': ['topic', 'partition', 'broker_id'],
                'constraints': [models.UniqueConstraint(fields=('broker_id', 'topic', 'partition'), name='metrics_partition_size_unique')],
            },
        ),
    ]
