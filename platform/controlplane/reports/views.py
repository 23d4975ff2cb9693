"""The console's Reports section: the reports with their schedules and "Run now", the run history, one run's
progress and result (tables and Plotly charts read from its Parquet output), CSV download. Reading needs the
viewer role; running, cancelling and schedule changes are `ActionView`s (operator), audited."""

from pathlib import Path

import plotly
from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import FileResponse, Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views import View

from controlplane.access import actions
from controlplane.access.console import ActionView, ViewerRequiredMixin

from . import presentation, runner, schedule, services
from .inputs import PARAMETERS, ParameterError
from .models import Report, ReportRun, RunStatus

RECENT_RUNS = 50
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


class RunNowForm(forms.Form):
    """The report's parameters (`inputs.PARAMETERS`), each defaulting to its job default."""

    def __init__(self, report: str, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name, parameter in PARAMETERS[report].items():
            self.fields[name] = forms.FloatField(label=name.replace("_", " "), initial=parameter.default,
                                                 min_value=parameter.minimum, help_text=parameter.help)


class ScheduleForm(forms.Form):
    crontab = forms.CharField(max_length=100, help_text="minute hour day-of-month month day-of-week (UTC)")
    enabled = forms.BooleanField(required=False)

    def clean_crontab(self):
        return " ".join(schedule.check_crontab(self.cleaned_data["crontab"]))


def progress_state(run: ReportRun) -> dict:
    return {"run_id": run.run_id, "status": run.status, "final": run.is_final, "fraction": run.fraction,
            "step": run.step, "step_index": run.step_index, "steps": run.steps, "stages_done": run.stages_done,
            "stages_total": run.stages_total, "tasks_done": run.tasks_done, "tasks_total": run.tasks_total,
            "error": run.error}


class ReportListView(ViewerRequiredMixin, View):
    def get(self, request):
        reports = [{"report": report, "label": report.label, "schedule": services.schedule_state(report),
                    "run_form": RunNowForm(report, auto_id=f"id_{report}_%s"),
                    "schedule_form": ScheduleForm(auto_id=f"id_{report}_schedule_%s",
                                                  initial=services.schedule_state(report))}
                   for report in Report]
        runs = ReportRun.objects.select_related("requested_by")[:RECENT_RUNS]
        return render(request, "reports/reports.html", {"reports": reports, "runs": runs,
                                                        "spark_master": settings.STROM_SPARK_MASTER})


class RunDetailView(ViewerRequiredMixin, View):
    def get(self, request, pk: int):
        run = get_object_or_404(ReportRun, pk=pk)
        context = {"run": run, "progress": progress_state(run)}
        if run.status == RunStatus.SUCCEEDED:
            try:
                tables = presentation.read_tables(runner.reports_dir(), run)
            except OSError as error:
                context["output_error"] = f"The run's output cannot be read: {error}"
            else:
                context["tables"] = presentation.previews(tables)
                context["charts"] = presentation.figures(run.report, tables)
        return render(request, "reports/run.html", context)


class RunProgressView(ViewerRequiredMixin, View):
    """The progress bar's data (JSON), polled by the run and list pages."""

    def get(self, request, pk: int):
        return JsonResponse(progress_state(get_object_or_404(ReportRun, pk=pk)))


class RunCsvView(ViewerRequiredMixin, View):
    def get(self, request, pk: int, table: str):
        run = get_object_or_404(ReportRun, pk=pk, status=RunStatus.SUCCEEDED)
        if table not in run.rows:
            raise Http404(f"run {run.run_id} has no table {table!r}")
        path = presentation.layout(runner.reports_dir(), run).csv_path(table, run.report_date, run.run_id)
        if not path.is_file():
            raise Http404(f"the CSV file of {table!r} is gone: {path}")
        return FileResponse(path.open("rb"), as_attachment=True, filename=f"{run.run_id}-{table}.csv",
                            content_type="text/csv")


class PlotlyScriptView(ViewerRequiredMixin, View):
    """plotly.js from the installed plotly package (the console has no internet access to a CDN)."""

    def get(self, request):
        response = FileResponse(PLOTLY_JS.open("rb"), content_type="text/javascript")
        response["Cache-Control"] = "private, max-age=86400"
        return response


class RunNowView(ActionView):
    action = actions.RUN_REPORTS

    def audit_target(self) -> str:
        return f"report:{self.kwargs['report']}"

    def perform(self, request, report: str):
        if report not in Report.values:
            raise Http404(f"no report {report!r}")
        form = RunNowForm(report, request.POST)
        if not form.is_valid():
            messages.error(request, "Not started: " + "; ".join(
                f"{name}: {' '.join(errors)}" for name, errors in form.errors.items()))
            return redirect("console:reports")
        try:
            with self.audited_change() as change:
                run = services.start_run(report, form.cleaned_data, user=request.user)
                change.after = {"run_id": run.run_id, "parameters": run.parameters}
        except ParameterError as error:
            messages.error(request, f"Not started: {error}")
            return redirect("console:reports")
        except services.QueueUnavailable as unavailable:
            messages.error(request, f"Run {unavailable.run.run_id} {unavailable}")
            return redirect("console:report-run", pk=unavailable.run.pk)
        messages.success(request, f"Queued {run.get_report_display().lower()} run {run.run_id}.")
        return redirect("console:report-run", pk=run.pk)


class CancelRunView(ActionView):
    action = actions.CANCEL_REPORT_RUN

    def audit_target(self) -> str:
        return f"report-run:{get_object_or_404(ReportRun, pk=self.kwargs['pk']).run_id}"

    def perform(self, request, pk: int):
        run = get_object_or_404(ReportRun, pk=pk)
        try:
            with self.audited_change() as change:
                change.before = {"status": run.status}
                run = services.cancel_run(run)
                change.after = {"status": run.status, "cancel_requested": True}
        except services.NotCancellable as error:
            messages.error(request, f"Not cancelled: {error}")
        else:
            messages.success(request, f"Cancelling run {run.run_id}.")
        return redirect("console:report-run", pk=pk)


class ScheduleView(ActionView):
    action = actions.SCHEDULE_REPORTS

    def audit_target(self) -> str:
        return f"report-schedule:{self.kwargs['report']}"

    def perform(self, request, report: str):
        if report not in Report.values:
            raise Http404(f"no report {report!r}")
        form = ScheduleForm(request.POST)
        if not form.is_valid():
            messages.error(request, "Schedule not changed: " + "; ".join(
                " ".join(errors) for errors in form.errors.values()))
            return redirect("console:reports")
        try:
            with self.audited_change() as change:
                change.before = _schedule_audit(report)
                services.set_schedule(report, form.cleaned_data["crontab"], form.cleaned_data["enabled"])
                change.after = _schedule_audit(report)
        except ValidationError as error:
            messages.error(request, f"Schedule not changed: {' '.join(error.messages)}")
        else:
            messages.success(request, f"{Report(report).label}: {change.after['crontab']} UTC, "
                                      f"{'enabled' if change.after['enabled'] else 'disabled'}.")
        return redirect("console:reports")


def _schedule_audit(report: str) -> dict:
    state = services.schedule_state(report)
    return {"crontab": state["crontab"], "enabled": state["enabled"]}
