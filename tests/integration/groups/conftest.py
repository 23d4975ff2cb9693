"""One standalone broker per module, with the group settings the group tests rely on: the default
`group.min.session.timeout.ms` (6000) lets consumers use a 6 s session, and a 1 s initial rebalance delay
lets members started together join one generation."""

import pytest

from tests.support.broker import standalone_broker

GROUP_OVERRIDES = {"group.initial.rebalance.delay.ms": "1000"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with standalone_broker(tmp_path_factory.mktemp("broker"), GROUP_OVERRIDES) as running:
        yield running
