"""The console's navigation bar, one entry per section (label, URL)."""

from django.urls import reverse

SECTIONS = (
    ("Overview", "console:overview"),
    ("Brokers", "console:brokers"),
    ("Topics", "console:topics"),
    ("Consumer groups", "console:groups"),
    ("Reassignments", "console:reassignments"),
    ("Alerts", "console:alerts"),
    ("Reports", "console:reports"),
)
DASHBOARD_URL = "/dashboard/"


def navigation(request) -> dict:
    """Template context processor: `nav` is a list of (label, url, is_current)."""
    path = request.path
    entries = [(label, url := reverse(name), path == url or (url != "/" and path.startswith(url)))
               for label, name in SECTIONS]
    entries.append(("Dashboard", DASHBOARD_URL, path.startswith(DASHBOARD_URL)))
    return {"nav": entries}
