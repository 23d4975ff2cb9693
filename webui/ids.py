"""Component ids of the dashboard: the shell's, and per page a prefix so pages cannot collide."""

# shell
INTERVAL = "shell-interval"
TIMEZONE = "shell-timezone"
TIMEZONE_COOKIE = "strom_tz"
"""The viewer's IANA zone, written by the browser (the shell; the console's pages) so that a layout built on the
server can already show local times."""
PAGES_LOCATION = "_pages_location"  # Dash pages' own container: its dcc.Location, content, title store, dummy
PAGES_CONTENT = "_pages_content"
PAGES_STORE = "_pages_store"
PAGES_DUMMY = "_pages_dummy"


def page(prefix: str):
    """An id factory for one page: page("lag")("chart") -> "lag-chart"."""
    return lambda name: f"{prefix}-{name}"
