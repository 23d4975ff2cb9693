"""The browser's decodings, filters and exports, table-driven."""

import json

import pytest

from controlplane.topics.message_format import Filter, Message, decode, export_csv, export_jsonl, parse_json_path

MESSAGE = Message(0, 7, 1_700_000_000_000, "CreateTime", b"user-1", b'{"a": {"b": [1, {"c": "x y"}]}, "n": 3}',
                  (("trace", b"abc"), ("empty", None)))


@pytest.mark.parametrize("data, decoding, shown", [
    (b'{"a":1}', "json", '{\n  "a": 1\n}'),
    (b"not json", "json", "not json"),
    (b"\x00\xff", "hex", "00 ff"),
    (b"\x00\xff", "base64", "AP8="),
    (b"caf\xc3\xa9", "text", "café"),
    (None, "text", None),
])
def test_decodings(data, decoding, shown):
    assert decode(data, decoding) == shown


@pytest.mark.parametrize("expression, steps, expected", [
    ("$.a.b[1].c", ("a", "b", 1, "c"), None),
    ('$["a"].b == "x y"', ("a", "b"), "x y"),
    ("$.n == 3", ("n",), "3"),
])
def test_json_paths(expression, steps, expected):
    assert parse_json_path(expression) == (steps, expected)


@pytest.mark.parametrize("expression", ["a.b", "$.a..b", "$.a[x]"])
def test_bad_json_paths(expression):
    with pytest.raises(ValueError):
        parse_json_path(expression)


@pytest.mark.parametrize("match, matches", [
    (Filter(), True),
    (Filter(key_contains="user"), True),
    (Filter(key_contains="USER"), False),
    (Filter(value_contains='"n": 3'), True),
    (Filter(header="trace"), True),
    (Filter(header="trace=b"), True),
    (Filter(header="trace=z"), False),
    (Filter(header="empty"), True),
    (Filter(header="missing"), False),
    (Filter(json_path='$.a.b[1].c == "x y"'), True),
    (Filter(json_path="$.a.b[1].c == x"), False),
    (Filter(json_path="$.n == 3"), True),
    (Filter(json_path="$.a.b[5]"), False),
    (Filter(json_path="$.n", key_contains="user"), True),
    (Filter(json_path="$.n", key_contains="other"), False),
])
def test_filters(match, matches):
    assert match.matches(MESSAGE) is matches


def test_exports():
    (line,) = export_jsonl([MESSAGE], "text").splitlines()
    assert json.loads(line) == {"partition": 0, "offset": 7, "timestamp": 1_700_000_000_000,
                                "timestamp_type": "CreateTime", "key": "user-1", "value": MESSAGE.value.decode(),
                                "headers": {"trace": "abc", "empty": None}, "size": MESSAGE.size}
    header, row = export_csv([MESSAGE], "hex").splitlines()
    assert header == "partition,offset,timestamp,timestamp_type,key,value,headers,size"
    assert row.startswith('0,7,1700000000000,CreateTime,75 73 65 72 2d 31,')
    assert MESSAGE.size == 6 + len(MESSAGE.value) + len("trace") + 3 + len("empty")
