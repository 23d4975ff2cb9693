"""The `strom` source's options: Spark's Kafka source option names, parsed and checked once (pure).

Spark lower-cases option keys (`CaseInsensitiveDict`), so every name is looked up lower-case; values are
strings. Every bad option raises `OptionError` with one line naming the option, at plan time (before any
task starts). Supported, with Spark's meaning:

- `kafka.bootstrap.servers` (required) and any other `kafka.<librdkafka key>`, passed to the client with the
  prefix stripped (`kafka.auto.offset.reset` and `kafka.enable.auto.commit` are refused: the source owns them);
- exactly one of `subscribe` (comma list), `subscribePattern` (regex, full match) or `assign`
  (`{"topic": [0, 1]}`);
- `startingOffsets` (`earliest` | `latest` | `{"t": {"0": 23, "1": -2}}`, -2 earliest, -1 latest; default
  earliest for a batch query, latest for a stream; `latest` is refused in a batch query),
  `startingTimestamp` (ms: the first offset whose timestamp is >= it) and `startingOffsetsByTimestamp`
  (`{"t": {"0": ms}}`); precedence by-timestamp, timestamp, offsets, as in Spark;
  `startingOffsetsByTimestampStrategy` (`error` | `latest`: what a partition with no record that late gets);
- batch only: `endingOffsets` (`latest` | JSON, -1 latest), `endingTimestamp`, `endingOffsetsByTimestamp`
  (a partition with no record that late ends at latest);
- `failOnDataLoss` (true), `includeHeaders` (false), `minPartitions`, `maxRecordsPerPartition`
  (Strom's default 1,000,000: larger ranges are split), `kafkaConsumer.pollTimeoutMs` (120000),
  `maxOffsetsPerTrigger` (streams), `groupIdPrefix` (`spark-kafka-source`).

Kafka options this source does not implement (`minOffsetsPerTrigger`, `maxTriggerDelay`,
`fetchOffset.numRetries`, `fetchOffset.retryIntervalMs`) are refused rather than silently ignored.
"""

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

EARLIEST = -2  # Spark's JSON offset for "the log start offset"
LATEST = -1  # Spark's JSON offset for "the high watermark"
DEFAULT_MAX_RECORDS_PER_PARTITION = 1_000_000

TopicPartition = tuple[str, int]

UNSUPPORTED = ("minOffsetsPerTrigger", "maxTriggerDelay", "fetchOffset.numRetries", "fetchOffset.retryIntervalMs")
OWNED_CLIENT_KEYS = ("auto.offset.reset", "enable.auto.commit")


class OptionError(ValueError):
    """A `strom` source or sink option is missing, malformed or contradicts another one."""


@dataclass(frozen=True)
class Bound:
    """Where offset ranges start or end. Exactly one field is set.

    `every`: EARLIEST or LATEST for every partition. `offsets`: per partition, an offset or EARLIEST/LATEST.
    `timestamp`: ms since epoch, every partition. `timestamps`: ms per partition.
    """

    every: int | None = None
    offsets: Mapping[TopicPartition, int] | None = None
    timestamp: int | None = None
    timestamps: Mapping[TopicPartition, int] | None = None

    def partitions(self) -> set[TopicPartition] | None:
        """The partitions a per-partition spec names (None for a spec that applies to every partition)."""
        spec = self.offsets if self.offsets is not None else self.timestamps
        return None if spec is None else set(spec)


@dataclass(frozen=True)
class TopicSelection:
    """Which topics to read: exactly one of `subscribe`, `pattern`, `assign` is set."""

    subscribe: tuple[str, ...] | None = None
    pattern: str | None = None
    assign: Mapping[str, tuple[int, ...]] | None = None

    def matches(self, topic: str) -> bool:
        if self.subscribe is not None:
            return topic in self.subscribe
        if self.pattern is not None:
            return re.fullmatch(self.pattern, topic) is not None
        return topic in self.assign


