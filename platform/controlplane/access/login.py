"""Failed-login throttling (django-axes, configured in settings: STROM_LOGIN_FAILURE_LIMIT failures of one user
name from one address lock that pair out for STROM_LOGIN_COOLOFF_MINUTES): what a locked-out client sees."""

from axes.helpers import get_cool_off
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render


def lockout_response(request: HttpRequest, original_response=None, credentials=None) -> HttpResponse:
    """429: JSON for the REST API (POST /api/token/), the login page with the reason for the console."""
    minutes = max(1, int(get_cool_off(request).total_seconds() // 60))
    message = f"Too many failed logins for this user name from your address; try again in {minutes} minutes."
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": message}, status=429)
    return render(request, "registration/login.html", {"lockout": message}, status=429)
