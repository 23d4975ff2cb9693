"""The retention report's cluster snapshot: a JSON file the caller (the control plane) writes, checked here.

    {
      "taken_at_ms": 1777874400000,            # when the sizes were measured; the report's "now"
      "topics": [{"topic": "orders", "configs": {"cleanup.policy": "delete", "retention.ms": "604800000",
                  "retention.bytes": "-1", "segment.ms": "604800000", "segment.bytes": "1073741824",
                  "min.cleanable.dirty.ratio": "0.5"}}],
      "replicas": [{"topic": "orders", "partition": 0, "broker": 1, "log_dir": "/data/1",
                    "size_bytes": 123456, "segments": 3, "leader": true, "first_dirty_offset": null}],
      "log_dirs": [{"broker": 1, "log_dir": "/data/1", "total_bytes": 500000000000,
                    "usable_bytes": 200000000000}]
    }

- `configs` are the topic's *effective* values as Kafka strings (DescribeConfigs answers, defaults
  included): `cleanup.policy`, `retention.ms` and `retention.bytes` are required; `segment.ms`,
  `segment.bytes` and `min.cleanable.dirty.ratio` are optional (they refine the flags).
- `replicas`: one per replica, sizes as DescribeLogDirs reports them; `segments`, `leader` and
  `first_dirty_offset` (the log cleaner's checkpoint, compacted topics) are optional.
- `log_dirs`: one per broker log dir; `total_bytes`/`usable_bytes` optional (DescribeLogDirs v4+).
Every record time, tombstone and lag figure comes from the cluster itself (the `strom` source), not from here.
"""

import json
from dataclasses import dataclass
from pathlib import Path


class SnapshotError(ValueError):
    """The snapshot file is missing, not JSON, or lacks a required field."""


@dataclass(frozen=True)
class Snapshot:
    """Rows ready for the retention transforms' input schemas (dicts keyed by column)."""

    taken_at_ms: int
    topics: list[dict]
    replicas: list[dict]
    log_dirs: list[dict]


def load_snapshot(path: Path) -> Snapshot:
    try:
        document = json.loads(Path(path).read_text())
    except OSError as exc:
        raise SnapshotError(f"cannot read the snapshot {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise SnapshotError(f"the snapshot {path} is not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise SnapshotError(f"the snapshot {path} must be a JSON object")
    return Snapshot(
        taken_at_ms=_field(document, "taken_at_ms", int, "snapshot"),
        topics=[_topic(item) for item in _list(document, "topics")],
        replicas=[_replica(item) for item in _list(document, "replicas")],
        log_dirs=[_log_dir(item) for item in _list(document, "log_dirs")],
    )


def _topic(item: dict) -> dict:
    name = _field(item, "topic", str, "topic")
    configs = _field(item, "configs", dict, f"topic {name!r}")
    where = f"topic {name!r} configs"
    return {
        "topic": name,
        "cleanup_policy": _config(configs, "cleanup.policy", str, where),
        "retention_ms": _config(configs, "retention.ms", int, where),
        "retention_bytes": _config(configs, "retention.bytes", int, where),
        "segment_ms": _config(configs, "segment.ms", int, where, required=False),
        "segment_bytes": _config(configs, "segment.bytes", int, where, required=False),
        "min_cleanable_dirty_ratio": _config(configs, "min.cleanable.dirty.ratio", float, where, required=False),
    }


def _replica(item: dict) -> dict:
    where = f"replica {item.get('topic')!r}-{item.get('partition')!r} on broker {item.get('broker')!r}"
    return {
        "topic": _field(item, "topic", str, where),
        "partition": _field(item, "partition", int, where),
        "broker": _field(item, "broker", int, where),
        "log_dir": _field(item, "log_dir", str, where),
        "size_bytes": _field(item, "size_bytes", int, where),
        "segments": _field(item, "segments", int, where, required=False),
        "leader": _field(item, "leader", bool, where, required=False),
        "first_dirty_offset": _field(item, "first_dirty_offset", int, where, required=False),
    }


def _log_dir(item: dict) -> dict:
    where = f"log dir {item.get('log_dir')!r} of broker {item.get('broker')!r}"
    return {
        "broker": _field(item, "broker", int, where),
        "log_dir": _field(item, "log_dir", str, where),
        "total_bytes": _field(item, "total_bytes", int, where, required=False),
        "usable_bytes": _field(item, "usable_bytes", int, where, required=False),
    }


def _list(document: dict, key: str) -> list[dict]:
    items = document.get(key)
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise SnapshotError(f"snapshot field {key!r} must be a list of objects")
    return items


def _field(item: dict, key: str, kind: type, where: str, required: bool = True):
    value = item.get(key)
    if value is None:
        if required:
            raise SnapshotError(f"{where}: field {key!r} is required")
        return None
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        raise SnapshotError(f"{where}: field {key!r} must be {kind.__name__}, not {value!r}")
    return value


def _config(configs: dict, key: str, kind: type, where: str, required: bool = True):
    value = configs.get(key)
    if value is None:
        if required:
            raise SnapshotError(f"{where}: {key!r} is required (pass the effective configs, e.g. DescribeConfigs)")
        return None
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise SnapshotError(f"{where}: {key!r} must be {kind.__name__}, not {value!r}") from None
