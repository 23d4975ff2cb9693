import pytest

from kafkaspec.topic_config import LONG_MAX, TOPIC_CONFIGS, InvalidConfigError, broker_defaults, resolve


def test_kafka_defaults():
    effective = resolve({})
    assert set(effective) == set(TOPIC_CONFIGS)
    assert effective["retention.ms"] == 604_800_000
    assert effective["segment.bytes"] == 1_073_741_824
    assert effective["cleanup.policy"] == ("delete",)
    assert effective["min.insync.replicas"] == 1
    assert effective["flush.messages"] == LONG_MAX
    assert effective["unclean.leader.election.enable"] is False


@pytest.mark.parametrize(("name", "raw", "expected"), [
    ("retention.ms", "-1", -1),
    ("retention.ms", 3600000, 3_600_000),
    ("cleanup.policy", "compact,delete", ("compact", "delete")),
    ("cleanup.policy", "compact", ("compact",)),
    ("min.cleanable.dirty.ratio", "0.1", 0.1),
    ("unclean.leader.election.enable", "TRUE", True),
    ("message.timestamp.type", "LogAppendTime", "LogAppendTime"),
    ("compression.type", "zstd", "zstd"),
])
def test_overrides_are_parsed(name, raw, expected):
    assert resolve({name: raw})[name] == expected


@pytest.mark.parametrize(("name", "raw", "message"), [
    ("retention.ms", "-2", "at least -1"),
    ("retention.ms", "soon", "Expected value to be a long"),
    ("segment.bytes", "3000000000", "32-bit integer"),
    ("segment.bytes", "13", "at least 14"),
    ("cleanup.policy", "compress", "must be one of"),
    ("cleanup.policy", "", "must not be empty"),
    ("min.cleanable.dirty.ratio", "1.5", "no more than 1"),
    ("compression.type", "brotli", "must be one of"),
    ("min.insync.replicas", "0", "at least 1"),
    ("unclean.leader.election.enable", "yes", "Expected value to be a boolean"),
    ("no.such.config", "1", "Unknown topic config"),
])
def test_invalid_overrides_are_refused(name, raw, message):
    with pytest.raises(InvalidConfigError, match=message):
        resolve({name: raw})


def test_broker_defaults_sit_between_kafka_defaults_and_overrides():
    cluster = broker_defaults({"log.retention.hours": "1", "log.segment.bytes": "1048576", "num.io.threads": "8"})
    assert cluster == {"retention.ms": 3_600_000, "segment.bytes": 1_048_576}
    effective = resolve({"segment.bytes": "2048"}, cluster)
    assert effective["retention.ms"] == 3_600_000
    assert effective["segment.bytes"] == 2048


def test_finer_broker_retention_key_wins():
    assert broker_defaults({"log.retention.hours": "1", "log.retention.ms": "5000"})["retention.ms"] == 5000


def test_render_matches_kafka_strings():
    assert TOPIC_CONFIGS["cleanup.policy"].render(("compact", "delete")) == "compact,delete"
    assert TOPIC_CONFIGS["preallocate"].render(False) == "false"
