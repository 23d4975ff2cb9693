from rest_framework import serializers

from ..models import Report, ReportRun


class ReportRunSerializer(serializers.ModelSerializer):
    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    duration_s = serializers.FloatField(read_only=True, allow_null=True, help_text="seconds, start to finish (now)")
    csv = serializers.SerializerMethodField(help_text="{table: URL of its CSV download} of a succeeded run")

    class Meta:
        model = ReportRun
        exclude = ("celery_task_id", "log_path")

    def get_csv(self, run: ReportRun) -> dict[str, str]:
        request = self.context.get("request")
        if run.status != "succeeded" or request is None:
            return {}
        return {table: request.build_absolute_uri(f"/api/reports/runs/{run.pk}/csv/{table}/") for table in run.rows}


class RunRequestSerializer(serializers.Serializer):
    report = serializers.ChoiceField(choices=Report.choices)
    parameters = serializers.DictField(required=False, default=dict,
                                       help_text='lag: {"period_hours"}; retention: {"horizon_hours", '
                                                 '"history_days", "lag_hours"} (numbers; defaults 1, 24, 7, 6)')


class ScheduleSerializer(serializers.Serializer):
    report = serializers.ChoiceField(choices=Report.choices, read_only=True)
    crontab = serializers.CharField(help_text="minute hour day-of-month month day-of-week, UTC (e.g. '5 * * * *')")
    enabled = serializers.BooleanField()
    last_run_at = serializers.DateTimeField(read_only=True, allow_null=True)
