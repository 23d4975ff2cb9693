"""The topic list as operators want it (kafka-ui's columns): partitions, replication factor, under-replicated and
offline partitions from the metadata store; size on disk and messages (`TopicTotals`, kept per topic as brokers
report it) and produce rate from the metrics rollups (`controlplane.metrics`, fed by the brokers' `__strom_metrics`
rounds) — never a broker round trip.

Every column is a correlated subquery, so filtering, sorting and LIMIT/OFFSET pagination happen in the database
whatever the number of topics. A page is read in two queries (`SortedTopics`): the first computes only the sort
column, over every topic, and returns the page's ids; the second computes every column for those ids only. (In
one query the database computes every column of every topic before it sorts — SQLite always does — so a list
sorted by size cost 5x more at 10,000 topics than at 1,000.) Sizes and messages are as of the brokers' latest
rounds (≤ 10 s old while metrics flow); they are null for a topic no broker has reported yet.
"""

import datetime

from django.db.models import (
    Count,
    ExpressionWrapper,
    F,
    FloatField,
    Func,
    IntegerField,
    Max,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
)
from django.db.models.functions import Coalesce
from django.db.models.lookups import LessThan
from django.utils import timezone

from controlplane.metrics.models import TopicMetricPoint, TopicTotals

from .models import NO_LEADER, Partition, Topic

__all__ = ("ORDERINGS", "RATE_BUCKET_S", "JsonArrayLength", "SortedTopics", "topic_summaries")

RATE_BUCKET_S = 60
"""The produce rate is the messages of the last complete 1-minute rollup bucket, per second."""

ORDERINGS = ("name", "partition_count", "replication_factor", "under_replicated", "offline", "size_bytes",
             "messages", "produce_rate", "created_at")
"""Columns the list sorts by (a leading '-' sorts descending)."""


class JsonArrayLength(Func):
    """The length of a JSON array column (a partition's replicas or ISR)."""

    function = "json_array_length"
    output_field = IntegerField()

    def as_postgresql(self, compiler, connection, **extra):
        return super().as_sql(compiler, connection, function="jsonb_array_length", **extra)


def _per_topic(queryset: QuerySet, value) -> Subquery:
    """One aggregate over the rows of `queryset` for the outer topic (`topic` is its name, or its id for
    partitions): a subquery yielding one value or null."""
    return Subquery(queryset.values("topic").annotate(value=value).values("value")[:1])


def topic_summaries(name_contains: str = "", ordering: str = "name", now: datetime.datetime | None = None) -> QuerySet:
    """Topics annotated with `partition_count`, `replication_factor` (largest replica set, as Kafka's tools
    show during a reassignment), `under_replicated` and `offline` (partition counts), `size_bytes` (all replicas,
    bytes), `messages` (Σ log end − log start over partitions, as their leaders reported) and `produce_rate`
    (messages/s).

    `ordering` is one of ORDERINGS, optionally prefixed with '-' (descending); topics not reported yet (null) come
    last either way, ties by name. Raises ValueError for any other ordering."""
    if ordering.removeprefix("-") not in ORDERINGS:
        raise ValueError(f"cannot sort topics by {ordering!r}; choose one of {', '.join(ORDERINGS)}")
    now = now or timezone.now()
    last_minute = datetime.datetime.fromtimestamp((now.timestamp() // RATE_BUCKET_S - 1) * RATE_BUCKET_S,
                                                  tz=datetime.UTC)
    partitions = Partition.objects.filter(topic=OuterRef("pk")).order_by()
    totals = TopicTotals.objects.filter(topic=OuterRef("name")).order_by()
    queryset = Topic.objects.order_by().annotate(
        partition_count=Coalesce(_per_topic(partitions, Count("*")), 0),
        replication_factor=Coalesce(_per_topic(partitions, Max(JsonArrayLength("replicas"))), 0),
        under_replicated=Coalesce(_per_topic(partitions, Count(
            "pk", filter=LessThan(JsonArrayLength("isr"), JsonArrayLength("replicas")))), 0),
        offline=Coalesce(_per_topic(partitions, Count("pk", filter=Q(leader=NO_LEADER))), 0),
        size_bytes=Subquery(totals.values("size_bytes")[:1]),
        messages=Subquery(totals.values("messages")[:1]),
        produce_rate=Coalesce(Subquery(
            TopicMetricPoint.objects.filter(topic=OuterRef("name"), resolution=RATE_BUCKET_S, start=last_minute)
            .annotate(rate=ExpressionWrapper(F("messages_in") * 1.0 / RATE_BUCKET_S, output_field=FloatField()))
            .values("rate")[:1]), Value(0.0), output_field=FloatField()),
    )
    if name_contains:
        queryset = queryset.filter(name__icontains=name_contains)
    column = F(ordering.removeprefix("-"))
    return queryset.order_by(column.desc(nulls_last=True) if ordering.startswith("-") else column.asc(nulls_last=True),
                             "name")


class SortedTopics:
    """A (filtered) `topic_summaries` queryset as Django's Paginator and DRF's pagination slice it: a slice's ids
    come from a query that selects only the primary key (so only the sort column is computed, for every topic),
    then its rows from a query for those ids (every column, for the slice's topics only), in the first's order."""

    def __init__(self, summaries: QuerySet):
        self.summaries = summaries

    def count(self) -> int:
        return self.summaries.count()

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, index: slice) -> list[Topic]:
        if not isinstance(index, slice):
            raise TypeError("SortedTopics is read a slice (a page) at a time")
        ids = list(self.summaries.values_list("pk", flat=True)[index])
        rows = {topic.pk: topic for topic in self.summaries.filter(pk__in=ids)}
        return [rows[pk] for pk in ids if pk in rows]
