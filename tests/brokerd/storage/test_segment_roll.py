"""Time-based rolling follows Kafka's `LogSegment.timeWaitedForRoll`: a segment's span is measured in record
time (incoming batch's newest timestamp minus the segment's first batch timestamp), not by the wall clock."""

from .conftest import build_batch  # noqa: TID252

DAY_MS = 24 * 3600 * 1000
SEGMENT_MS = 7 * DAY_MS


def test_historical_batches_share_one_segment(manager_factory, clock):
    log = manager_factory().get_or_create_log("history", 0, {"segment.ms": str(SEGMENT_MS), "retention.ms": "-1"})
    thirty_days_ago = clock.now_ms() - 30 * DAY_MS
    for i in range(6):
        log.append_as_leader(build_batch([(None, b"replayed-%d" % i, thirty_days_ago + i * 1000)]), 0)
    assert [s.base_offset for s in log.segments()] == [0]


def test_segment_rolls_once_record_time_spans_segment_ms(manager_factory, clock):
    log = manager_factory().get_or_create_log("spans", 0, {"segment.ms": str(SEGMENT_MS), "retention.ms": "-1"})
    start = clock.now_ms() - 30 * DAY_MS
    log.append_as_leader(build_batch([(None, b"first", start)]), 0)
    log.append_as_leader(build_batch([(None, b"within", start + SEGMENT_MS)]), 0)
    assert [s.base_offset for s in log.segments()] == [0]
    log.append_as_leader(build_batch([(None, b"beyond", start + SEGMENT_MS + 1)]), 0)
    assert [s.base_offset for s in log.segments()] == [0, 2]


def test_wall_clock_does_not_roll_a_segment_with_timestamps(manager_factory, clock):
    log = manager_factory().get_or_create_log("idle", 0, {"segment.ms": str(SEGMENT_MS), "retention.ms": "-1"})
    log.append_as_leader(build_batch([(None, b"a", clock.now_ms())]), 0)
    clock.advance_ms(SEGMENT_MS + 1)
    log.append_as_leader(build_batch([(None, b"b", clock.now_ms() - SEGMENT_MS)]), 0)
    assert [s.base_offset for s in log.segments()] == [0]
