"""The console's navigation bar, one entry per section (label, URL), and the user's role beside their name."""

from django.urls import reverse

from controlplane.access.roles import role_of

SECTIONS = (
    ("Overview", "console:overview"),
    ("Brokers", "console:brokers"),
    ("Topics", "console:topics"),
    ("Consumer groups", "console:groups"),
    ("Reassignments", "console:reassignments"),
    ("Alerts", "console:alerts"),
    ("Reports", "console:reports"),
    ("Audit log", "console:audit"),
)
DASHBOARD_URL = "/dashboard/"


def navigation(request) -> dict:
    """Template context processor: `nav` is a list of (label, url, is_current); `role` the user's role name."""
    path = request.path
    entries = [(label, url := reverse(name), path == url or (url != "/" and path.startswith(url)))
               for label, name in SECTIONS]
    entries.append(("Dashboard", DASHBOARD_URL, path.startswith(DASHBOARD_URL)))
    user = getattr(request, "user", None)
    role = role_of(user) if user is not None and user.is_authenticated else None
    return {"nav": entries, "role": role.group_name if role else "no role"}
