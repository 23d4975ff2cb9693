"""Kafka's reset specs, scopes and per-partition rule (controlplane.groups.reset), table-driven."""

from datetime import UTC, datetime

import pytest

from controlplane.core.errors import KafkaApiError
from controlplane.groups.reset import (
    PartitionOffsets,
    ResetKind,
    ResetSpec,
    Scope,
    new_offset,
    parse_datetime_ms,
    parse_duration_ms,
    parse_spec,
    parse_topic_arguments,
)


def utc_ms(*fields) -> int:
    return int(datetime(*fields, tzinfo=UTC).timestamp() * 1000)


@pytest.mark.parametrize(("text", "expected"), [
    ("2024-05-01T12:00:00.000", utc_ms(2024, 5, 1, 12)),  # no zone: UTC, as Kafka appends 'Z'
    ("2024-05-01T12:00:00", utc_ms(2024, 5, 1, 12)),
    ("2024-05-01T12:00:00.250Z", utc_ms(2024, 5, 1, 12) + 250),
    ("2024-05-01T14:00:00+02:00", utc_ms(2024, 5, 1, 12)),
    ("2024-05-01T07:30:00.5-0430", utc_ms(2024, 5, 1, 12) + 500),
    ("2024-05-01T13:00:00+01", utc_ms(2024, 5, 1, 12)),
])
def test_datetimes_in_kafkas_format(text, expected):
    assert parse_datetime_ms(text) == expected


@pytest.mark.parametrize("text", ["2024-05-01", "2024-05-01 12:00:00", "2024-05-01T12:00", "yesterday",
                                  "2024-13-01T00:00:00", "2024-05-01T12:00:00+2"])
def test_bad_datetimes_are_refused(text):
    with pytest.raises(KafkaApiError) as e:
        parse_datetime_ms(text)
    assert e.value.status == 400 and text in e.value.message


@pytest.mark.parametrize(("text", "expected_ms"), [
    ("PT30M", 30 * 60_000),
    ("P1DT2H", 26 * 3_600_000),
    ("PT0.5S", 500),
    ("PT1.25S", 1250),
    ("pt15s", 15_000),
    ("P2D", 2 * 86_400_000),
    ("-PT1H", -3_600_000),
    ("PT-6.5S", -6500),
    ("PT1H-10M", 50 * 60_000),
])
def test_durations_as_java_parses_them(text, expected_ms):
    assert parse_duration_ms(text) == expected_ms


@pytest.mark.parametrize("text", ["P", "PT", "P1DT", "1H", "PT1.5H", "P1W", "P1Y", "30m", ""])
def test_bad_durations_are_refused(text):
    with pytest.raises(KafkaApiError) as e:
        parse_duration_ms(text)
    assert e.value.status == 400


@pytest.mark.parametrize(("kind", "value", "expected"), [
    ("to-earliest", None, ResetSpec(ResetKind.TO_EARLIEST)),
    ("--to-latest", "", ResetSpec(ResetKind.TO_LATEST)),
    ("to-offset", "42", ResetSpec(ResetKind.TO_OFFSET, 42)),
    ("to-offset", 0, ResetSpec(ResetKind.TO_OFFSET, 0)),
    ("shift-by", "-3", ResetSpec(ResetKind.SHIFT_BY, -3)),
    ("shift-by", 7, ResetSpec(ResetKind.SHIFT_BY, 7)),
    ("to-datetime", "2024-05-01T12:00:00Z", ResetSpec(ResetKind.TO_DATETIME, utc_ms(2024, 5, 1, 12))),
    ("by-duration", "PT1H", ResetSpec(ResetKind.BY_DURATION, 3_600_000)),
])
def test_specs(kind, value, expected):
    assert parse_spec(kind, value) == expected


@pytest.mark.parametrize(("kind", "value", "message"), [
    ("to-somewhere", None, "Unknown reset spec 'to-somewhere'"),
    ("to-earliest", "5", "--to-earliest takes no value"),
    ("to-offset", None, "--to-offset needs a value"),
    ("to-offset", "-1", "--to-offset must be 0 or more"),
    ("to-offset", "ten", "--to-offset needs an integer"),
    ("shift-by", "1.5", "--shift-by needs an integer"),
    ("shift-by", True, "--shift-by needs an integer"),
    ("by-duration", "", "--by-duration needs a value"),
])
def test_bad_specs(kind, value, message):
    with pytest.raises(KafkaApiError) as e:
        parse_spec(kind, value)
    assert e.value.error == "INVALID_REQUEST" and e.value.message.startswith(message)


