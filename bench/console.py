"""`make bench-console`: the topic pages at 10,000 topics × 3 partitions, and the message browser on a large topic.

1. A fresh SQLite metadata store (migrated; 3 brokers, 10,000 topics × 3 partitions, each with replica sizes and
   leaders' log offsets as `consume_metrics` keeps them). In process, through Django's test client as a logged-in
   admin: the console's topic list (default sort, sorted by size descending, a filter, page 50) and
   `/api/topics/` (the same, and `ordering=-messages`): p50/p95 server time over BENCH_CONSOLE_RUNS requests and
   the SQL queries per request — compared with 1,000 topics to show they stay constant.
2. A real standalone broker, BENCH_CONSOLE_RECORDS records (1,000,000) of BENCH_CONSOLE_VALUE_BYTES-byte values
   (100) spread over BENCH_CONSOLE_PARTITIONS partitions (1), written as raw uncompressed batches of up to 1 MiB
   (`tests.support.bulk_topic`); the browser's first page (50 records, all partitions) at offset 0, the middle and
   the end, at a time in the middle, newest-first, and a filter that scans its whole 20,000-record budget: p50/max
   over BENCH_CONSOLE_RUNS / 4 (at least 3) pages (`message_browser.browse`, the code the REST view and the
   console page call). 10,500,000 × 1 KiB makes the issue's 10 GiB topic (about 11 GB in /tmp while it runs).

BENCH_CONSOLE_PARTS picks the parts: `list,browser` (the default), `list` or `browser`. Run alone (2 shared cores
make every figure noisy); prints the load average with the figures.
"""

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

RUNS = int(os.environ.get("BENCH_CONSOLE_RUNS", "20"))
RECORDS = int(os.environ.get("BENCH_CONSOLE_RECORDS", "1000000"))
VALUE_BYTES = int(os.environ.get("BENCH_CONSOLE_VALUE_BYTES", "100"))
TOPIC_PARTITIONS = int(os.environ.get("BENCH_CONSOLE_PARTITIONS", "1"))
PARTS = set(os.environ.get("BENCH_CONSOLE_PARTS", "list,browser").split(","))
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


def _disk_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def bench_message_browser(data_dir: Path) -> None:
    from django.conf import settings

    from controlplane.topics.message_browser import Start, browse
    from controlplane.topics.message_format import Filter
    from controlplane.topics.models import Partition, Topic
    from tests.support.broker import standalone_broker
    from tests.support.bulk_topic import write_bulk_topic
    from tests.support.kafka_wire import connect, create_topic

    per_partition = RECORDS // TOPIC_PARTITIONS
    with standalone_broker(data_dir) as broker:
        settings.STROM_BOOTSTRAP_SERVERS = broker.bootstrap
        with connect(broker) as sock:
            create_topic(sock, "big", TOPIC_PARTITIONS)
        topic = Topic.objects.create(name="big")
        Partition.objects.bulk_create(Partition(topic=topic, partition=p, replicas=[1], isr=[1], leader=1)
                                      for p in range(TOPIC_PARTITIONS))
        t0 = int(time.time() * 1000) - 3_600_000 - 2 * per_partition  # every partition spans the same time
        started = time.perf_counter()
        for p in range(TOPIC_PARTITIONS):
            bulk = write_bulk_topic(broker, "big", per_partition, t0, VALUE_BYTES, partition=p)
        print(f"\nMessage browser: wrote {per_partition * TOPIC_PARTITIONS:,} records of {VALUE_BYTES} B in "
              f"{TOPIC_PARTITIONS} partition(s), batches of {bulk.batch_records:,}, in "
              f"{time.perf_counter() - started:.1f} s; {_disk_bytes(broker.log_dir) / 2**30:.2f} GiB on disk")

        def from_offset(first: int, step: int = 1) -> list[tuple[int, int]]:
            """The first page's (partition, offset)s, forward (step 1) or newest-first (-1): the partitions share
            timestamps, so a page takes each offset from every partition in turn (newest-first: the last partition
            first)."""
            partitions = range(TOPIC_PARTITIONS)[::step]
            return [(p, first + step * i) for i in range(50) for p in partitions][:50]

        middle = per_partition // 2
        cases = [  # (label, browse arguments, the page's (partition, offset)s)
            ("offset 0", dict(start=Start("offset", 0)), from_offset(0)),
            ("offset middle", dict(start=Start("offset", middle)), from_offset(middle)),
            ("offset end − 50", dict(start=Start("offset", per_partition - 50)), from_offset(per_partition - 50)),
            ("latest, newest first", dict(start=Start("latest"), newest_first=True),
             from_offset(per_partition - 1, -1)),
            ("time in the middle", dict(start=Start("timestamp", bulk.timestamp(middle))), from_offset(middle)),
            ("filter scanning 20,000 records", dict(start=Start("offset", per_partition // 3),
                                                    match=Filter(key_contains="no such key")), []),
        ]
        # warm: on a fresh broker the browser consumer's first FindCoordinator creates `__consumer_offsets`, which
        # holds up its first page by ~1 s (once per cluster)
        browse("big", limit=50)
        print(f"{'first page (50 records)':34} {'p50 ms':>8} {'max ms':>8} {'scanned':>8}")
        for label, kwargs, expected in cases:
            times = []
            for _ in range(max(RUNS // 4, 3)):
                started = time.perf_counter()
                page = browse("big", limit=50, **kwargs)
                times.append(time.perf_counter() - started)
            assert [(m.partition, m.offset) for m in page.messages] == expected, label
            assert all((m.key, m.value, m.timestamp_ms) == (bulk.key(m.offset), bulk.value(m.offset),
                                                            bulk.timestamp(m.offset)) for m in page.messages), label
            print(f"{label:34} {statistics.median(times) * 1000:8.0f} {max(times) * 1000:8.0f} {page.scanned:8d}")


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    if not PARTS or PARTS - {"list", "browser"}:
        sys.exit(f"BENCH_CONSOLE_PARTS: list, browser or list,browser, not {','.join(sorted(PARTS))!r}")
    print(f"load average: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="bench-console-") as tmp:
        _setup_django(Path(tmp))
        if "list" in PARTS:
            bench_topic_list()
        if "browser" in PARTS:
            bench_message_browser(Path(tmp) / "broker")
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
