"""Non-Python clients against a real standalone broker (one per module), each client's request versions
recorded from the broker's log into `var/clients/requests/<client>.json`."""

import json

import pytest

from tests.support.broker import REPO_ROOT, standalone_broker
from tests.support.clients import requests_seen

REQUESTS_DIR = REPO_ROOT / "var" / "clients" / "requests"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with standalone_broker(tmp_path_factory.mktemp("broker"),
                           overrides={"group.initial.rebalance.delay.ms": "0"}) as running:
        yield running
        errors = [line for line in running.log_file.read_text().splitlines() if " ERROR " in line]
        assert not errors, "\n".join(errors)


def record_requests(broker, name: str, client_id_prefix: str) -> dict[str, list[int]]:
    """The request versions the client sent (from the broker's log), also written for the README's table."""
    seen = requests_seen(broker.log_file, client_id_prefix)
    REQUESTS_DIR.mkdir(parents=True, exist_ok=True)
    (REQUESTS_DIR / f"{name}.json").write_text(json.dumps(seen, indent=1) + "\n")
    print(f"{name}: {seen}")
    return seen