def test_time_based_specs_give_a_timestamp():
    now = utc_ms(2024, 5, 1, 12)
    assert parse_spec("by-duration", "PT1H").timestamp_ms(now) == utc_ms(2024, 5, 1, 11)
    assert parse_spec("to-datetime", "2024-01-01T00:00:00").timestamp_ms(now) == utc_ms(2024, 1, 1)
    assert parse_spec("to-offset", "3").timestamp_ms(now) is None


@pytest.mark.parametrize(("arguments", "expected"), [
    (["orders"], (("orders", None),)),
    (["orders:0,2"], (("orders", (0, 2)),)),
    (["orders:2", "orders:0,2", "payments"], (("orders", (0, 2)), ("payments", None))),
    (["orders:1", "orders"], (("orders", None),)),  # the whole topic wins
    (["orders", "orders:1"], (("orders", None),)),
])
def test_topic_arguments(arguments, expected):
    assert parse_topic_arguments(arguments) == Scope(topics=expected)


@pytest.mark.parametrize("argument", [":0", "orders:", "orders:a", "orders:0,,1", "orders:-1"])
def test_bad_topic_arguments(argument):
    with pytest.raises(KafkaApiError) as e:
        parse_topic_arguments([argument])
    assert argument in e.value.message


def test_scope_is_all_topics_or_named_topics():
    assert Scope(all_topics=True).all_topics
    for bad in (dict(), dict(all_topics=True, topics=(("t", None),))):
        with pytest.raises(KafkaApiError):
            Scope(**bad)


# Partition with log start 10, log end 20; committed offset 15; the first record at/after the timestamp is 17.
OFFSETS = PartitionOffsets(current=15, log_start=10, log_end=20, by_timestamp=17)
HIGHER = "New offset ({}) is higher than latest offset for topic partition t-0. Value will be set to 20"
LOWER = "New offset ({}) is lower than earliest offset for topic partition t-0. Value will be set to 10"
FALLBACK = "Partition t-0 has no record at or after the timestamp. Falling back to latest known offset."


@pytest.mark.parametrize(("spec", "offsets", "expected"), [
    (ResetSpec(ResetKind.TO_EARLIEST), OFFSETS, (10, None)),
    (ResetSpec(ResetKind.TO_LATEST), OFFSETS, (20, None)),
    (ResetSpec(ResetKind.TO_OFFSET, 12), OFFSETS, (12, None)),
    (ResetSpec(ResetKind.TO_OFFSET, 20), OFFSETS, (20, None)),
    (ResetSpec(ResetKind.TO_OFFSET, 25), OFFSETS, (20, HIGHER.format(25))),
    (ResetSpec(ResetKind.TO_OFFSET, 3), OFFSETS, (10, LOWER.format(3))),
    (ResetSpec(ResetKind.SHIFT_BY, -2), OFFSETS, (13, None)),
    (ResetSpec(ResetKind.SHIFT_BY, 5), OFFSETS, (20, None)),
    (ResetSpec(ResetKind.SHIFT_BY, 9), OFFSETS, (20, HIGHER.format(24))),
    (ResetSpec(ResetKind.SHIFT_BY, -9), OFFSETS, (10, LOWER.format(6))),
    (ResetSpec(ResetKind.TO_DATETIME, 1), OFFSETS, (17, None)),
    (ResetSpec(ResetKind.BY_DURATION, 1), OFFSETS, (17, None)),
    (ResetSpec(ResetKind.TO_DATETIME, 1), PartitionOffsets(15, 10, 20, by_timestamp=-1), (20, FALLBACK)),
    (ResetSpec(ResetKind.TO_EARLIEST), PartitionOffsets(None, 10, 20), (10, None)),
    (ResetSpec(ResetKind.TO_OFFSET, 0), PartitionOffsets(None, 0, 0), (0, None)),
])
def test_new_offset(spec, offsets, expected):
    assert new_offset(spec, offsets, "t-0") == expected


def test_shift_by_needs_a_committed_offset():
    with pytest.raises(KafkaApiError) as e:
        new_offset(ResetSpec(ResetKind.SHIFT_BY, 1), PartitionOffsets(None, 0, 5), "t-0")
    assert e.value.message == "Cannot shift offset for partition t-0 since there is no current committed offset"
