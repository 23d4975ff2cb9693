"""tests/support/controlplane.py starts a real control plane that brokers can use, and survives restarts."""

from tests.support.controlplane import control_plane
from tests.support.polling import wait_until


def test_real_control_plane_registers_fences_and_restarts(tmp_path):
    env = {"STROM_BROKER_SESSION_TIMEOUT_MS": "600", "STROM_CONTROLLER_LEASE_MS": "1000"}
    with control_plane(tmp_path, env) as cp:
        assert cp.call("GET", "/internal/v1/metadata", secret="wrong")[0] == 401
        status, registered = cp.call("POST", "/internal/v1/brokers/register",
                                     {"broker_id": 1, "listeners": "PLAINTEXT://127.0.0.1:19092", "rack": None,
                                      "log_dirs": []})
        assert status == 200 and registered["registration_epoch"] == 1
        status, topic = cp.call("POST", "/internal/v1/topics", {"name": "t", "num_partitions": 2})
        assert status == 200 and [p["leader"] for p in topic["partitions"]] == [1, 1]

        # No heartbeats: the controller fences the broker; a long poll wakes on that change.
        image = cp.metadata(min_version=registered["metadata_version"] + 2, wait_ms=10_000)
        assert image["brokers"][0]["state"] == "fenced"
        assert {p["leader"] for p in image["topics"][0]["partitions"]} == {-1}

        # The web process dies and comes back on the same port and database.
        cp.kill_web()
        assert not cp.web_answers()
        cp.start_web()
        assert cp.metadata()["metadata_version"] == image["metadata_version"]

        # The controller dies; a new one takes over once the lease expired, with a higher epoch.
        epoch = cp.wait_for_controller()
        cp.kill_controller()
        cp.start_controller()
        assert cp.wait_for_controller(min_epoch=epoch + 1) == epoch + 1
        status, _ = cp.call("POST", "/internal/v1/brokers/register",
                            {"broker_id": 1, "listeners": "PLAINTEXT://127.0.0.1:19092", "rack": None, "log_dirs": []})
        assert status == 200
        wait_until(lambda: {p["leader"] for p in cp.metadata()["topics"][0]["partitions"]} == {1},
                   timeout_s=10, message="broker 1 leading again after re-registering")
