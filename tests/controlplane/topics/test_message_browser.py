"""The message browser against a REAL standalone broker, read with confluent-kafka: seek by offset, time and
latest − N, newest-first, filters with a bounded scan and a cursor that loses nothing, produce by key or
partition, Avro values in Confluent's wire format (and malformed ones). Records are known, so every page is
checked against an oracle."""

import datetime
import json
import time
import zoneinfo
from pathlib import Path

import pytest
from confluent_kafka import Producer
from django.test import Client
from playwright.sync_api import expect
from rest_framework.test import APIClient

from controlplane.access.actions import Role
from controlplane.audit.models import AuditEntry
from controlplane.core.errors import KafkaApiError
from controlplane.topics.message_browser import Start, browse, produce
from controlplane.topics.message_format import Filter
from controlplane.topics.models import Partition, Topic
from tests.conftest import PASSWORD, SCREENSHOTS, user_with_role
from tests.support.broker import standalone_broker
from tests.support.confluent_avro import confluent_avro

TOPIC, PARTITIONS, PER_PARTITION = "browse", 3, 200
# An hour ago (whole seconds): records older than retention.ms (7 days) would be deleted as soon as a new record
# rolls their segment.
T0 = (int(time.time()) - 3600) * 1000


AVRO_TOPIC, SCHEMA_ID = "browse-avro", 7
ORDER = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"},
                                                       {"name": "customer", "type": "string"}]}
# Offsets 0-5: three well-formed values, then a plain JSON value, a value cut short, another schema id; a tombstone.
AVRO_VALUES = [(f"order-{i}".encode(), confluent_avro({"id": i, "customer": f"c{i % 2}"}, ORDER, SCHEMA_ID))
               for i in range(3)] + [
    (b"json", b'{"id": 3}'),
    (b"cut", confluent_avro({"id": 4, "customer": "c0"}, ORDER, SCHEMA_ID)[:-2]),
    (b"other", confluent_avro({"id": 5, "customer": "c1"}, ORDER, SCHEMA_ID + 1)),
    (b"tombstone", None)]


def record(p: int, i: int) -> tuple[bytes, bytes, int]:
    """(key, value, timestamp) of the i-th record of partition p; timestamps interleave partitions."""
    value = json.dumps({"n": i, "p": p, "kind": "even" if i % 2 == 0 else "odd"}).encode()
    return f"k{p}-{i}".encode(), value, T0 + i * 1000 + p


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with standalone_broker(tmp_path_factory.mktemp("broker")) as running:
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": running.bootstrap})
        for name, count in ((TOPIC, PARTITIONS), (AVRO_TOPIC, 1)):
            admin.create_topics([NewTopic(name, count, 1)])[name].result(30)
        producer = Producer({"bootstrap.servers": running.bootstrap, "linger.ms": 5})
        for key, value in AVRO_VALUES:
            producer.produce(AVRO_TOPIC, value, key, partition=0)
        for p in range(PARTITIONS):
            for i in range(PER_PARTITION):
                key, value, ts = record(p, i)
                producer.produce(TOPIC, value, key, partition=p, timestamp=ts,
                                 headers=[("parity", b"even" if i % 2 == 0 else b"odd")])
        assert producer.flush(30) == 0
        yield running


@pytest.fixture
def topic(broker, db, settings):
    settings.STROM_BOOTSTRAP_SERVERS = broker.bootstrap
    for name, count in ((TOPIC, PARTITIONS), (AVRO_TOPIC, 1)):
        created = Topic.objects.create(name=name)
        for p in range(count):
            Partition.objects.create(topic=created, partition=p, replicas=[1], isr=[1], leader=1)
    return Topic.objects.get(name=TOPIC)


def offsets(page) -> list[tuple[int, int]]:
    return [(m.partition, m.offset) for m in page.messages]


def test_seek_by_offset_reads_forward_in_time_order(topic):
    page = browse(TOPIC, [1], Start("offset", 150), limit=10)
    assert offsets(page) == [(1, o) for o in range(150, 160)]
    first = page.messages[0]
    assert (first.key, json.loads(first.value)["n"], first.timestamp_ms, first.timestamp_type, first.headers) == (
        b"k1-150", 150, T0 + 150_000 + 1, "CreateTime", (("parity", b"even"),))
    assert page.cursor == "1:160"
    assert offsets(browse(TOPIC, [1], Start("offset", 150), limit=10, cursor=page.cursor))[0] == (1, 160)
    every = browse(TOPIC, None, Start("offset", 198), limit=10)
    assert offsets(every) == [(0, 198), (1, 198), (2, 198), (0, 199), (1, 199), (2, 199)]
    assert every.cursor is None  # the end of every partition


