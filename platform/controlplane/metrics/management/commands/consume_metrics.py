"""`manage.py consume_metrics`: roll the brokers' metric samples and the lag samples up into the database until
SIGTERM/SIGINT (see controlplane.metrics.consumer)."""

import logging
import signal
import threading

from django.core.management.base import BaseCommand

from controlplane.metrics.consumer import run


class Command(BaseCommand):
    help = "Consume __strom_metrics and __strom_lag_samples into the metrics rollups (resumes where it stopped)."

    def add_arguments(self, parser):
        parser.add_argument("--bootstrap-server", default=None,
                            help="host:port,... (default: STROM_BOOTSTRAP_SERVERS or the running brokers)")

    def handle(self, *args, bootstrap_server: str | None, **options):
        logging.getLogger("controlplane.metrics").setLevel(logging.INFO)
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        self.stdout.write("metrics consumer started")
        self.stdout.flush()
        run(stop, bootstrap_server)
        self.stdout.write("metrics consumer stopped")
