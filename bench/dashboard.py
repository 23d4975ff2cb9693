"""`make bench-dashboard`: the dashboard at issue 15's scale — 3 brokers, 2,000 topics, 20,000 partitions,
500 consumer groups and 24 h of history — served by gunicorn as `make run` serves it (SQLite).

History generated: per broker 10 s / 1 min / 1 h points for 24 h (and a week of hourly log-dir points); 200
topics with traffic all day (every resolution), the other 1,800 with hourly size points; lag of the 500
groups at 1 min and 1 h. Measured:
- first meaningful paint: in a real Chromium, a user logs in (a new profile, so an empty cache), lands on the
  console's Overview and opens the dashboard from its navigation, at once or BENCH_DASHBOARD_THINK_S later;
  then reloads it (warm cache) and switches between its pages with the sub-navigation; each time until every
  figure of the page is drawn with data (`tests/support/dashboard_page.py`) (median and max of
  BENCH_DASHBOARD_RUNS);
- every callback's time (HTTP round trip on 127.0.0.1, an upper bound of server time), the CPU time the web
  process spent answering it (its threads' scheduler counters: what a loaded machine does not inflate), the
  time its threads were runnable but waited for a CPU (what a loaded machine adds) and its response size, at
  each range the pages offer (median and max of BENCH_DASHBOARD_RUNS).
Targets: paint < 1 s, callback < 200 ms and < 500 KB.
"""

import contextlib
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import requests

from tests.support.controlplane import REPO_ROOT, control_plane
from tests.support.dash_client import DashCallbacks
from tests.support.dashboard_page import GRAPHS, wait_for_figures

BROKERS, TOPICS, PARTITIONS_PER_TOPIC, GROUPS = 3, 2_000, 10, 500
ACTIVE_TOPICS = 200
PASSWORD = "bench password"
RUNS = int(os.environ.get("BENCH_DASHBOARD_RUNS", "5"))
THINK_S = float(os.environ.get("BENCH_DASHBOARD_THINK_S", "1"))
"""How long the user stays on the console's Overview after logging in before opening the dashboard."""
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
                 "--disable-background-networking", "--disable-component-update"]  # as tests/conftest.py


