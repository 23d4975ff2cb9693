"""Where announcements go. The control plane's sink records a delivery per endpoint and hands it to
Celery; the library has a logging sink and a plain in-process webhook sink (retries kept in memory, lost
on exit) for `python -m monitoring`."""

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Sequence
from typing import Protocol

from monitoring.notifier.incidents import Notification
from monitoring.notifier.payloads import TemplateError
from monitoring.notifier.sender import Delivery, Outcome, WebhookEndpoint, attempt, prepare, retry_delay_s

logger = logging.getLogger(__name__)


class NotificationSink(Protocol):
    def deliver(self, notifications: Sequence[Notification]) -> None:
        """Accept announcements; must not block the evaluation for long."""


class LoggingSink:
    def deliver(self, notifications: Sequence[Notification]) -> None:
        for n in notifications:
            logger.warning("%s %s/%s: %s (incident %s)", n.kind, n.result.cluster, n.result.group,
                           n.incident.status.name, n.incident.id)


class WebhookSink:
    """Delivers to every endpoint from one background thread, retrying on `retry_delay_s`'s schedule."""

    def __init__(self, endpoints: Sequence[WebhookEndpoint]) -> None:
        self._endpoints = tuple(endpoints)
        self._queue: list[tuple[float, int, WebhookEndpoint, Delivery, int]] = []
        self._sequence = itertools.count()
        self._wake = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="webhooks", daemon=True)
        self._thread.start()

    def deliver(self, notifications: Sequence[Notification]) -> None:
        with self._wake:
            for n in notifications:
                for endpoint in self._endpoints:
                    try:
                        delivery = prepare(endpoint, n)
                    except (TemplateError, ValueError) as exc:
                        logger.error("webhook %s: cannot build the %s body: %s", endpoint.url, n.kind, exc)
                        continue
                    heapq.heappush(self._queue, (time.monotonic(), next(self._sequence), endpoint, delivery, 0))
            self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._stopping and (not self._queue or self._queue[0][0] > time.monotonic()):
                    self._wake.wait(None if not self._queue else self._queue[0][0] - time.monotonic())
                if self._stopping:
                    return
                _, _, endpoint, delivery, attempts = heapq.heappop(self._queue)
            result = attempt(delivery, endpoint.secret, endpoint.timeout_s)
            if result.outcome is Outcome.RETRY:
                delay = retry_delay_s(attempts + 1, result.retry_after_s)
                if delay is not None:
                    with self._wake:
                        heapq.heappush(self._queue, (time.monotonic() + delay, next(self._sequence), endpoint,
                                                     delivery, attempts + 1))
                    continue
            level = logging.INFO if result.outcome is Outcome.DELIVERED else logging.WARNING
            logger.log(level, "webhook %s %s: %s %s", endpoint.url, delivery.webhook_id, result.outcome, result.error)

    def close(self) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify()
        self._thread.join()
