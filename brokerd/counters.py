"""Cumulative broker counters, bumped once per batch or per request (never per record).

`TopicCounters` are Kafka's BrokerTopicMetrics for one topic; `BrokerTopicMetrics` holds them per topic plus
the counters of topics already deleted, so the all-topics totals never go back (a Prometheus counter that
decreases reads as a restart). `RequestMetrics` counts requests per API and version and keeps a latency
histogram per API, from which p50/p99 are derived.

Every value only grows while the process lives and starts at 0 with it (readers detect a broker restart by
a changed start time or a value that went down). Units: bytes, records, requests, seconds.
Event loop only; a reader on another thread may see a sample that is a few increments stale.
"""

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from brokerd.protocol.api_keys import ApiKey

COUNTER_NAMES = ("bytes_in", "bytes_out", "replication_bytes_in", "replication_bytes_out", "messages_in",
                 "bytes_rejected", "produce_requests", "fetch_requests", "failed_produce_requests",
                 "failed_fetch_requests")
"""The fields of `TopicCounters`, in this order everywhere (samples, Prometheus, `__strom_metrics`)."""

LATENCY_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
"""Upper bounds (seconds) of the request latency histogram; a last, open bucket catches the rest."""


class TopicCounters:
    """Kafka's BrokerTopicMetrics of one topic on this broker.

    bytes_in / messages_in: batches appended as leader (a produce); bytes_out: batches returned to consumers;
    replication_bytes_in / _out: batches appended as follower / returned to followers' replica fetches;
    bytes_rejected: batches a produce could not append; produce_requests / fetch_requests: partition entries
    of Produce / Fetch requests that reached a replica led here; failed_*: those answered with an error other
    than a routing one (not leader, unknown partition, fenced epoch, offset out of range).
    """

    __slots__ = COUNTER_NAMES

    def __init__(self) -> None:
        for name in COUNTER_NAMES:
            setattr(self, name, 0)

    def values(self) -> tuple[int, ...]:
        return tuple(getattr(self, name) for name in COUNTER_NAMES)

    def add(self, other: "TopicCounters") -> None:
        for name in COUNTER_NAMES:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def record_fetch(self, nbytes: int, from_follower: bool, failed: bool) -> None:
        """One partition entry of a Fetch answered with `nbytes` of batches (failed: a non-routing error)."""
        self.fetch_requests += 1
        if failed:
            self.failed_fetch_requests += 1
        elif from_follower:
            self.replication_bytes_out += nbytes
        else:
            self.bytes_out += nbytes


