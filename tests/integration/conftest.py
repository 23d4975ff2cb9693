"""One real standalone broker per test module (module-scoped), shared by that module's tests."""

import uuid

import pytest

from tests.support.broker import standalone_broker


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with standalone_broker(tmp_path_factory.mktemp("broker")) as running:
        yield running


@pytest.fixture
def topic_name(request) -> str:
    """A fresh topic name per test (topics are auto-created or created by the test)."""
    return f"{request.node.name[:40].replace('[', '-').replace(']', '')}-{uuid.uuid4().hex[:8]}"
