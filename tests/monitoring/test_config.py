"""Monitor settings (monitoring.config): Burrow's key names, defaults and refusals."""

import pytest

from monitoring.config import ConfigError, MonitorConfig, Threshold


def test_burrow_keys_and_defaults():
    config = MonitorConfig.from_mapping({
        "bootstrap-servers": "b:9092", "offset-refresh": 5, "intervals": 12, "min-distance": 1,
        "expire-group": 3600, "group-denylist": "^console-", "allowed-lag": 1, "minimum-complete": 0.5,
        "thresholds": [{"group": "billing-*", "max-lag-seconds": 300}]})
    assert (config.offset_refresh_s, config.intervals, config.min_distance_s, config.expire_group_s) == (5, 12, 1, 3600)
    assert (config.group_denylist, config.allowed_lag, config.minimum_complete) == ("^console-", 1, 0.5)
    assert config.thresholds == (Threshold(group="billing-*", max_lag_seconds=300),)
    assert (config.evaluation_interval_ms, config.min_stop_grace_ms) == (5000, 15000)
    assert (config.samples_topic, config.samples_retention_ms, config.samples_partitions) == (
        "__strom_lag_samples", 7 * 86_400_000, 3)


@pytest.mark.parametrize(("values", "message"), [
    ({}, "bootstrap-servers"),
    ({"bootstrap-servers": "b", "intervals": 0}, "intervals must be at least 1"),
    ({"bootstrap-servers": "b", "offset-refresh": 0}, "offset-refresh must be positive"),
    ({"bootstrap-servers": "b", "minimum-complete": 1.5}, "minimum-complete"),
    ({"bootstrap-servers": "b", "group-allowlist": "("}, "group-allowlist is not a regular expression"),
    ({"bootstrap-servers": "b", "cluster": "a b"}, "cluster must be a name"),
    ({"bootstrap-servers": "b", "storage": {}}, "unknown setting"),
    ({"bootstrap-servers": "b", "thresholds": [{"group": "g"}]}, "neither max-lag nor max-lag-seconds"),
    ({"bootstrap-servers": "b", "thresholds": [{"colour": "red"}]}, "bad threshold"),
])
def test_refusals(values, message):  # not `settings`: that name is pytest-django's fixture
    with pytest.raises(ConfigError, match=message):
        MonitorConfig.from_mapping(values)
