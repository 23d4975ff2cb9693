from django.core.exceptions import ValidationError
from django.http import FileResponse, Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from controlplane.access import actions
from controlplane.access.rest import ActionViewMixin

from .. import presentation, runner, services
from ..inputs import ParameterError
from ..models import Report, ReportRun, RunStatus
from .serializers import ReportRunSerializer, RunRequestSerializer, ScheduleSerializer

ERROR_NAMES = {status.HTTP_400_BAD_REQUEST: "INVALID_REQUEST", status.HTTP_409_CONFLICT: "CONFLICT",
               status.HTTP_503_SERVICE_UNAVAILABLE: "SERVICE_UNAVAILABLE"}


def _error(message: str, code: int = status.HTTP_400_BAD_REQUEST, **extra) -> Response:
    return Response({"error": ERROR_NAMES[code], "message": message, **extra}, status=code)


@extend_schema_view(
    list=extend_schema(summary="Report runs, newest first (filter: ?report=lag&status=running)"),
    retrieve=extend_schema(summary="One run: status, progress (fraction, step, stages, tasks), rows, error"),
)
class ReportRunViewSet(ActionViewMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Report runs. Starting ("Run now") and cancelling need the operator role and are audited."""

    queryset = ReportRun.objects.select_related("requested_by")
    serializer_class = ReportRunSerializer
    filterset_fields = ("report", "status", "trigger")
    mutations = {"create": actions.RUN_REPORTS, "cancel": actions.CANCEL_REPORT_RUN}
    lookup_value_regex = r"\d+"  # a run's id; anything else does not route (404)

    def audit_target(self) -> str:
        if "pk" in self.kwargs:
            run = ReportRun.objects.filter(pk=self.kwargs["pk"]).first()
            return f"report-run:{run.run_id if run else self.kwargs['pk']}"
        return f"report:{self.request_body().get('report', '')}"

    @extend_schema(summary="Run a report now", request=RunRequestSerializer,
                   responses={202: ReportRunSerializer, 400: OpenApiResponse(description="bad report or parameter"),
                              503: OpenApiResponse(description="not queued: Celery's broker (Redis) is unreachable; "
                                                               "the run is recorded failed (`run`)")})
    def create(self, request):
        body = RunRequestSerializer(data=request.data)
        if not body.is_valid():
            return _error("; ".join(f"{k}: {' '.join(map(str, v))}" for k, v in body.errors.items()))
        try:
            with self.audited_change() as change:
                run = services.start_run(body.validated_data["report"], body.validated_data["parameters"],
                                         user=request.user)
                change.after = {"run_id": run.run_id, "parameters": run.parameters}
        except ParameterError as error:
            return _error(str(error))
        except services.QueueUnavailable as unavailable:
            return _error(f"run {unavailable.run.run_id} {unavailable}", status.HTTP_503_SERVICE_UNAVAILABLE,
                          run=self.get_serializer(unavailable.run).data)
        return Response(self.get_serializer(run).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(summary="Cancel a queued or running run (its Spark job is stopped within seconds)", request=None,
                   responses={202: ReportRunSerializer, 409: OpenApiResponse(description="already finished")})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        run = self.get_object()
        try:
            with self.audited_change() as change:
                change.before = {"status": run.status}
                run = services.cancel_run(run)
                change.after = {"status": run.status, "cancel_requested": True}
        except services.NotCancellable as error:
            return _error(str(error), status.HTTP_409_CONFLICT)
        return Response(self.get_serializer(run).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(summary="A succeeded run's table as CSV", responses={(200, "text/csv"): bytes})
    @action(detail=True, methods=["get"], url_path=r"csv/(?P<table>[a-z_]+)")
    def csv(self, request, pk=None, table=None):
        run = self.get_object()
        if run.status != RunStatus.SUCCEEDED or table not in run.rows:
            raise Http404(f"run {run.run_id} has no table {table!r}")
        path = presentation.layout(runner.reports_dir(), run).csv_path(table, run.report_date, run.run_id)
        if not path.is_file():
            raise Http404(f"the CSV file of {table!r} is gone")
        return FileResponse(path.open("rb"), as_attachment=True, filename=f"{run.run_id}-{table}.csv",
                            content_type="text/csv")


@extend_schema_view(
    list=extend_schema(summary="Both reports' schedules (django-celery-beat crontabs, UTC)"),
    retrieve=extend_schema(summary="One report's schedule"),
    partial_update=extend_schema(summary="Change a report's crontab or enable/disable it"),
)
class ReportScheduleViewSet(ActionViewMixin, viewsets.GenericViewSet):
    """The schedules of the lag and retention reports; changes need the operator role and are audited."""

    serializer_class = ScheduleSerializer
    lookup_field = "report"
    lookup_value_regex = "|".join(Report.values)
    filter_backends = ()
    pagination_class = None
    mutations = {"partial_update": actions.SCHEDULE_REPORTS, "update": actions.SCHEDULE_REPORTS}

    def audit_target(self) -> str:
        return f"report-schedule:{self.kwargs.get('report', '')}"

    def list(self, request):
        return Response(ScheduleSerializer([services.schedule_state(report) for report in Report], many=True).data)

    def retrieve(self, request, report=None):
        return Response(ScheduleSerializer(services.schedule_state(report)).data)

    def update(self, request, report=None, partial=False):
        current = services.schedule_state(report)
        body = ScheduleSerializer(current, data=request.data, partial=partial)
        if not body.is_valid():
            return _error("; ".join(f"{k}: {' '.join(map(str, v))}" for k, v in body.errors.items()))
        wanted = {**current, **body.validated_data}
        try:
            with self.audited_change() as change:
                change.before = {"crontab": current["crontab"], "enabled": current["enabled"]}
                services.set_schedule(report, wanted["crontab"], wanted["enabled"])
                change.after = {key: services.schedule_state(report)[key] for key in ("crontab", "enabled")}
        except ValidationError as error:
            return _error(" ".join(error.messages))
        return Response(ScheduleSerializer(services.schedule_state(report)).data)

    def partial_update(self, request, report=None):
        return self.update(request, report, partial=True)