def test_seek_by_time_latest_and_newest_first(topic):
    assert offsets(browse(TOPIC, [0, 2], Start("timestamp", T0 + 100_500), limit=4)) == [
        (0, 101), (2, 101), (0, 102), (2, 102)]
    assert offsets(browse(TOPIC, [2], Start("latest", 3), limit=50)) == [(2, 197), (2, 198), (2, 199)]
    newest = browse(TOPIC, None, Start("latest"), newest_first=True, limit=5)
    assert offsets(newest) == [(2, 199), (1, 199), (0, 199), (2, 198), (1, 198)]
    older = browse(TOPIC, None, Start("latest"), newest_first=True, limit=5, cursor=newest.cursor)
    assert offsets(older) == [(0, 198), (2, 197), (1, 197), (0, 197), (2, 196)]
    assert offsets(browse(TOPIC, [0], Start("offset", 10), newest_first=True, limit=3)) == [(0, 10), (0, 9), (0, 8)]


@pytest.mark.parametrize("match, expected", [
    (Filter(key_contains="k2-17"), {(2, 17), *((2, o) for o in range(170, 180))}),
    (Filter(value_contains='"n": 42,'), {(p, 42) for p in range(PARTITIONS)}),
    (Filter(header="parity=odd", json_path="$.n == 33"), {(p, 33) for p in range(PARTITIONS)}),
    (Filter(json_path='$.kind == "even"', key_contains="k0-1"),
     {(0, o) for o in range(PER_PARTITION) if str(o).startswith("1") and o % 2 == 0}),
])
def test_filters_scan_a_bounded_number_of_records_and_continue(topic, match, expected):
    found, cursor, pages = set(), "", 0
    while True:
        page = browse(TOPIC, None, Start("earliest"), limit=500, match=match, cursor=cursor, scan_budget=250)
        assert page.scanned <= 250
        found |= set(offsets(page))
        pages += 1
        if page.cursor is None:
            break
        cursor = page.cursor
    assert found == expected
    assert pages >= PARTITIONS * PER_PARTITION // 250


def test_produce_by_partition_and_by_key(topic):
    written = produce(TOPIC, b"hello", key=b"k", headers=[("h", b"v")], partition=2)
    assert written.partition == 2 and written.offset >= PER_PARTITION
    page = browse(TOPIC, [2], Start("offset", written.offset), limit=1)
    assert (page.messages[0].value, page.messages[0].headers) == (b"hello", (("h", b"v"),))
    same = {produce(TOPIC, b"x", key=b"same-key").partition for _ in range(3)}
    assert len(same) == 1


def test_bad_requests(topic):
    with pytest.raises(KafkaApiError, match="no partition 7"):
        browse(TOPIC, [7])
    with pytest.raises(KafkaApiError) as unknown:
        browse("nope")
    assert unknown.value.error == "UNKNOWN_TOPIC_OR_PARTITION"
    with pytest.raises(KafkaApiError, match="limit"):
        browse(TOPIC, limit=0)


def client_as(role: Role) -> APIClient:
    client = APIClient()
    client.force_authenticate(user_with_role(f"user-{role.group_name}", role))
    return client


