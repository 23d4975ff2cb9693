"""A well-behaved acks=all producer running beside an abuse test: it produces numbered records in a thread
and records every acknowledgement, so a test can demand that acknowledgements keep coming while the abuse
is in place and, at the end, that every acknowledged record is in the log.

    with SteadyProducer(broker.bootstrap, "steady") as producer:
        ...abuse...
        producer.wait_for_progress(20)     # 20 more acknowledgements, within the deadline
    assert producer.errors == []
"""

import threading

from confluent_kafka import Producer

from tests.support.polling import wait_until


class SteadyProducer:
    """Produces `value = b"%d" % i` to partition `i % partitions` of `topic`, one record at a time in flight
    per `interval_s`; `acknowledged` maps partition -> [(offset, value)] in acknowledgement order."""

    def __init__(self, bootstrap: str, topic: str, partitions: int = 1, interval_s: float = 0.01) -> None:
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                                   "enable.idempotence": True, "message.timeout.ms": 60_000})
        self._topic = topic
        self._partitions = partitions
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="steady-producer", daemon=True)
        self.acknowledged: dict[int, list[tuple[int, bytes]]] = {}
        self.count = 0
        self.errors: list[str] = []

    def __enter__(self) -> "SteadyProducer":
        self._thread.start()
        self.wait_for_progress(1, timeout_s=60)
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join(30)
        self._producer.flush(30)

    def _on_delivery(self, error, message) -> None:
        with self._lock:
            if error is not None:
                self.errors.append(str(error))
                return
            self.acknowledged.setdefault(message.partition(), []).append((message.offset(), message.value()))
            self.count += 1

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            self._producer.produce(self._topic, value=b"%d" % i, partition=i % self._partitions,
                                   on_delivery=self._on_delivery)
            i += 1
            self._producer.poll(self._interval_s)
        self._producer.flush(30)

    def wait_for_progress(self, records: int, timeout_s: float = 30.0) -> None:
        """Block until `records` more acknowledgements than now arrived (AssertionError at the deadline)."""
        target = self.count + records
        wait_until(lambda: self.count >= target, timeout_s, message=f"{records} more acknowledgements")
