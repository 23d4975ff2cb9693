"""`python -m monitoring`: run the lag monitor alone (the control plane runs the same `LagMonitor` in its
`run_lag_monitor` command). Ctrl-C or SIGTERM stops it cleanly.

    python -m monitoring --bootstrap-servers 127.0.0.1:9092 [--config monitor.json] [--state-dir var/lag]
                         [--http-port 8000 [--http-address 0.0.0.0]] [--webhook https://…]…
                         [--notify-threshold WARN|ERR] [--reminder-interval SECONDS]

`--http-port` serves Burrow's HTTP API v3, Prometheus `/metrics` and `/strom/v1/` (monitoring.http_api).

`--notify-threshold` and `--reminder-interval` are Burrow's `threshold` and `send-interval` for every
`--webhook` (default WARN, status changes only; see monitoring.notifier.incidents).

`--config` is a JSON object of settings with Burrow's key names (see monitoring.config); command-line
values win. Exit status 2 with one line on a bad setting.
"""

import argparse
import json
import logging
import signal
import sys
import threading
from pathlib import Path

from monitoring.config import MonitorConfig
from monitoring.http_api import MonitorHttpServer
from monitoring.model import Status
from monitoring.notifier.incidents import EVERYONE, NotifyPolicy
from monitoring.notifier.sender import WebhookEndpoint
from monitoring.notifier.sinks import LoggingSink, WebhookSink
from monitoring.persistence import FileStore, MemoryStore
from monitoring.service import LagMonitor


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m monitoring", description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-servers")
    parser.add_argument("--cluster")
    parser.add_argument("--config", type=Path, help="JSON file of settings (Burrow's key names)")
    parser.add_argument("--state-dir", type=Path, help="keep windows and incidents here across restarts")
    parser.add_argument("--http-port", type=int, help="serve Burrow's HTTP API and /metrics on this port")
    parser.add_argument("--http-address", default="127.0.0.1", help="the address to serve on (127.0.0.1)")
    parser.add_argument("--webhook", action="append", default=[], help="POST Standard Webhooks events here")
    parser.add_argument("--notify-threshold", choices=("WARN", "ERR"), default="WARN",
                        help="the group status that opens an incident for the webhooks (WARN)")
    parser.add_argument("--reminder-interval", type=float, metavar="SECONDS",
                        help="re-announce an unchanged open incident this long after the last announcement")
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = json.loads(args.config.read_text()) if args.config else {}
        if args.bootstrap_servers:
            settings["bootstrap-servers"] = args.bootstrap_servers
        if args.cluster:
            settings["cluster"] = args.cluster
        config = MonitorConfig.from_mapping(settings)
        if args.reminder_interval is not None and args.reminder_interval <= 0:
            raise ValueError(f"--reminder-interval must be positive, not {args.reminder_interval}")
    except (OSError, ValueError) as exc:  # ConfigError and JSON errors are ValueErrors
        print(f"monitoring: {exc}", file=sys.stderr)
        return 2
    store = FileStore(args.state_dir) if args.state_dir else MemoryStore()
    sink = WebhookSink([WebhookEndpoint(url) for url in args.webhook]) if args.webhook else LoggingSink()
    policy = NotifyPolicy(min_status=Status[args.notify_threshold],
                          reminder_interval_ms=None if args.reminder_interval is None
                          else int(args.reminder_interval * 1000))
    monitor = LagMonitor(config, store, sink, policies=lambda: {EVERYONE: policy})
    server = None
    if args.http_port is not None:
        server = MonitorHttpServer(monitor, args.http_address, args.http_port)
        server.start()
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    monitor.start()
    logging.getLogger("monitoring").info("lag monitor of %s (%s) running", config.cluster, config.bootstrap_servers)
    stop.wait()
    if server is not None:
        server.stop()
    monitor.stop()
    if isinstance(sink, WebhookSink):
        sink.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
