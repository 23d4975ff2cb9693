"""`make bench-console`: the topic pages at 10,000 topics × 3 partitions, and the message browser on a 1M-record
topic.

1. A fresh SQLite metadata store (migrated; 3 brokers, 10,000 topics × 3 partitions, each with replica sizes and
   leaders' log offsets as `consume_metrics` keeps them). In process, through Django's test client as a logged-in
   admin: the console's topic list (default sort, sorted by size descending, a filter, page 50) and
   `/api/topics/` (the same, and `ordering=-messages`): p50/p95 server time over BENCH_CONSOLE_RUNS requests and
   the SQL queries per request — compared with 1,000 topics to show they stay constant.
2. A real standalone broker, 1,000,000 records (≈100 B values) in one partition; the browser's first page
   (50 records) at offset 0, the middle and the end, at a time in the middle, newest-first, and a filter that
   scans its whole 20,000-record budget: p50/max over BENCH_CONSOLE_RUNS (`message_browser.browse`, the code the
   REST view and the console page call).

Run alone (2 shared cores make every figure noisy); prints the load average with the figures.
"""

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

RUNS = int(os.environ.get("BENCH_CONSOLE_RUNS", "20"))
RECORDS = int(os.environ.get("BENCH_CONSOLE_RECORDS", "1000000"))
BROKERS, PARTITIONS = 3, 3


def _setup_django(var_dir: Path) -> None:
    os.environ["STROM_VAR_DIR"] = str(var_dir)
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def populate(topics: int, first: int = 0) -> None:
    from django.utils import timezone

    from controlplane.cluster.models import Broker, BrokerState
    from controlplane.metrics.ingest import refresh_topic_totals
    from controlplane.metrics.models import PartitionReplicaSize, TopicReplicaSize
    from controlplane.topics.models import Partition, Topic

    now = timezone.now()
    for b in range(1, BROKERS + 1):
        Broker.objects.get_or_create(broker_id=b, defaults={"listeners": f"PLAINTEXT://127.0.0.1:{9091 + b}",
                                                            "state": BrokerState.RUNNING})
    created = Topic.objects.bulk_create([Topic(name=f"topic-{t:05d}", configs={"retention.ms": "86400000"}
                                               if t % 10 == 0 else {}) for t in range(first, first + topics)],
                                        batch_size=2000)
    created = list(Topic.objects.filter(name__in=[t.name for t in created]))
    partitions, sizes, offsets = [], [], []
    for topic in created:
        t = int(topic.name.split("-")[1])
        for p in range(PARTITIONS):
            replicas = [(t + p + i) % BROKERS + 1 for i in range(BROKERS)]
            isr = replicas if (t * 7 + p) % 97 else replicas[:2]
            partitions.append(Partition(topic=topic, partition=p, replicas=replicas, isr=isr, leader=replicas[0]))
            offsets.extend(PartitionReplicaSize(broker_id=b, topic=topic.name, partition=p, log_dir="/d",
                                                size_bytes=t * 300 + b, leader=b == replicas[0], log_start_offset=t,
                                                log_end_offset=t * 10 + p, sampled_at=now) for b in replicas)
        sizes.extend(TopicReplicaSize(broker_id=b, topic=topic.name, size_bytes=t * 1000 + b, partitions=PARTITIONS,
                                      sampled_at=now) for b in range(1, BROKERS + 1))
    Partition.objects.bulk_create(partitions, batch_size=5000)
    TopicReplicaSize.objects.bulk_create(sizes, batch_size=5000)
    PartitionReplicaSize.objects.bulk_create(offsets, batch_size=5000)
    names = [topic.name for topic in created]
    for start in range(0, len(names), 2000):  # as `consume_metrics` does after writing replica sizes
        refresh_topic_totals(names[start:start + 2000])