class BrokerTopicMetrics:
    """`TopicCounters` per topic, created on first use and retired (folded into the totals) on deletion.
    Disabled (`strom.metrics.enable=false`), `topic` hands out None and nothing is counted."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._topics: dict[str, TopicCounters] = {}
        self._retired = TopicCounters()

    def topic(self, name: str) -> TopicCounters | None:
        if not self.enabled:
            return None
        counters = self._topics.get(name)
        if counters is None:
            counters = self._topics[name] = TopicCounters()
        return counters

    def retire(self, name: str) -> None:
        """The topic left this broker: its series disappear, its counts stay in the totals."""
        counters = self._topics.pop(name, None)
        if counters is not None:
            self._retired.add(counters)

    def topics(self) -> dict[str, TopicCounters]:
        return dict(self._topics)

    def totals(self) -> TopicCounters:
        total = TopicCounters()
        total.add(self._retired)
        for counters in self._topics.values():
            total.add(counters)
        return total

    def record_fetch(self, results: Iterable[tuple[str, Iterable]], from_follower: bool) -> None:
        """Count one Fetch response: `results` are (topic, partition answers), each answer with its
        `error_code` (a Kafka error code, 0 = none) and `records` (None, bytes, or a file region with
        `length` in bytes)."""
        if not self.enabled:
            return
        for topic, answers in results:
            counters = None
            for answer in answers:
                if answer.error_code in ROUTING_ERRORS:
                    continue
                if counters is None:
                    counters = self.topic(topic)
                records = answer.records
                size = 0 if records is None else len(records) if isinstance(records, bytes) else records.length
                counters.record_fetch(size, from_follower, answer.error_code != 0)


ROUTING_ERRORS = frozenset({3, 6, 1, 74, 75})
"""UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, OFFSET_OUT_OF_RANGE, FENCED_LEADER_EPOCH,
UNKNOWN_LEADER_EPOCH: the client asked the wrong broker or offset, as Kafka these are not failed requests."""


@dataclass(slots=True)
class ApiRequestStats:
    """One API: requests per version, handler failures, and a latency histogram (seconds)."""

    by_version: dict[int, int] = field(default_factory=dict)
    failures: int = 0
    bucket_counts: list[int] = field(default_factory=lambda: [0] * (len(LATENCY_BUCKETS_S) + 1))
    latency_sum_s: float = 0.0

    @property
    def count(self) -> int:
        return sum(self.bucket_counts)

    def add(self, version: int, bucket: int, latency_s: float) -> None:
        """One request of `version` that took `latency_s` s, in `bucket` of LATENCY_BUCKETS_S."""
        self.by_version[version] = self.by_version.get(version, 0) + 1
        self.bucket_counts[bucket] += 1
        self.latency_sum_s += latency_s


def request_name(api_key: int) -> str:
    """Kafka's name of an API as its RequestMetrics `request` label spells it: PRODUCE -> Produce,
    API_VERSIONS -> ApiVersions; an unknown key -> "Unknown"."""
    try:
        return "".join(word.capitalize() for word in ApiKey(api_key).name.split("_"))
    except ValueError:
        return "Unknown"


class RequestMetrics:
    """Requests per API, keyed by `request_name` (Produce, Fetch, Metadata, …), and as Kafka also every Fetch
    under FetchConsumer or FetchFollower (`RequestContext.counted_as`)."""

    def __init__(self) -> None:
        self.apis: dict[str, ApiRequestStats] = {}
        self._names: dict[int, str] = {}

    def _stats(self, api_key: int) -> ApiRequestStats:
        name = self._names.get(api_key)
        if name is None:
            name = self._names[api_key] = request_name(api_key)
        return self._named(name)

    def _named(self, name: str) -> ApiRequestStats:
        stats = self.apis.get(name)
        if stats is None:
            stats = self.apis[name] = ApiRequestStats()
        return stats

    def observe(self, api_key: int, version: int, latency_s: float, counted_as: Sequence[str] = ()) -> None:
        """One request answered (or refused) after `latency_s` seconds; also under the names `counted_as`
        (Kafka's FetchConsumer / FetchFollower beside Fetch)."""
        bucket = bisect.bisect_left(LATENCY_BUCKETS_S, latency_s)
        self._stats(api_key).add(version, bucket, latency_s)
        for name in counted_as:
            self._named(name).add(version, bucket, latency_s)

    def failed(self, api_key: int, counted_as: Sequence[str] = ()) -> None:
        """The handler raised, or the request could not be decoded (the connection was closed)."""
        self._stats(api_key).failures += 1
        for name in counted_as:
            self._named(name).failures += 1


def histogram_quantile(quantile: float, bucket_counts: Sequence[int]) -> float | None:
    """The `quantile` (0..1) of a `LATENCY_BUCKETS_S` histogram, in seconds, interpolated linearly inside the
    bucket it falls in (as Prometheus' histogram_quantile); None when the histogram is empty. The open last
    bucket answers its lower bound."""
    total = sum(bucket_counts)
    if total == 0:
        return None
    rank = quantile * total
    seen = 0
    for index, count in enumerate(bucket_counts):
        if count and seen + count >= rank:
            if index == len(LATENCY_BUCKETS_S):
                return LATENCY_BUCKETS_S[-1]
            lower = LATENCY_BUCKETS_S[index - 1] if index else 0.0
            upper = LATENCY_BUCKETS_S[index]
            return lower + (upper - lower) * max(rank - seen, 0) / count
        seen += count
    return LATENCY_BUCKETS_S[-1]
