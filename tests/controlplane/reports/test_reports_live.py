"""Both reports end to end through every real part: a broker holding lag samples (CONTRACTS.md format) and publishing
its `__strom_metrics`, the control plane's rollups ingested from them, the console in Chromium ("Run now", the
progress bar, the result), the Celery worker of the reports queue on the real Redis, and the Spark jobs it starts
(local[2]). Screenshots: var/screenshots/reports-*.png. One run of each report: the expensive part is Spark."""

import shutil
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from controlplane.metrics.ingest import METRICS_TOPIC, SampleRecord, ingest
from controlplane.metrics.models import PartitionReplicaSize
from controlplane.reports.models import ReportRun
from controlplane.topics.models import Partition, Topic
from spark_jobs.results import ReportLayout, read_table
from tests.conftest import ROOT, SCREENSHOTS
from tests.controlplane.console.test_browser import log_in
from tests.support.broker import standalone_broker
from tests.support.celery_processes import celery_worker
from tests.support.lag_samples import LAG_SAMPLES_TOPIC, lag_sample, produce_samples
from tests.support.polling import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.services, pytest.mark.browser, pytest.mark.timeout(2400)]
MINUTE = 60_000
RUN_TIMEOUT_S = 900  # a run takes 1-2 min on a quiet 2-core machine, 4-10 min at load average 10-30


@pytest.fixture(scope="module")
def work_dir():
    """Under var/, not pytest's tmp_path: other pytest sessions of the same user on the machine prune old base
    temp dirs, and this test runs long enough to lose its outputs to them."""
    directory = ROOT / "var" / f"test-reports-live-{uuid.uuid4().hex[:8]}"
    directory.mkdir(parents=True)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def broker(work_dir):
    """A broker with topic `orders` (3 partitions, retention.ms 1 day, some records) and 50 minutes of lag samples:
    group billing on orders-0 OK for 20 minutes, then ERR."""
    with standalone_broker(work_dir / "broker", {"strom.metrics.sample.interval.ms": "1000"}) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        futures = admin.create_topics([NewTopic("orders", 3, 1, config={"retention.ms": "86400000"}),
                                       NewTopic(LAG_SAMPLES_TOPIC, 1, 1)])
        for future in futures.values():
            future.result(30)
        producer = Producer({"bootstrap.servers": b.bootstrap})
        for i in range(300):
            producer.produce("orders", value=b"x" * 100, partition=i % 3)
        assert producer.flush(30) == 0
        now = int(time.time() * 1000) // MINUTE * MINUTE
        produce_samples(b.bootstrap, [
            lag_sample(now - (50 - m) * MINUTE, "billing", "orders", 0, lag=0 if m < 20 else 10 * m,
                       lag_seconds=0.0 if m < 20 else 60.0 * (m - 20), status="OK" if m < 20 else "ERR",
                       breached=m >= 20) for m in range(50)])
        yield b


def ingest_metrics(bootstrap: str) -> int:
    """What `manage.py consume_metrics` does, until the broker's sizes of `orders` are in the rollups; its id."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    wait_until(lambda: METRICS_TOPIC in consumer.list_topics(timeout=5).topics, 30, message="the metrics topic")
    partitions = consumer.list_topics(METRICS_TOPIC, timeout=5).topics[METRICS_TOPIC].partitions
    consumer.assign([TopicPartition(METRICS_TOPIC, p, 0) for p in partitions])

    def ingested_orders():
        messages = [m for m in consumer.consume(500, timeout=1) if not m.error()]
        ingest(sorted((SampleRecord(m.topic(), m.partition(), m.offset(), m.value()) for m in messages),
                      key=lambda r: (r.partition, r.offset)))
        return PartitionReplicaSize.objects.filter(topic="orders").count() == 3

    try:
        wait_until(ingested_orders, 60, message="sizes of orders in the rollups")
    finally:
        consumer.close()
    return PartitionReplicaSize.objects.filter(topic="orders").first().broker_id


def run_from_console(page, live_app: str, report: str, screenshot: str) -> ReportRun:
    """Click "Run now", watch the progress bar until the run is final; the run."""
    page.goto(f"{live_app}/reports/")
    page.click(f"#{report}-run-now")
    expect(page.locator("#run-status")).to_be_visible()
    run = ReportRun.objects.get(report=report)
    bar = page.locator(".run-progress progress")
    seen, deadline, shot = set(), time.monotonic() + RUN_TIMEOUT_S, False
    while not ReportRun.objects.get(pk=run.pk).is_final:
        assert time.monotonic() < deadline, f"{report} run did not finish: {ReportRun.objects.get(pk=run.pk).status}"
        try:
            fraction = bar.evaluate("element => element.value", timeout=2000)
        except PlaywrightError:  # the page reloads itself when the run ends
            fraction = None
        if fraction is not None and 0 < fraction < 1:
            seen.add(fraction)
            if not shot:
                page.screenshot(path=SCREENSHOTS / f"reports-{report}-progress.png", full_page=True)
                shot = True
        page.wait_for_timeout(250)
    run.refresh_from_db()
    assert run.status == "succeeded", f"{run.status}: {run.error}"
    expect(page.locator(".report-table").first).to_be_visible(timeout=20_000)  # the page reloaded with the result
    expect(page.locator(".chart .main-svg").first).to_be_attached()
    page.screenshot(path=SCREENSHOTS / screenshot, full_page=True)
    assert seen, "the progress bar never showed a run in progress"
    return run


def test_reports_run_from_the_console_on_celery_and_spark(broker, live_app, user, page, settings, work_dir):
    queue = f"reports-test-{uuid.uuid4().hex[:8]}"
    settings.STROM_REPORTS_DIR, settings.STROM_REPORTS_QUEUE = work_dir / "reports", queue
    broker_id = ingest_metrics(broker.bootstrap)
    orders = Topic.objects.create(name="orders", configs={"retention.ms": "86400000"})
    for p in range(3):
        Partition.objects.create(topic=orders, partition=p, replicas=[broker_id], isr=[broker_id], leader=broker_id)
    env = {"STROM_REPORTS_DIR": str(work_dir / "reports"), "STROM_REPORTS_QUEUE": queue,
           "STROM_BOOTSTRAP_SERVERS": broker.bootstrap, "STROM_SPARK_MASTER": "local[2]"}
    log_in(page, live_app, "/reports/")

    with celery_worker(queue, work_dir / "worker.log", env):
        lag = run_from_console(page, live_app, "lag", "reports-lag-result.png")
        expect(page.locator("#chart-groups .main-svg").first).to_be_attached()
        expect(page.locator("#run-status")).to_have_text("succeeded")
        expect(page.locator("#table-groups")).to_contain_text("billing")
        retention = run_from_console(page, live_app, "retention", "reports-retention-result.png")
        expect(page.locator("#table-topics")).to_contain_text("orders")

    groups = read_table(ReportLayout(work_dir / "reports", "lag"), "groups", lag.run_id).to_pylist()
    assert [(g["group"], g["worst_status"]) for g in groups] == [("billing", "ERR")]
    assert lag.master == "local[2]" and lag.rows["groups"] == 1 and lag.fraction == 1.0
    topics = read_table(ReportLayout(work_dir / "reports", "retention"), "topics", retention.run_id).to_pylist()
    assert [(t["topic"], t["partitions"], t["retention_hours"]) for t in topics] == [("orders", 3, 24.0)]
    assert all(t["size_bytes"] > 0 for t in topics)
    csv = page.request.get(f"{live_app}/reports/runs/{retention.pk}/csv/topics/")
    assert csv.ok and csv.text().splitlines()[0].startswith('"topic"')
