"""The browser's decodings (Avro in Confluent's wire format encoded here with fastavro), filters and exports,
table-driven."""

import datetime
import decimal
import json

import pytest

from controlplane.topics.message_format import (
    AvroSchema,
    Decoding,
    Filter,
    Message,
    decode,
    export_csv,
    export_jsonl,
    parse_json_path,
)
from tests.support.confluent_avro import confluent_avro

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


ORDER_SCHEMA = {"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "long"}, {"name": "note", "type": ["null", "string"]},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2}},
    {"name": "raw", "type": "bytes"}]}
ORDER = {"id": 42, "note": "café", "at": datetime.datetime(2024, 1, 31, 12, tzinfo=datetime.UTC),
         "price": decimal.Decimal("12.34"), "raw": b"\x00\xff"}
SHOWN = {"id": 42, "note": "café", "at": "2024-01-31T12:00:00+00:00", "price": "12.34", "raw": "\u0000\u00ff"}


def confluent(record: dict, schema_id: int = 7, schema: dict = ORDER_SCHEMA) -> bytes:
    return confluent_avro(record, schema, schema_id)


OTHER_SCHEMA = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"},
                                                              {"name": "extra", "type": "string"}]}


@pytest.mark.parametrize("data, schema_id, shown, error", [
    (confluent(ORDER), None, SHOWN, None),
    (confluent(ORDER), 7, SHOWN, None),
    (confluent(ORDER), 8, None, "schema id 7, not the given 8"),
    (b'{"id": 42}', None, None, "not in Confluent's wire format"),
    (b"\x00\x00\x07", None, None, "not in Confluent's wire format"),
    (confluent(ORDER)[:9], None, None, "does not decode with the given schema (schema id 7): EOFError"),
    (confluent(ORDER) + b"\x02", None, None, "1 bytes left after the record"),
    (confluent({"id": 1, "extra": "long text here"}, 3, OTHER_SCHEMA), None, None, "schema id 3"),
    (None, None, None, None),
])
def test_avro_values(data, schema_id, shown, error):
    value, why = Decoding("avro", AvroSchema(json.dumps(ORDER_SCHEMA), schema_id)).value(data)
    if error is None:
        assert why is None and (value is None if data is None else json.loads(value) == shown)
    else:
        assert error in why
        assert value == decode(data, "hex"), "an undecodable value is shown in hex"


@pytest.mark.parametrize("schema", [
    "{", '{"type": "recrod"}', "[1]", '{"type": "record", "name": "R", "fields": [{"name": "a"}]}', "{}",
    '{"type": "array"}', '{"type": "enum", "name": "E"}', "null",
])
def test_bad_avro_schemas(schema):
    with pytest.raises(ValueError, match="not an Avro schema"):
        AvroSchema(schema)


def test_avro_json_path_filter_reads_the_record():
    schema = AvroSchema(json.dumps(ORDER_SCHEMA))
    message = Message(0, 1, 0, "CreateTime", b"k", confluent(ORDER), ())
    assert Filter(json_path="$.id == 42", avro=schema).matches(message)
    assert not Filter(json_path="$.id == 43", avro=schema).matches(message)
    assert Filter(json_path='$.price == "12.34"', avro=schema).matches(message)
    assert not Filter(json_path="$.id", avro=schema).matches(Message(0, 2, 0, "CreateTime", b"k", b"{}", ()))


def test_exports():
    (line,) = export_jsonl([MESSAGE], Decoding("text")).splitlines()
    assert json.loads(line) == {"partition": 0, "offset": 7, "timestamp": 1_700_000_000_000,
                                "timestamp_type": "CreateTime", "key": "user-1", "value": MESSAGE.value.decode(),
                                "value_error": None, "headers": {"trace": "abc", "empty": None}, "size": MESSAGE.size}
    header, row = export_csv([MESSAGE], Decoding("hex")).splitlines()
    assert header == "partition,offset,timestamp,timestamp_type,key,value,value_error,headers,size"
    assert row.startswith('0,7,1700000000000,CreateTime,75 73 65 72 2d 31,')
    avro = Decoding("avro", AvroSchema(json.dumps(ORDER_SCHEMA)))
    (line,) = export_jsonl([MESSAGE], avro).splitlines()
    assert (json.loads(line)["key"], json.loads(line)["value_error"]) == ("user-1", "not in Confluent's wire format "
                                                                                   "(magic byte 0, 4-byte schema id)")
    assert MESSAGE.size == 6 + len(MESSAGE.value) + len("trace") + 3 + len("empty")
