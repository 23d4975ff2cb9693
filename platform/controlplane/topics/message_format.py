"""What the message browser shows and matches, pure: a message's bytes decoded as text, JSON (pretty), hex or
base64; the filters (key or value substring, header, JSON path); the export rows (JSON lines, CSV)."""

import base64
import csv
import io
import json
import re
from dataclasses import dataclass

__all__ = ("DECODINGS", "Filter", "Message", "decode", "export_csv", "export_jsonl", "json_path_value",
           "parse_json_path")

DECODINGS = ("text", "json", "hex", "base64")
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
    return value if isinstance(value, str) else json.dumps(value)


@dataclass(frozen=True)
class Filter:
    """Every given condition must hold. Substrings match the raw bytes as UTF-8 (case-sensitive); `header` is a
    header name, optionally with `=value-substring`; `json_path` as `parse_json_path`."""

    key_contains: str = ""
    value_contains: str = ""
    header: str = ""
    json_path: str = ""

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
                document = json.loads(message.value or b"")
            except ValueError:
                return False
            found = json_path_value(document, self._path[0])
            if found is _MISSING or (self._path[1] is not None and _as_text(found) != _as_text(self._path[1])):
                return False
        return True


def _row(message: Message, decoding: str) -> dict:
    return {"partition": message.partition, "offset": message.offset, "timestamp": message.timestamp_ms,
            "timestamp_type": message.timestamp_type, "key": decode(message.key, decoding),
            "value": decode(message.value, decoding),
            "headers": {k: decode(v, decoding) for k, v in message.headers}, "size": message.size}


def export_jsonl(messages: list[Message], decoding: str) -> str:
    """One JSON object a line (keys/values decoded as chosen; `timestamp` in ms since the epoch)."""
    return "".join(json.dumps(_row(m, decoding), ensure_ascii=False) + "\n" for m in messages)


def export_csv(messages: list[Message], decoding: str) -> str:
    """partition, offset, timestamp, timestamp_type, key, value, headers (as JSON), size."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["partition", "offset", "timestamp", "timestamp_type", "key", "value", "headers", "size"])
    for m in messages:
        row = _row(m, decoding)
        writer.writerow([row["partition"], row["offset"], row["timestamp"], row["timestamp_type"], row["key"],
                         row["value"], json.dumps(row["headers"], ensure_ascii=False), row["size"]])
    return out.getvalue()