@dataclass(frozen=True)
class SourceOptions:
    """Every option of one `strom` read, parsed. Small and picklable: it travels to every task."""

    client: Mapping[str, str]
    topics: TopicSelection
    starting: Bound
    ending: Bound | None  # None for a stream
    fail_on_data_loss: bool = True
    include_headers: bool = False
    min_partitions: int | None = None
    max_records_per_partition: int = DEFAULT_MAX_RECORDS_PER_PARTITION
    poll_timeout_s: float = 120.0
    max_offsets_per_trigger: int | None = None
    starting_timestamp_fallback_latest: bool = False
    group_id_prefix: str = "spark-kafka-source"


@dataclass(frozen=True)
class SinkOptions:
    """Every option of one `strom` write: the client configuration and the `topic` option (which, as in
    Spark, overrides a `topic` column)."""

    client: Mapping[str, str]
    topic: str | None


def parse_source_options(options: Mapping[str, str], streaming: bool) -> SourceOptions:
    opts = {key.lower(): value for key, value in options.items()}
    for name in UNSUPPORTED:
        if name.lower() in opts:
            raise OptionError(f"option {name!r} is not supported by the strom source")
    starting = _starting_bound(opts, streaming)
    ending = None if streaming else _ending_bound(opts)
    if streaming and any(key in opts for key in ("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp")):
        raise OptionError("ending offsets (endingOffsets, endingTimestamp, …) apply to batch queries only")
    strategy = opts.get("startingoffsetsbytimestampstrategy", "error").lower()
    if strategy not in ("error", "latest"):
        raise OptionError(f"startingOffsetsByTimestampStrategy must be 'error' or 'latest', not {strategy!r}")
    return SourceOptions(
        client=client_config(opts),
        topics=_topic_selection(opts),
        starting=starting,
        ending=ending,
        fail_on_data_loss=_boolean(opts, "failOnDataLoss", True),
        include_headers=_boolean(opts, "includeHeaders", False),
        min_partitions=_positive_int(opts, "minPartitions"),
        max_records_per_partition=_positive_int(opts, "maxRecordsPerPartition") or DEFAULT_MAX_RECORDS_PER_PARTITION,
        poll_timeout_s=(_positive_int(opts, "kafkaConsumer.pollTimeoutMs") or 120_000) / 1000,
        max_offsets_per_trigger=_positive_int(opts, "maxOffsetsPerTrigger"),
        starting_timestamp_fallback_latest=strategy == "latest",
        group_id_prefix=opts.get("groupidprefix", "spark-kafka-source"),
    )


def include_headers(options: Mapping[str, str]) -> bool:
    """`includeHeaders` alone: the schema depends on it, before batch or stream options are known."""
    return _boolean({key.lower(): value for key, value in options.items()}, "includeHeaders", False)


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    opts = {key.lower(): value for key, value in options.items()}
    return SinkOptions(client=client_config(opts), topic=opts.get("topic") or None)


def client_config(opts: Mapping[str, str]) -> dict[str, str]:
    """The `kafka.*` options with the prefix stripped (librdkafka keys are lower-case, like Spark's keys)."""
    client = {key[len("kafka."):]: value for key, value in opts.items() if key.startswith("kafka.")}
    if not client.get("bootstrap.servers"):
        raise OptionError("option 'kafka.bootstrap.servers' is required")
    for key in OWNED_CLIENT_KEYS:
        if key in client:
            raise OptionError(f"option 'kafka.{key}' is not supported: the strom source manages it")
    return client


