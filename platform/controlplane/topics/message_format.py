"""What the message browser shows and matches, pure: a message's bytes decoded as text, JSON (pretty), hex,
base64 or Avro (Confluent's wire format, with a schema the user gives); the filters (key or value substring,
header, JSON path); the rows of a page and of its exports (JSON lines, CSV)."""

import base64
import csv
import datetime
import decimal
import io
import json
import re
import struct
import uuid
from dataclasses import dataclass

import fastavro

__all__ = ("CSV_COLUMNS", "DECODINGS", "AvroSchema", "Decoding", "Filter", "Message", "UndecodableValue", "decode",
           "export_csv", "export_jsonl", "json_path_value", "message_row", "parse_json_path")

DECODINGS = ("text", "json", "hex", "base64", "avro")
_PATH_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_-]*)|\[(\d+)\]|\[\"([^\"]*)\"\]")


@dataclass(frozen=True)
class Message:
    partition: int
    offset: int
    timestamp_ms: int
    timestamp_type: str
    """"CreateTime" or "LogAppendTime"."""
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]

    @property
    def size(self) -> int:
        """Bytes of key, value and headers (names and values)."""
        return (len(self.key or b"") + len(self.value or b"")
                + sum(len(k.encode()) + len(v or b"") for k, v in self.headers))


def decode(data: bytes | None, decoding: str) -> str | None:
    """The bytes as the user chose to see them; JSON that does not parse falls back to text."""
    if data is None:
        return None
    if decoding == "hex":
        return data.hex(" ")
    if decoding == "base64":
        return base64.b64encode(data).decode()
    text = data.decode("utf-8", errors="replace")
    if decoding == "json":
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            return text
    return text


class UndecodableValue(ValueError):
    """A value that is not what the chosen decoding expects (the reason is shown with that record only)."""


_WIRE_HEADER = struct.Struct(">bI")
"""Confluent's wire format: magic byte 0, the schema id (4 bytes, big-endian), then the Avro binary body."""


def _avro_json(value: object) -> object:
    """JSON for what fastavro returns beyond JSON's types: bytes and fixed as Avro's JSON encoding does (one
    code point per byte), logical types as text (ISO 8601 times, decimal digits, UUIDs)."""
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


class AvroSchema:
    """The writer schema of a topic's values, given as Avro JSON, with the schema id it is registered under (None:
    accept any id). Reads values in Confluent's wire format."""

    def __init__(self, schema_json: str, schema_id: int | None = None):
        try:
            self._schema = fastavro.parse_schema(json.loads(schema_json))
        except Exception as e:  # bad JSON; fastavro's SchemaParseException, UnknownType, KeyError for a missing key, …
            raise ValueError(f"not an Avro schema: {type(e).__name__}: {e}") from None
        self.schema_id = schema_id

    def read(self, data: bytes) -> object:
        """The record in `data`; raises UndecodableValue when it is not in the wire format, carries another
        schema id, or does not decode with the schema to its last byte."""
        if len(data) < _WIRE_HEADER.size or data[0] != 0:
            raise UndecodableValue("not in Confluent's wire format (magic byte 0, 4-byte schema id)")
        _, schema_id = _WIRE_HEADER.unpack_from(data)
        if self.schema_id is not None and schema_id != self.schema_id:
            raise UndecodableValue(f"schema id {schema_id}, not the given {self.schema_id}")
        body = io.BytesIO(data)
        body.seek(_WIRE_HEADER.size)
        try:
            record = fastavro.schemaless_reader(body, self._schema)
        except Exception as e:  # corrupt input makes fastavro raise EOFError, IndexError, ValueError, …
            reason = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            raise UndecodableValue(f"does not decode with the given schema (schema id {schema_id}): {reason}"
                                   ) from None
        if body.tell() != len(data):
            raise UndecodableValue(f"{len(data) - body.tell()} bytes left after the record: written with another "
                                   f"schema (schema id {schema_id})?")
        return record


@dataclass(frozen=True)
class Decoding:
    """How a page shows keys, values and header values: one of DECODINGS. `avro` decodes values with `schema` (keys
    and header values are then shown as text); a value it cannot decode is shown in hex with the reason."""

    kind: str = "text"
    schema: AvroSchema | None = None

    def value(self, data: bytes | None) -> tuple[str | None, str | None]:
        """(the value as shown, why it is not shown as asked, or None)."""
        if self.kind != "avro" or data is None:
            return decode(data, self.kind), None
        try:
            record = self.schema.read(data)
        except UndecodableValue as e:
            return decode(data, "hex"), str(e)
        return json.dumps(record, indent=2, ensure_ascii=False, default=_avro_json), None

    def other(self, data: bytes | None) -> str | None:
        """A key or header value."""
        return decode(data, "text" if self.kind == "avro" else self.kind)


