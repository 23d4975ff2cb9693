"""The console's reassignment flow in a real headless Chromium on a real cluster (issue 13): a control plane
(web, controller with the executor, metrics consumer) and 3 brokers sampling their metrics every second. An
operator places a 6 MB topic on [1, 2] onto brokers 2 and 3 (Kafka's --generate), previews the move and the
per-broker before/after, executes it with a 1 MB/s throttle, watches the progress bar and ETA mid-copy, and sees
it complete; then the partition is on its new replicas and no throttle config is left. The Brokers page then shows
each broker's share of replicas (as the metadata has them) and of bytes (the copy now on broker 3), and its
Decommission button tells why broker 3 cannot be emptied (RF-3 internal topics on 3 brokers). Screenshots under
var/screenshots/reassignment-*.png and brokers-*.png."""

import contextlib
import re
import sqlite3
import subprocess
import sys
from collections import Counter

import pytest
from confluent_kafka import Producer
from playwright.sync_api import expect

from tests.conftest import PASSWORD, SCREENSHOTS
from tests.support.broker import REPO_ROOT
from tests.support.cluster import broker_cluster
from tests.support.controlplane import control_plane
from tests.support.polling import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.browser]

TOPIC = "big"
RECORDS, RECORD_BYTES = 600, 10_000
"""6 MB: about 6 s of copying under the throttle, so the progress is seen mid-copy."""
THROTTLE_MB_S = "1"


def sampled_size(plane, broker: int) -> int:
    """The size of big-0 on `broker` as the control plane has it from the metric samples (0 if none yet)."""
    with contextlib.closing(sqlite3.connect(plane.database, timeout=10)) as db:
        row = db.execute("SELECT size_bytes FROM metrics_partitionreplicasize WHERE topic = ? AND broker_id = ?",
                         (TOPIC, broker)).fetchone()
    return row[0] if row else 0


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    directory = tmp_path_factory.mktemp("reassignment-console")
    with control_plane(directory) as plane, broker_cluster(
            plane, directory, 3, overrides={"strom.metrics.sample.interval.ms": "1000"}) as cluster:
        subprocess.run([sys.executable, "manage.py", "set_role", "olga", "operator", "--create"], cwd=REPO_ROOT,
                       env={**plane.env, "STROM_USER_PASSWORD": PASSWORD}, check=True, capture_output=True)
        cluster.create_topic(TOPIC, assignments=[[1, 2]])
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 20})
        for _ in range(RECORDS):
            producer.produce(TOPIC, b"x" * RECORD_BYTES, partition=0)
            producer.poll(0)
        assert producer.flush(60) == 0
        del producer  # librdkafka would keep reconnecting after the cluster stops
        plane.start_metrics_consumer()
        wait_until(lambda: sampled_size(plane, 1) >= RECORDS * RECORD_BYTES, 60, interval_s=0.5,
                   message="the leader's size in the control plane")
        yield plane, cluster