def time_requests(client, urls: list[str]) -> dict[str, tuple[float, float, int]]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    results = {}
    for url in urls:
        assert client.get(url).status_code == 200, url  # warm: the user's permissions, template cache
        times = []
        for _ in range(RUNS):
            with CaptureQueriesContext(connection) as queries:
                started = time.perf_counter()
                response = client.get(url)
                times.append(time.perf_counter() - started)
            assert response.status_code == 200, url
        results[url] = (statistics.median(times) * 1000, statistics.quantiles(times, n=20)[18] * 1000,
                        len(queries))
    return results


LIST_URLS = ["/topics/", "/topics/?sort=-size_bytes", "/topics/?q=topic-0999", "/topics/?page=50",
             "/api/topics/", "/api/topics/?ordering=-messages", "/api/topics/?name__contains=0999&limit=100"]


def bench_topic_list() -> None:
    from django.contrib.auth import get_user_model
    from django.test import Client

    admin = get_user_model().objects.create_superuser("bench", password="bench password")
    client = Client()
    client.force_login(admin)
    populate(1_000)
    small = time_requests(client, LIST_URLS)
    populate(9_000, first=1_000)
    large = time_requests(client, LIST_URLS)
    print(f"\nTopic list, {RUNS} requests each (in-process server time; SQLite)")
    print(f"{'request':45} {'1,000 topics p50/p95 ms (queries)':>34} {'10,000 topics p50/p95 ms (queries)':>36}")
    for url in LIST_URLS:
        a, b = small[url], large[url]
        print(f"{url:45} {a[0]:14.1f} / {a[1]:6.1f} ({a[2]:2d}) {b[0]:16.1f} / {b[1]:6.1f} ({b[2]:2d})")


def bench_message_browser(data_dir: Path) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from django.conf import settings

    from controlplane.topics.message_browser import Start, browse
    from controlplane.topics.message_format import Filter
    from controlplane.topics.models import Partition, Topic
    from tests.support.broker import standalone_broker

    with standalone_broker(data_dir) as broker:
        settings.STROM_BOOTSTRAP_SERVERS = broker.bootstrap
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("big", 1, 1)])["big"].result(30)
        topic = Topic.objects.create(name="big")
        Partition.objects.create(topic=topic, partition=0, replicas=[1], isr=[1], leader=1)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20, "batch.size": 1_000_000,
                             "compression.type": "lz4", "queue.buffering.max.messages": 2_000_000})
        t0 = int(time.time() * 1000) - RECORDS
        started = time.perf_counter()
        value = b"x" * 80
        for i in range(RECORDS):
            producer.produce("big", value + str(i).encode(), f"key-{i}".encode(), partition=0, timestamp=t0 + i)
            if i % 100_000 == 0:
                producer.poll(0)
        assert producer.flush(300) == 0
        print(f"\nMessage browser: produced {RECORDS:,} records in {time.perf_counter() - started:.1f} s")
        cases = [
            ("offset 0", dict(start=Start("offset", 0))),
            ("offset middle", dict(start=Start("offset", RECORDS // 2))),
            ("offset end − 50", dict(start=Start("offset", RECORDS - 50))),
            ("latest, newest first", dict(start=Start("latest"), newest_first=True)),
            ("time in the middle", dict(start=Start("timestamp", t0 + RECORDS // 2))),
            ("filter scanning 20,000 records", dict(start=Start("offset", RECORDS // 3),
                                                    match=Filter(key_contains="no such key"))),
        ]
        print(f"{'first page (50 records)':34} {'p50 ms':>8} {'max ms':>8} {'scanned':>8}")
        for label, kwargs in cases:
            times = []
            for _ in range(max(RUNS // 4, 3)):
                started = time.perf_counter()
                page = browse("big", [0], limit=50, **kwargs)
                times.append(time.perf_counter() - started)
            print(f"{label:34} {statistics.median(times) * 1000:8.0f} {max(times) * 1000:8.0f} {page.scanned:8d}")


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    print(f"load average: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="bench-console-") as tmp:
        _setup_django(Path(tmp))
        bench_topic_list()
        bench_message_browser(Path(tmp) / "broker")
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