def test_rest_browse_export_and_produce(topic):
    operator = client_as(Role.OPERATOR)
    url = f"/api/topics/{TOPIC}/messages/"
    # T0 + 10 s as a Paris wall-clock time: the first record at or after it is n=10
    paris = datetime.datetime.fromtimestamp((T0 + 10_000) / 1000, zoneinfo.ZoneInfo("Europe/Paris"))
    body = operator.get(url, {"partitions": "0", "start": "timestamp", "limit": 2, "decode": "json",
                              "timestamp": paris.replace(tzinfo=None).isoformat(), "tz": "Europe/Paris"}).json()
    assert [(m["partition"], m["offset"]) for m in body["messages"]] == [(0, 10), (0, 11)]
    assert json.loads(body["messages"][0]["value"])["n"] == 10 and "\n" in body["messages"][0]["value"]
    assert body["messages"][0]["headers"] == [["parity", "even"]]
    assert (body["cursor"], body["watermarks"]["0"][0]) == ("0:12", 0)

    export = operator.get(url, {"partitions": "1", "start": "offset", "offset": 5, "limit": 3,
                                "value_contains": '"kind": "odd"', "export": "csv"})
    assert export["Content-Disposition"] == f'attachment; filename="{TOPIC}.csv"'
    assert [line.split(",")[1] for line in export.content.decode().splitlines()[1:]] == ["5", "7", "9"]
    jsonl = operator.get(url, {"order": "newest", "limit": 2, "export": "jsonl", "partitions": "2"})
    assert [json.loads(line)["offset"] for line in jsonl.content.decode().splitlines()][0] >= PER_PARTITION - 1

    produced = operator.post(url, {"key": "k", "value": "v", "headers": {"h": "1"}, "partition": 0}, format="json")
    assert produced.status_code == 201 and produced.json()["partition"] == 0
    entry = AuditEntry.objects.get(action="produce_test_messages")
    assert (entry.result, entry.target, entry.after["offset"]) == ("ok", f"topic:{TOPIC}", produced.json()["offset"])

    bad = operator.get(url, {"start": "offset", "offset": "x"})
    assert (bad.status_code, bad.json()["error"]) == (400, "INVALID_REQUEST")
    assert operator.get(url, {"json_path": "a.b"}).json()["error"] == "INVALID_REQUEST"


def test_avro_values_decode_and_malformed_ones_are_shown_per_record(topic):
    operator = client_as(Role.OPERATOR)
    url = f"/api/topics/{AVRO_TOPIC}/messages/"
    params = {"start": "earliest", "decode": "avro", "avro_schema": json.dumps(ORDER), "schema_id": SCHEMA_ID}
    page = operator.get(url, params)
    assert page.status_code == 200
    rows = page.json()["messages"]
    assert [json.loads(r["value"]) for r in rows[:3]] == [{"id": i, "customer": f"c{i % 2}"} for i in range(3)]
    assert [r["key"] for r in rows] == [k.decode() for k, _ in AVRO_VALUES]
    errors = [r["value_error"] for r in rows]
    assert errors[:4] == [None, None, None, "not in Confluent's wire format (magic byte 0, 4-byte schema id)"]
    assert errors[4].startswith("does not decode with the given schema (schema id 7): EOFError")
    assert errors[5:] == ["schema id 8, not the given 7", None]
    assert rows[3]["value"] == b'{"id": 3}'.hex(" ") and rows[6]["value"] is None
    without_id = operator.get(url, {**params, "schema_id": ""}).json()["messages"]
    assert json.loads(without_id[5]["value"]) == {"id": 5, "customer": "c1"}

    matching = operator.get(url, {**params, "json_path": '$.customer == "c0"'}).json()["messages"]
    assert [r["offset"] for r in matching] == [0, 2]
    lines = operator.get(url, {**params, "export": "jsonl"}).content.decode().splitlines()
    assert [json.loads(line)["value_error"] is None for line in lines] == [True] * 3 + [False] * 3 + [True]

    for bad, message in (({"avro_schema": ""}, "decode=avro needs"), ({"avro_schema": "{"}, "not an Avro schema"),
                         ({"schema_id": "x"}, "schema_id must be a whole number"),
                         ({"schema_id": "-1"}, "schema_id is a schema registry id")):
        refused = operator.get(url, {**params, **bad})
        assert (refused.status_code, refused.json()["error"]) == (400, "INVALID_REQUEST")
        assert message in refused.json()["message"]

    console = Client()
    console.force_login(user_with_role("olga", Role.OPERATOR))
    shown = console.get(f"/topics/{AVRO_TOPIC}/messages/", params).content.decode()
    assert shown.count('class="error value-error"') == 3 and "schema id 8, not the given 7" in shown


