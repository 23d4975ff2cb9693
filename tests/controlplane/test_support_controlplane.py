"""tests/support/controlplane.py starts a real control plane that brokers can use, and survives restarts."""

import threading

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

        # Broker 1 sends no heartbeats while broker 2 does (sessions only run while heartbeats arrive): the
        # controller fences broker 1; a long poll wakes on that change.
        status, second = cp.call("POST", "/internal/v1/brokers/register",
                                 {"broker_id": 2, "listeners": "PLAINTEXT://127.0.0.1:19093", "rack": None,
                                  "log_dirs": []})
        assert status == 200
        stop = threading.Event()

        def heartbeat_broker_2() -> None:
            while not stop.wait(0.1):
                cp.call("POST", "/internal/v1/brokers/2/heartbeat",
                        {"registration_epoch": second["registration_epoch"], "shutting_down": False})

        beating = threading.Thread(target=heartbeat_broker_2, daemon=True)
        beating.start()
        try:
            image = wait_until(lambda: (lambda i: i if i["brokers"][0]["state"] == "fenced" else None)(
                cp.metadata()), timeout_s=10, message="broker 1 fenced")
        finally:
            stop.set()
            beating.join()
        assert image["brokers"][1]["state"] == "running"
        assert {p["leader"] for p in image["topics"][0]["partitions"]} == {-1}

        # The web process dies and comes back on the same port and database. The version is read again first:
        # an image's version is read before its data, so the fencing image may carry the version before it.
        version = cp.metadata()["metadata_version"]
        cp.kill_web()
        assert not cp.web_answers()
        cp.start_web()
        assert cp.metadata()["metadata_version"] == version

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
