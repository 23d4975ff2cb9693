"""Why a chart is empty, in words shared by the pages."""

from datetime import datetime

NO_HISTORY = ("No broker metrics recorded yet: brokers publish a sample every 10 s to __strom_metrics, and "
              "`manage.py consume_metrics` (started by `make run`) turns them into history.")
NO_BROKERS = "No broker has registered with the control plane yet."


def no_data_in_range(history_starts: datetime | None, what: str = "traffic") -> str:
    """The empty state of a range: no history at all, or none in this range."""
    if history_starts is None:
        return NO_HISTORY
    return f"No {what} in this range (history goes back to {history_starts:%Y-%m-%d %H:%M} UTC)."