def test_viewers_see_no_message_contents(topic):
    viewer = client_as(Role.VIEWER)
    url = f"/api/topics/{TOPIC}/messages/"
    refused = viewer.get(url)
    assert refused.status_code == 403
    assert "Reading message contents needs the operator role" in refused.json()["message"]
    assert viewer.post(url, {"value": "v"}, format="json").status_code == 403
    assert list(AuditEntry.objects.order_by("id").values_list("action", "result")) == [
        ("read_messages", "refused"), ("produce_test_messages", "refused")]


def test_console_browse_and_produce(topic):
    operator = Client()
    operator.force_login(user_with_role("olga", Role.OPERATOR))
    page = operator.get(f"/topics/{TOPIC}/messages/", {"start": "offset", "offset": 5, "partitions": "1",
                                                        "limit": 3, "tz": "Asia/Tokyo", "decode": "json"})
    assert [r["offset"] for r in page.context["rows"]] == [5, 6, 7]
    assert page.context["rows"][0]["time"].endswith("+09:00")
    assert "cursor=1%3A8" in page.content.decode()
    produced = operator.post(f"/topics/{TOPIC}/produce/", {"key": "", "value": "hi", "partition": "1",
                                                           "headers": "a=b\n"})
    assert "start=offset&partitions=1&offset=" in produced["Location"]
    shown = operator.get(produced["Location"]).context["rows"]
    assert (shown[0]["value"], shown[0]["headers"], shown[0]["key"]) == ("hi", [["a", "b"]], None)

    viewer = Client()
    viewer.force_login(user_with_role("vic", Role.VIEWER))
    refused = viewer.get(f"/topics/{TOPIC}/messages/", {"start": "earliest"})
    assert "rows" not in refused.context
    assert "Reading message contents needs the operator role" in refused.content.decode()


@pytest.mark.browser
def test_message_browser_in_chromium(page, live_app, topic):
    user_with_role("olga", Role.OPERATOR)
    page.goto(f"{live_app}/login/")
    page.fill("#id_username", "olga")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.goto(f"{live_app}/topics/{TOPIC}/")
    page.get_by_role("link", name="Browse messages").click()
    expect(page.locator("#tz")).not_to_have_value("")

    page.select_option("select[name=partitions]", "1")
    page.select_option("#start", "offset")
    page.fill("input[name=offset]", "120")
    page.fill("input[name=limit]", "5")
    page.select_option("select[name=decode]", "json")
    page.get_by_role("button", name="Browse").click()
    rows = page.locator("#messages tbody tr")
    expect(rows).to_have_count(5)
    expect(rows.first).to_contain_text('"n": 120')
    page.screenshot(path=SCREENSHOTS / "topics-messages.png", full_page=True)
    page.locator("#continue").click()
    expect(rows.first.locator("td").nth(1)).to_have_text("125")

    page.select_option("#start", "timestamp")
    page.fill("input[name=timestamp]", str(T0 + 150_000))
    page.fill("input[name=value_contains]", '"kind": "odd"')
    page.get_by_role("button", name="Browse").click()
    expect(rows.first.locator("td").nth(1)).to_have_text("151")
    with page.expect_download() as download:
        page.locator("#export-jsonl").click()
    lines = Path(download.value.path()).read_text().splitlines()
    assert [json.loads(line)["offset"] for line in lines] == [151, 153, 155, 157, 159]

    page.fill("textarea[name=value]", "from chromium")
    page.fill("input[name=partition]", "1")
    page.get_by_role("button", name="Produce").click()
    expect(page.get_by_role("status").first).to_contain_text("Produced to partition 1 at offset")
    expect(rows.first).to_contain_text("from chromium")

    page.goto(f"{live_app}/topics/{AVRO_TOPIC}/messages/")
    expect(page.locator("#avro")).to_be_hidden()
    page.select_option("#start", "earliest")
    page.select_option("#decode", "avro")
    page.fill("textarea[name=avro_schema]", json.dumps(ORDER))
    page.fill("input[name=schema_id]", str(SCHEMA_ID))
    page.get_by_role("button", name="Browse").click()
    expect(rows).to_have_count(len(AVRO_VALUES))
    expect(rows.first.locator("pre.value")).to_contain_text('"customer": "c0"')
    expect(page.locator(".value-error")).to_have_count(3)
    expect(rows.nth(5)).to_contain_text("schema id 8, not the given 7")
    page.screenshot(path=SCREENSHOTS / "topics-messages-avro.png", full_page=True)