def parse_json_path(expression: str) -> tuple[tuple[str | int, ...], str | None]:
    """`$.a.b[0]` or `$.a["x y"]` (optionally `== value`) → (steps, expected value as text, or None: exists).
    Raises ValueError for anything else."""
    path, _, expected = expression.partition("==")
    path = path.strip()
    if not path.startswith("$"):
        raise ValueError(f"a JSON path starts with $: {expression!r}")
    steps: list[str | int] = []
    position = 1
    for match in _PATH_STEP.finditer(path, 1):
        if match.start() != position:
            break
        name, index, quoted = match.groups()
        steps.append(int(index) if index is not None else name if name is not None else quoted)
        position = match.end()
    if position != len(path):
        raise ValueError(f"cannot read the JSON path {path!r} after {path[:position]!r} (use $.a.b[0] or $[\"a b\"])")
    value = expected.strip()
    return tuple(steps), (json.loads(value) if value.startswith('"') else value) if expected else None


_MISSING = object()


def json_path_value(document: object, steps: tuple[str | int, ...]) -> object:
    for step in steps:
        found = (isinstance(step, int) and isinstance(document, list) and step < len(document)) or \
            (isinstance(step, str) and isinstance(document, dict) and step in document)
        if not found:
            return _MISSING
        document = document[step]
    return document


def _as_text(value: object) -> str:
    """A JSON value, or an Avro record's field, as the text `== value` compares with."""
    if isinstance(value, bytes | datetime.date | datetime.time | decimal.Decimal | uuid.UUID):
        return _avro_json(value)
    return value if isinstance(value, str) else json.dumps(value, default=_avro_json)


@dataclass(frozen=True)
class Filter:
    """Every given condition must hold. Substrings match the raw bytes as UTF-8 (case-sensitive); `header` is a
    header name, optionally with `=value-substring`; `json_path` as `parse_json_path`, applied to the value as JSON,
    or with `avro` to the record it decodes to (a value that does not decode never matches)."""

    key_contains: str = ""
    value_contains: str = ""
    header: str = ""
    json_path: str = ""
    avro: AvroSchema | None = None

    def __post_init__(self):
        object.__setattr__(self, "_path", parse_json_path(self.json_path) if self.json_path else None)

    @property
    def is_empty(self) -> bool:
        return not (self.key_contains or self.value_contains or self.header or self.json_path)

    def matches(self, message: Message) -> bool:
        if self.key_contains and self.key_contains.encode() not in (message.key or b""):
            return False
        if self.value_contains and self.value_contains.encode() not in (message.value or b""):
            return False
        if self.header:
            name, has_value, wanted = self.header.partition("=")
            values = [v for k, v in message.headers if k == name]
            if not values or (has_value and not any(wanted.encode() in (v or b"") for v in values)):
                return False
        if self._path is not None:
            try:
                document = self.avro.read(message.value or b"") if self.avro else json.loads(message.value or b"")
            except ValueError:  # UndecodableValue too
                return False
            found = json_path_value(document, self._path[0])
            if found is _MISSING or (self._path[1] is not None and _as_text(found) != _as_text(self._path[1])):
                return False
        return True


def message_row(message: Message, decoding: Decoding) -> dict:
    """A message as the REST API, the console and the exports show it: `timestamp` in ms since the epoch, `headers`
    as [name, value] pairs in record order, `value_error` why the value is not shown as asked (else None)."""
    value, error = decoding.value(message.value)
    return {"partition": message.partition, "offset": message.offset, "timestamp": message.timestamp_ms,
            "timestamp_type": message.timestamp_type, "key": decoding.other(message.key), "value": value,
            "value_error": error, "headers": [[k, decoding.other(v)] for k, v in message.headers],
            "size": message.size}


def _export_row(message: Message, decoding: Decoding) -> dict:
    row = message_row(message, decoding)
    return {**row, "headers": dict(row["headers"])}


def export_jsonl(messages: list[Message], decoding: Decoding) -> str:
    """One JSON object a line: `message_row` with headers as one object."""
    return "".join(json.dumps(_export_row(m, decoding), ensure_ascii=False) + "\n" for m in messages)


CSV_COLUMNS = ("partition", "offset", "timestamp", "timestamp_type", "key", "value", "value_error", "headers",
               "size")


def export_csv(messages: list[Message], decoding: Decoding) -> str:
    """CSV_COLUMNS, headers as one JSON object."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for m in messages:
        row = _export_row(m, decoding)
        row["headers"] = json.dumps(row["headers"], ensure_ascii=False)
        writer.writerow([row[c] for c in CSV_COLUMNS])
    return out.getvalue()