def _topic_selection(opts: Mapping[str, str]) -> TopicSelection:
    given = [key for key in ("subscribe", "subscribepattern", "assign") if opts.get(key, "").strip()]
    if len(given) != 1:
        raise OptionError("exactly one of the options 'subscribe', 'subscribePattern' or 'assign' must be set"
                          + (f" (got {', '.join(given)})" if given else ""))
    key, value = given[0], opts[given[0]].strip()
    if key == "subscribe":
        topics = tuple(topic.strip() for topic in value.split(",") if topic.strip())
        return TopicSelection(subscribe=topics)
    if key == "subscribepattern":
        try:
            re.compile(value)
        except re.error as exc:
            raise OptionError(f"subscribePattern {value!r} is not a valid regular expression: {exc}") from None
        return TopicSelection(pattern=value)
    spec = _json_object(value, "assign")
    try:
        return TopicSelection(assign={topic: tuple(int(p) for p in parts) for topic, parts in spec.items()})
    except (TypeError, ValueError):
        raise OptionError(f'assign must look like {{"topic": [0, 1]}}, not {value}') from None


def _starting_bound(opts: Mapping[str, str], streaming: bool) -> Bound:
    if "startingoffsetsbytimestamp" in opts:
        return Bound(timestamps=_per_partition(opts["startingoffsetsbytimestamp"], "startingOffsetsByTimestamp"))
    if "startingtimestamp" in opts:
        return Bound(timestamp=_integer(opts["startingtimestamp"], "startingTimestamp"))
    value = opts.get("startingoffsets", "latest" if streaming else "earliest").strip()
    bound = _offsets_bound(value, "startingOffsets")
    if not streaming and bound.every == LATEST:
        raise OptionError("startingOffsets 'latest' is not allowed in a batch query")
    if not streaming and bound.offsets and LATEST in bound.offsets.values():
        raise OptionError("startingOffsets -1 (latest) is not allowed in a batch query")
    return bound


def _ending_bound(opts: Mapping[str, str]) -> Bound:
    if "endingoffsetsbytimestamp" in opts:
        return Bound(timestamps=_per_partition(opts["endingoffsetsbytimestamp"], "endingOffsetsByTimestamp"))
    if "endingtimestamp" in opts:
        return Bound(timestamp=_integer(opts["endingtimestamp"], "endingTimestamp"))
    bound = _offsets_bound(opts.get("endingoffsets", "latest").strip(), "endingOffsets")
    if bound.every == EARLIEST or (bound.offsets and EARLIEST in bound.offsets.values()):
        raise OptionError("endingOffsets 'earliest' (-2) is not allowed")
    return bound


def _offsets_bound(value: str, name: str) -> Bound:
    if value.lower() == "earliest":
        return Bound(every=EARLIEST)
    if value.lower() == "latest":
        return Bound(every=LATEST)
    offsets = _per_partition(value, name)
    bad = {tp: offset for tp, offset in offsets.items() if offset < EARLIEST}
    if bad:
        raise OptionError(f"{name}: offsets must be >= 0, -1 (latest) or -2 (earliest), not {bad}")
    return Bound(offsets=offsets)


def _per_partition(value: str, name: str) -> dict[TopicPartition, int]:
    spec = _json_object(value, name)
    try:
        return {(topic, int(partition)): int(number)
                for topic, partitions in spec.items() for partition, number in partitions.items()}
    except (AttributeError, TypeError, ValueError):
        raise OptionError(f'{name} must be earliest, latest or JSON like {{"topic": {{"0": 23}}}}, '
                          f"not {value}") from None


def _json_object(value: str, name: str) -> dict:
    try:
        spec = json.loads(value)
    except json.JSONDecodeError:
        spec = None
    if not isinstance(spec, dict):
        raise OptionError(f"{name} must be a JSON object, not {value!r}")
    return spec


def _integer(value: str, name: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise OptionError(f"{name} must be an integer (ms since epoch), not {value!r}") from None


def _positive_int(opts: Mapping[str, str], name: str) -> int | None:
    value = opts.get(name.lower())
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number <= 0:
        raise OptionError(f"option {name!r} must be a positive integer, not {value!r}")
    return number


def _boolean(opts: Mapping[str, str], name: str, default: bool) -> bool:
    value = opts.get(name.lower())
    if value is None:
        return default
    if value.strip().lower() not in ("true", "false"):
        raise OptionError(f"option {name!r} must be true or false, not {value!r}")
    return value.strip().lower() == "true"
