"""The message browser on a topic of 1,000,000 records in a REAL standalone broker (the issue's acceptance point):
seek by offset and by time, newest first from the end, filters whose matches are 10,000 records apart (so pages
stop at the scan budget and continue with the cursor), and export over REST. The records are written as raw
batches (`tests.support.bulk_topic`, about a second) and every page is checked against what was written."""

import csv
import io
import json
import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from rest_framework.test import APIClient

from controlplane.access.actions import Role
from controlplane.topics.message_browser import SCAN_BUDGET, Start, browse
from controlplane.topics.message_format import Filter
from controlplane.topics.models import Partition, Topic
from tests.conftest import user_with_role
from tests.support.broker import standalone_broker
from tests.support.bulk_topic import BulkTopic, write_bulk_topic

pytestmark = pytest.mark.slow
RECORDS = 1_000_000


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> BulkTopic:
    with standalone_broker(tmp_path_factory.mktemp("broker")) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("big", 1, 1)])["big"].result(30)
        # An hour (and the topic's span) ago: well inside retention.ms (7 days).
        t0 = int(time.time() * 1000) - 3_600_000 - 2 * RECORDS
        started = time.perf_counter()
        bulk = write_bulk_topic(broker, "big", RECORDS, t0)
        print(f"wrote {RECORDS:,} records in {time.perf_counter() - started:.1f} s")
        yield bulk, broker.bootstrap


@pytest.fixture
def big(written, db, settings) -> BulkTopic:
    bulk, bootstrap = written
    settings.STROM_BOOTSTRAP_SERVERS = bootstrap
    Partition.objects.create(topic=Topic.objects.create(name=bulk.name), partition=0, replicas=[1], isr=[1], leader=1)
    return bulk


def expected(big: BulkTopic, offsets) -> list[tuple[int, bytes, bytes, int]]:
    return [(o, big.key(o), big.value(o), big.timestamp(o)) for o in offsets]


def shown(page) -> list[tuple[int, bytes, bytes, int]]:
    return [(m.offset, m.key, m.value, m.timestamp_ms) for m in page.messages]


@pytest.mark.parametrize("offset", [0, 654_321, RECORDS - 50])
def test_seek_by_offset_anywhere(big, offset):
    page = browse(big.name, start=Start("offset", offset), limit=50)
    assert shown(page) == expected(big, range(offset, offset + 50))
    assert page.cursor == (None if offset == RECORDS - 50 else f"0:{offset + 50}")
    assert page.scanned == 50 and page.watermarks == {0: (0, RECORDS)}


def test_newest_first_from_the_end_and_continued(big):
    page = browse(big.name, start=Start("latest"), newest_first=True, limit=50)
    assert shown(page) == expected(big, range(RECORDS - 1, RECORDS - 51, -1))
    older = browse(big.name, start=Start("latest"), newest_first=True, limit=50, cursor=page.cursor)
    assert shown(older) == expected(big, range(RECORDS - 51, RECORDS - 101, -1))


@pytest.mark.parametrize("offset", [1, 123_457, 999_999])
def test_seek_by_time_finds_the_first_record_at_or_after_it(big, offset):
    between = browse(big.name, start=Start("timestamp", big.timestamp(offset) - 1), limit=3)
    assert shown(between) == expected(big, range(offset, min(offset + 3, RECORDS)))
    exact = browse(big.name, start=Start("timestamp", big.timestamp(offset)), limit=1)
    assert shown(exact) == expected(big, [offset])


@pytest.mark.parametrize("match, start, oracle", [
    # one match in 10,000 records: pages stop at the scan budget and continue
    (Filter(json_path='$.t == "hot"'), 300_000, [307_777, 317_777, 327_777, 337_777, 347_777]),
    (Filter(key_contains="k09999"), 990_000, list(range(999_900, RECORDS))),
    (Filter(value_contains='"n":"0050000"'), 0, [50_000]),
])
def test_filters_continue_with_the_cursor_until_the_page_is_found(big, match, start, oracle):
    found, cursor, pages = [], "", 0
    while len(found) < len(oracle):
        page = browse(big.name, start=Start("offset", start), limit=len(oracle) - len(found), match=match,
                      cursor=cursor)
        assert page.scanned <= SCAN_BUDGET
        found += shown(page)
        cursor, pages = page.cursor, pages + 1
        if cursor is None:  # the end of the log
            break
    assert found == expected(big, oracle)
    assert pages > (oracle[-1] - start) // SCAN_BUDGET


def test_export_over_rest(big):
    client = APIClient()
    client.force_authenticate(user_with_role("olga", Role.OPERATOR))
    url = f"/api/topics/{big.name}/messages/"
    jsonl = client.get(url, {"start": "offset", "offset": RECORDS - 10, "limit": 20, "export": "jsonl"})
    rows = [json.loads(line) for line in jsonl.content.decode().splitlines()]
    assert [(r["offset"], r["key"].encode(), r["value"].encode(), r["timestamp"]) for r in rows] == expected(
        big, range(RECORDS - 10, RECORDS))
    middle = big.timestamp(RECORDS // 2)
    exported = client.get(url, {"start": "timestamp", "timestamp": middle, "json_path": '$.t == "hot"', "limit": 2,
                                "export": "csv"})
    table = list(csv.DictReader(io.StringIO(exported.content.decode())))
    assert [int(r["offset"]) for r in table] == big.hot_offsets(RECORDS // 2)[:2]
    assert [int(r["timestamp"]) for r in table] == [big.timestamp(o) for o in big.hot_offsets(RECORDS // 2)[:2]]
