"""`manage.py run_lag_monitor`: the consumer-lag monitor (monitoring.LagMonitor) with its state and
incidents in the database, announcements through the alerts outbox, and its HTTP API (Burrow's v3,
/metrics, /strom/v1) on 127.0.0.1:STROM_LAG_MONITOR_PORT behind the cluster secret, which the web views
proxy to. Runs until SIGTERM/SIGINT; `make run` starts it beside the controller."""

import json
import logging
import signal
import threading
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from controlplane.core.errors import KafkaApiError
from controlplane.groups.kafka_client import bootstrap_servers
from controlplane.lag.store import OrmMonitorStore, OutboxSink, policies, silences, thresholds
from monitoring.config import MonitorConfig
from monitoring.http_api import MonitorHttpServer
from monitoring.service import LagMonitor

BROKER_WAIT_S = 1.0


class Command(BaseCommand):
    help = "Run the consumer-lag monitor (Burrow's rules, lag in seconds, alerts) until SIGTERM/SIGINT."

    def add_arguments(self, parser):
        parser.add_argument("--bootstrap-server", default=None,
                            help="host:port,... (default: STROM_BOOTSTRAP_SERVERS or the running brokers)")
        parser.add_argument("--config", type=Path, default=settings.STROM_LAG_MONITOR_CONFIG or None,
                            help="JSON object of monitor settings, Burrow's key names (STROM_LAG_MONITOR_CONFIG)")
        parser.add_argument("--http-port", type=int, default=settings.STROM_LAG_MONITOR_PORT,
                            help="serve the monitor's HTTP API on 127.0.0.1:PORT (STROM_LAG_MONITOR_PORT)")

    def handle(self, *args, bootstrap_server: str | None, config: Path | None, http_port: int, **options):
        logging.getLogger("monitoring").setLevel(logging.INFO)
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        try:
            values = json.loads(config.read_text()) if config else {}
            if not isinstance(values, dict):
                raise ValueError(f"{config}: expected a JSON object of settings")
        except (OSError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        bootstrap = bootstrap_server or self._wait_for_brokers(stop)
        if bootstrap is None:
            return
        try:
            monitor_config = MonitorConfig.from_mapping({"bootstrap-servers": bootstrap, **values})
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        monitor = LagMonitor(monitor_config, OrmMonitorStore(monitor_config.cluster), OutboxSink(),
                             policies=policies, silences=silences,
                             thresholds=lambda: thresholds(monitor_config.thresholds))
        server = MonitorHttpServer(monitor, "127.0.0.1", http_port, secret=settings.STROM_CLUSTER_SECRET)
        monitor.start()
        server.start()
        self.stdout.write(f"lag monitor of {monitor_config.cluster} ({bootstrap}) serving on 127.0.0.1:{server.port}")
        self.stdout.flush()
        stop.wait()
        server.stop()
        monitor.stop()
        self.stdout.write("lag monitor stopped")

    def _wait_for_brokers(self, stop: threading.Event) -> str | None:
        """The running brokers' addresses, once one runs (None if stopped first)."""
        while not stop.is_set():
            try:
                return bootstrap_servers()
            except KafkaApiError:
                stop.wait(BROKER_WAIT_S)
        return None