def test_preview_execute_watch_progress_and_complete_in_the_console(page, live):
    plane, cluster = live
    page.goto(f"{plane.url}/login/")
    page.fill("#id_username", "olga")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    expect(page.get_by_role("heading", name="Cluster overview")).to_be_visible()

    page.get_by_role("link", name="Reassignments").click()
    page.get_by_label("Topics onto brokers").check()
    page.fill("input[name=topics]", TOPIC)
    page.fill("input[name=brokers]", "2,3")
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#preview-summary")).to_contain_text("1 partition change, 1 replica to copy")
    move = page.locator("#moves tbody tr")
    expect(move).to_have_count(1)
    expect(move).to_contain_text(TOPIC)
    expect(move.locator("td").nth(2)).to_have_text("1, 2")
    after = move.locator("td").nth(3).inner_text()
    assert sorted(after.split(", ")) == ["2", "3"]
    def replicas(broker: int) -> tuple[int, int]:  # before, after (internal topics' replicas included)
        values = page.locator(f"#broker-loads tr[data-broker='{broker}'][data-metric='replicas'] .bar-value")
        return int(values.first.inner_text()), int(values.last.inner_text())

    (before1, after1), (before3, after3) = replicas(1), replicas(3)
    assert (after1, after3) == (before1 - 1, before3 + 1)
    page.screenshot(path=SCREENSHOTS / "reassignment-preview.png", full_page=True)

    page.fill("input[name=throttle_mb_s]", THROTTLE_MB_S)
    page.get_by_role("button", name="Execute").click()
    expect(page).to_have_url(re.compile(r"/reassignments/\d+/$"))
    expect(page.get_by_role("status").first).to_contain_text("started: 1 partition(s)")

    def mid_copy() -> bool:
        percent = int(page.locator("#execution-percent").inner_text().rstrip("%"))
        bar = page.locator("#tasks tr[data-task='big-0'] progress").evaluate("p => p.value")
        return 0 < percent < 100 and 0 < bar < 1 and page.locator("#execution-eta").inner_text() not in ("—", "0 s")

    wait_until(mid_copy, 30, interval_s=0.2, message="progress mid-copy with an ETA")
    expect(page.locator("#tasks tr[data-task='big-0'] .task-state")).to_have_text(re.compile("copying|in ISR|done"))
    page.screenshot(path=SCREENSHOTS / "reassignment-progress.png", full_page=True)

    expect(page.locator("#execution-state")).to_have_text("completed", timeout=60_000)
    expect(page.locator("#execution-percent")).to_have_text("100%")
    expect(page.locator("#tasks tr[data-task='big-0'] .task-state")).to_have_text("done")
    page.screenshot(path=SCREENSHOTS / "reassignment-done.png", full_page=True)

    state = cluster.partition_state(TOPIC, 0)
    assert sorted(state["replicas"]) == [2, 3] and not state["adding_replicas"]
    image = plane.metadata()
    assert image["broker_configs"] == {}
    assert next(t["configs"] for t in image["topics"] if t["name"] == TOPIC) == {}
    wait_until(lambda: not (cluster.brokers[1].log_dir / f"{TOPIC}-0").exists(), 30,
               message="broker 1 to delete its removed replica")
    page.get_by_role("link", name="All reassignments").click()
    expect(page.locator("#history tbody tr").first).to_contain_text("Completed")

    # The Brokers page: replicas as the metadata has them; the copied bytes now count for broker 3, not broker 1.
    page.get_by_role("link", name="Brokers").click()
    placed = Counter(b for t in plane.metadata()["topics"] for p in t["partitions"] for b in p["replicas"])
    for broker in (1, 2, 3):
        expect(page.locator(f"tr[data-broker='{broker}'] td[data-share='replicas']")).to_have_text(
            re.compile(rf"^{placed[broker]} · "))

    def bytes_share(broker: int) -> float:
        cell = page.locator(f"tr[data-broker='{broker}'] td[data-share='bytes']").inner_text()
        return float(re.search(r"· ([\d.]+) %", cell).group(1)) if "%" in cell else 0.0

    def copy_counted_on_broker_3() -> bool:  # big is ~all the bytes: before, half on 1 and 2; now on 2 and 3
        page.reload()
        return bytes_share(3) > 25 > bytes_share(1)

    wait_until(copy_counted_on_broker_3, 30, interval_s=1, message="broker 3's sampled bytes on the Brokers page")
    page.screenshot(path=SCREENSHOTS / "brokers-skew.png", full_page=True)
    # Every broker holds a replica of the RF-3 internal topics, so none of the 3 can be emptied: the button says why
    # (the preview it leads to otherwise is tests/controlplane/console/test_brokers.py).
    page.locator("tr[data-broker='3']").get_by_role("button", name="Decommission").click()
    expect(page.get_by_role("status").first).to_contain_text(
        re.compile(r"Broker 3 cannot be decommissioned: \S+ cannot keep 3 replicas on brokers \[1, 2\]"))
    page.screenshot(path=SCREENSHOTS / "brokers-decommission-refused.png", full_page=True)
