"""The web process's way to the lag monitor: the evaluation results live in `run_lag_monitor`'s process,
which serves them on STROM_LAG_MONITOR_URL behind the cluster secret (monitoring.http_api); views forward
requests there after their own authentication and permission checks."""

import json
from dataclasses import dataclass
from urllib.parse import quote

import requests
from django.conf import settings

TIMEOUT_S = 10.0


@dataclass(frozen=True)
class MonitorAnswer:
    status: int
    content_type: str
    body: bytes
    content_encoding: str | None = None


class MonitorUnavailable(Exception):
    """The monitor does not answer (not started yet, or stopped)."""


def forward(method: str, path: str, query: str = "", accept_gzip: bool = False) -> MonitorAnswer:
    """`method path?query` at the monitor, its answer as is (gzip passed through when the client accepts it)."""
    headers = {"Authorization": f"Bearer {settings.STROM_CLUSTER_SECRET}",
               "Accept-Encoding": "gzip" if accept_gzip else "identity"}
    url = settings.STROM_LAG_MONITOR_URL.rstrip("/") + path + (f"?{query}" if query else "")
    try:
        response = requests.request(method, url, headers=headers, timeout=TIMEOUT_S, stream=True)
        body = response.raw.read(decode_content=False)
    except requests.RequestException as exc:
        raise MonitorUnavailable(f"the lag monitor does not answer at {settings.STROM_LAG_MONITOR_URL} "
                                 f"(is `manage.py run_lag_monitor` running?): {type(exc).__name__}") from None
    return MonitorAnswer(response.status_code, response.headers.get("Content-Type", "application/octet-stream"),
                         body, response.headers.get("Content-Encoding"))


def read_json(path: str) -> dict | None:
    """The monitor's JSON at `path` (e.g. /strom/v1/groups); None when it does not answer or answers other
    than 200 (the console then says the monitor is not running or does not know the group)."""
    try:
        answer = forward("GET", path)
    except MonitorUnavailable:
        return None
    return json.loads(answer.body) if answer.status == 200 else None


def topic_groups_path(topic: str) -> str:
    """The monitor's groups reading `topic`, with their lag on it (`monitoring.strom_api.topic_groups`)."""
    return f"/strom/v1/topics/{quote(topic, safe='')}/groups"
