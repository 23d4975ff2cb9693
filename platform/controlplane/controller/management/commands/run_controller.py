"""`manage.py run_controller`: run the controller loop until SIGTERM/SIGINT (see controller.controller)."""

import logging
import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand

from controlplane.controller.controller import Controller


class Command(BaseCommand):
    help = "Run the cluster controller (one active at a time through a lease in the database)."

    def add_arguments(self, parser):
        parser.add_argument("--tick-ms", type=int, default=settings.STROM_CONTROLLER_TICK_MS)
        parser.add_argument("--identity", default=None, help="controller identity (default host:pid:random)")

    def handle(self, *args, tick_ms: int, identity: str | None, **options):
        logging.getLogger("controlplane.controller").setLevel(logging.INFO)
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        controller = Controller(identity)
        self.stdout.write(f"controller {controller.identity} started (session timeout "
                          f"{settings.STROM_BROKER_SESSION_TIMEOUT_MS} ms, "
                          f"lease {settings.STROM_CONTROLLER_LEASE_MS} ms)")
        self.stdout.flush()
        controller.run(stop, tick_ms)
        self.stdout.write(f"controller {controller.identity} stopped")