def _ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def populate(plane) -> None:
    """Metadata through the ORM-free schema the migrations created, history with executemany."""
    rng = random.Random(15)
    now = datetime.now(UTC).replace(microsecond=0)
    db = sqlite3.connect(plane.database, timeout=60)
    db.execute("PRAGMA synchronous = OFF")
    with db:
        db.execute("UPDATE cluster_controllerstate SET controller_epoch = 1")
        db.executemany(
            "INSERT INTO cluster_broker (broker_id, listeners, rack, state, registration_epoch, log_dirs, "
            "registered_at) VALUES (?, ?, '', 'running', 1, '[]', ?)",
            [(b, f"PLAINTEXT://127.0.0.1:{9091 + b}", _ts(now)) for b in range(1, BROKERS + 1)])
        db.executemany("INSERT INTO topics_topic (name, topic_id, configs, created_at) VALUES (?, ?, '{}', ?)",
                       [(f"topic-{t:04d}", f"{t:032x}", _ts(now)) for t in range(TOPICS)])
        topic_ids = dict(db.execute("SELECT name, id FROM topics_topic"))
        partitions = []
        for t in range(TOPICS):
            for p in range(PARTITIONS_PER_TOPIC):
                replicas = [(t + p + i) % BROKERS + 1 for i in range(BROKERS)]
                isr = replicas if (t * 7 + p) % 97 else replicas[:2]  # about 1 % under-replicated
                partitions.append((topic_ids[f"topic-{t:04d}"], p, str(replicas), str(isr), replicas[0]))
        db.executemany("INSERT INTO topics_partition (topic_id, partition, replicas, isr, leader, leader_epoch, "
                       "partition_epoch, adding_replicas, removing_replicas) VALUES (?, ?, ?, ?, ?, 0, 0, '[]', '[]')",
                       partitions)

        def points(resolution: int, span: timedelta):
            start = now - span
            start -= timedelta(seconds=int(start.timestamp()) % resolution)
            moment = start
            while moment < now:
                yield moment
                moment += timedelta(seconds=resolution)

        day, week = timedelta(days=1), timedelta(days=7)
        broker_rows, dir_rows = [], []
        for resolution, span in ((10, day), (60, day), (3600, week)):
            for moment in points(resolution, span):
                for b in range(1, BROKERS + 1):
                    rate = 2e6 * (1.2 + 0.5 * ((moment.hour + b) % 6) / 6)
                    broker_rows.append((resolution, _ts(moment), b, int(rate * resolution),
                                        int(rate * 0.8 * resolution), int(rate / 500 * resolution),
                                        PARTITIONS_PER_TOPIC * TOPICS, PARTITIONS_PER_TOPIC * TOPICS // BROKERS))
                    used = int(4e11 + (moment - (now - week)).total_seconds() * 2e5)
                    dir_rows.append((resolution, _ts(moment), b, f"/data/kafka-{b}", used, 2 * 10**12,
                                     2 * 10**12 - used - 10**11))
        db.executemany(
            "INSERT INTO metrics_brokermetricpoint (resolution, start, broker_id, bytes_in, bytes_out, messages_in, "
            "replication_bytes_in, replication_bytes_out, produce_requests, fetch_requests, failed_produce_requests, "
            "failed_fetch_requests, partitions, leaders, under_replicated, offline_replicas, connections) "
            "VALUES (?, ?, ?, ?, ?, ?, 0, 0, 0, 0, 0, 0, ?, ?, 1, 0, 40)", broker_rows)
        db.executemany("INSERT INTO metrics_logdirmetricpoint (resolution, start, broker_id, path, size_bytes, "
                       "total_bytes, free_bytes) VALUES (?, ?, ?, ?, ?, ?, ?)", dir_rows)
        topic_rows = []
        for resolution, span in ((10, day), (60, day), (3600, day)):
            for moment in points(resolution, span):
                for t in range(ACTIVE_TOPICS):
                    rate = 3e4 * (1 + t % 17)
                    topic_rows.append((resolution, _ts(moment), f"topic-{t:04d}", int(rate * resolution),
                                       int(rate * resolution * 0.9), int(rate / 500 * resolution), 10**9 + t))
        for moment in points(3600, day):
            for t in range(ACTIVE_TOPICS, TOPICS):
                topic_rows.append((3600, _ts(moment), f"topic-{t:04d}", 0, 0, 0, 10**8 + t))
        db.executemany("INSERT INTO metrics_topicmetricpoint (resolution, start, topic, bytes_in, bytes_out, "
                       "messages_in, size_bytes) VALUES (?, ?, ?, ?, ?, ?, ?)", topic_rows)
        db.executemany("INSERT INTO metrics_topicreplicasize (broker_id, topic, size_bytes, partitions, sampled_at) "
                       "VALUES (?, ?, ?, ?, ?)", [(b, f"topic-{t:04d}", rng.randint(10**7, 10**10), 10, _ts(now))
                                                  for t in range(TOPICS) for b in range(1, BROKERS + 1)])
        lag_rows = []
        for resolution in (60, 3600):
            for moment in points(resolution, day):
                for g in range(GROUPS):
                    lag = int(1000 * (1 + (g % 13)) * (1 + (moment.minute % 30) / 30))
                    lag_rows.append((resolution, _ts(moment), f"group-{g:03d}", lag, lag / 800,
                                     "WARN" if lag > 20_000 else "OK"))
        db.executemany("INSERT INTO metrics_lagmetricpoint (resolution, start, \"group\", lag, lag_seconds, status, "
                       "last_ts_ms, last_total) VALUES (?, ?, ?, ?, ?, ?, 0, 0)", lag_rows)
    db.close()
    print(f"generated: {len(partitions):,} partitions, {len(broker_rows):,} broker, {len(topic_rows):,} topic, "
          f"{len(dir_rows):,} log-dir and {len(lag_rows):,} lag points", flush=True)


CALLBACKS = [  # (label, output, inputs)
    ("overview", "overview-throughput.figure", {}),
    *[(f"throughput {chart} {label}", f"throughput-{chart}.figure", {"throughput-range.value": value})
      for label, value in (("1 h", "1h"), ("24 h", "24h"), ("7 d", "7d")) for chart in ("brokers", "topics")],
    ("lag groups", "lag-group.options", {"lag-group.value": "group-007"}),
    ("lag 24 h", "lag-chart.figure", {"lag-group.value": "group-007", "lag-range.value": "24h"}),
    ("partitions leaders", "partitions-heatmap.figure", {"partitions-metric.value": "leaders"}),
    ("partitions size", "partitions-heatmap.figure", {"partitions-metric.value": "size_bytes"}),
    ("partitions out of sync", "partitions-heatmap.figure", {"partitions-metric.value": "out_of_sync"}),
    ("disk", "disk-history.figure", {}),
    ("reassignments", "reassignments-list.children", {}),
]
DEFAULTS = {"shell-interval.n_intervals": 1, "shell-timezone.data": "Europe/Berlin", "throughput-metric.value":
            "bytes_in", "throughput-top.value": 10, "partitions-top.value": 30}


def _sched_s(pids: list[int]) -> tuple[float, float]:
    """(CPU time, time runnable but waiting for a CPU) in s that the threads of `pids` have had so far."""
    cpu_ns = wait_ns = 0
    for process in pids:
        for task in Path(f"/proc/{process}/task").glob("*"):
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                cpu, wait = (int(x) for x in (task / "schedstat").read_text().split()[:2])
                cpu_ns, wait_ns = cpu_ns + cpu, wait_ns + wait
    return cpu_ns / 1e9, wait_ns / 1e9


def _web_pids(pid: int) -> list[int]:
    """The web process `pid` and its children (gunicorn's worker)."""
    return [pid] + [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _parent(p) == pid]


def _parent(proc: Path) -> int:
    try:
        return int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
        return -1


def time_callbacks(session: requests.Session, base: str, web_pid: int
                   ) -> list[tuple[str, list[float], list[float], list[float], int]]:
    def post(path, body):
        response = session.post(base + path, json=body, timeout=60)
        return response.status_code, response.content

    callbacks = DashCallbacks(lambda path: session.get(base + path, timeout=60).json(), post)
    results = []
    pids = _web_pids(web_pid)
    for label, output, inputs in CALLBACKS:
        times, cpu, waits, size = [], [], [], 0
        for _ in range(RUNS):
            (cpu_before, wait_before), started = _sched_s(pids), time.perf_counter()
            status, body = callbacks.call(output, {**DEFAULTS, **inputs})
            times.append(time.perf_counter() - started)
            cpu_after, wait_after = _sched_s(pids)
            cpu.append(cpu_after - cpu_before)
            waits.append(wait_after - wait_before)
            assert status == 200, (label, body[:500])
            size = len(body)
        results.append((label, times, cpu, waits, size))
    return results


REASSIGNMENTS_READY = "#reassignments-list h2"  # no figures: its list of moves (or why there are none)


def time_paint(base: str) -> dict[str, list[float]]:
    """Seconds until figures with data show: opening the dashboard as a user does right after logging in (a new
    browser profile each time, so an empty cache: log in, land on the console's Overview, click "Dashboard" in
    its navigation, either at once or after THINK_S on the console), then reloading it (warm cache) and switching
    pages with the dashboard's navigation."""
    from playwright.sync_api import sync_playwright

    paints: dict[str, list[float]] = {}

    def timed(page, label: str, action, name: str) -> None:
        started = time.perf_counter()
        action()
        if name == "Reassignments":
            page.wait_for_selector(REASSIGNMENTS_READY, timeout=30_000)
        else:
            wait_for_figures(page, name, 30)
        paints.setdefault(label, []).append(time.perf_counter() - started)

    def logged_in_on_the_console(browser):
        page = browser.new_context(viewport={"width": 1366, "height": 850}).new_page()
        page.goto(f"{base}/login/")
        page.fill("#id_username", "admin")
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{base}/")  # the console's Overview, its load event fired
        return page

    open_dashboard = ".topbar .nav a:text-is('Dashboard')"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for think_s, label in ((0, "open after login, at once"), (THINK_S, f"open after login, {THINK_S:g} s later")):
            for _ in range(RUNS):
                page = logged_in_on_the_console(browser)
                page.wait_for_timeout(think_s * 1000)  # the user reading the console, not a synchronisation
                timed(page, label, lambda p=page: p.click(open_dashboard), "Overview")
                page.context.close()
        page = logged_in_on_the_console(browser)
        page.click(open_dashboard)
        wait_for_figures(page, "Overview", 30)
        for _ in range(RUNS):
            timed(page, "open (reload), warm cache", page.reload, "Overview")
        for _ in range(RUNS):
            for name in (*list(GRAPHS)[1:], "Reassignments", "Overview"):
                timed(page, f"switch to {name}", lambda n=name: page.click(f".subnav a:text-is('{n}')"), name)
        browser.close()
    return paints


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-dashboard-") as directory, \
            control_plane(Path(directory), controller=False) as plane:
        started = time.perf_counter()
        populate(plane)
        print(f"  ({time.perf_counter() - started:.0f} s)", flush=True)
        subprocess.run([sys.executable, "manage.py", "ensure_admin"], cwd=REPO_ROOT, check=True, capture_output=True,
                       env={**plane.env, "STROM_ADMIN_PASSWORD": PASSWORD})
        session = requests.Session()
        session.get(f"{plane.url}/login/")
        session.post(f"{plane.url}/login/", data={"username": "admin", "password": PASSWORD,
                                                  "csrfmiddlewaretoken": session.cookies["csrftoken"]},
                     headers={"Referer": f"{plane.url}/login/"})
        callbacks = time_callbacks(session, plane.url, plane.web.pid)
        print(f"\n{'callback':<24} {'median ms':>10} {'max ms':>8} {'server CPU ms':>14} {'CPU wait ms':>12} "
              f"{'KB':>7}")
        for label, times, cpu, waits, size in callbacks:
            print(f"{label:<24} {statistics.median(times) * 1000:>10.0f} {max(times) * 1000:>8.0f} "
                  f"{statistics.median(cpu) * 1000:>14.0f} {statistics.median(waits) * 1000:>12.0f} "
                  f"{size / 1000:>7.1f}", flush=True)
        paints = time_paint(plane.url)

    print(f"\n{'page: meaningful paint':<24} {'median ms':>10} {'max ms':>8}")
    for label, times in paints.items():
        print(f"{label:<24} {statistics.median(times) * 1000:>10.0f} {max(times) * 1000:>8.0f}")
    slow = [label for label, times, *_ in callbacks if statistics.median(times) > 0.2]
    busy = [label for label, _, cpu, *_ in callbacks if statistics.median(cpu) > 0.2]
    big = [label for label, *_, size in callbacks if size > 500_000]
    late = [label for label, times in paints.items() if statistics.median(times) > 1.0]
    print(f"\nload average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"targets: callbacks < 200 ms {'met' if not slow else f'MISSED by {slow}'} (server CPU "
          f"{'met' if not busy else f'MISSED by {busy}'}); < 500 KB "
          f"{'met' if not big else f'MISSED by {big}'}; paint < 1 s {'met' if not late else f'MISSED by {late}'}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO_ROOT))
    sys.exit(main())
