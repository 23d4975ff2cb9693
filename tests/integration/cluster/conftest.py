"""One control plane and three brokers per test module (module-scoped), with Strom's default timings."""

import uuid

import pytest

from tests.support.cluster import broker_cluster
from tests.support.controlplane import control_plane


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cluster")
    with control_plane(directory) as plane, broker_cluster(plane, directory, 3) as running:
        yield running


@pytest.fixture
def topic_name(request) -> str:
    return f"{request.node.name[:40].replace('[', '-').replace(']', '')}-{uuid.uuid4().hex[:8]}"
