"""Permissions of the report actions (run and cancel: run_reports; schedule_reports)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('access', '0002_roles'),
    ]

    operations = [
        migrations.AlterModelOptions(
            name='actionpermissions',
            options={'default_permissions': (), 'managed': False, 'permissions': [('alter_configs', 'Editing topic configs'), ('create_partitions', 'Adding partitions to topics'), ('create_topics', 'Creating topics'), ('delete_consumer_group', 'Deleting consumer groups'), ('delete_topics', 'Deleting topics'), ('elect_preferred_leaders', 'Preferred leader election'), ('elect_unclean_leaders', 'Unclean leader election'), ('manage_alerts', 'Managing alerts'), ('manage_reassignments', 'Starting and cancelling partition reassignments'), ('manage_users', "Managing users, their roles and anyone's API tokens"), ('produce_test_messages', 'Producing test messages'), ('read_messages', 'Reading message contents'), ('reset_offsets', 'Resetting consumer-group offsets'), ('run_reports', 'Running and cancelling reports'), ('schedule_reports', 'Changing report schedules'), ('use_api_tokens', 'Creating and revoking your own API tokens'), ('view_cluster', "Reading the cluster's metadata, groups, lag and audit log")]},
        ),
    ]
