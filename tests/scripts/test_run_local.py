"""`make run`'s supervisor end to end: the console, controller and a 3-broker cluster come up, login works, the
brokers' loop threads run real-time (where permitted) with a short CPU slice and the rest with a long one (where the
kernel reports slices), a Kafka client's new topic gets 3 replicas; a broker killed with SIGKILL is restarted and
rejoins the ISR while no other process stopped; and Ctrl-C leaves no process behind."""

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import requests
from confluent_kafka import Producer

from scripts.run_local import BROKER_SLICE_US, CONTROL_PLANE_SLICE_US
from tests.support import sched_slices
from tests.support.polling import wait_until
from tests.support.ports import free_port, free_port_run

ROOT = Path(__file__).resolve().parents[2]


def scrape(url: str) -> str:
    """The body at `url`, or "" while nothing listens there yet."""
    try:
        return requests.get(url, timeout=10).text
    except requests.ConnectionError:
        return ""


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_make_run_serves_console_and_stops_cleanly_on_ctrl_c(tmp_path):
    http_port, redis_port, broker_port, metrics_port = free_port(), free_port(), free_port_run(3), free_port_run(3)
    env = {**os.environ, "STROM_VAR_DIR": str(tmp_path), "STROM_HTTP_PORT": str(http_port),
           "STROM_REDIS_PORT": str(redis_port), "STROM_BROKER_PORT": str(broker_port),
           "STROM_METRICS_PORT": str(metrics_port),
           "STROM_ADMIN_PASSWORD": "run-local-secret", "CELERY_BROKER_URL": f"redis://127.0.0.1:{redis_port}/0"}
    env.pop("DATABASE_URL", None)
    for command in (["migrate", "--noinput", "-v", "0"], ["ensure_admin"]):
        subprocess.run([sys.executable, "manage.py", *command], cwd=ROOT, env=env, check=True, capture_output=True)

    supervisor = subprocess.Popen([sys.executable, "scripts/run_local.py"], cwd=ROOT, env=env, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines: list[str] = []
    reader = None
    try:
        for line in supervisor.stdout:
            lines.append(line)
            if "Press Ctrl-C" in line or supervisor.poll() is not None:
                break
        output = "".join(lines)
        assert "Strom is up" in output, output
        children = {name: int(pid) for name, pid in
                    (line.split()[1::2] for line in lines if line.startswith("started "))}
        assert {"redis", "web", "controller", "worker", "beat", "metrics", "broker-1", "broker-2", "broker-3"} <= \
            set(children), output

        brokers = {pid for name, pid in children.items() if name.startswith("broker-")}
        if sched_slices.REALTIME_PERMITTED:  # a broker's loop thread (its main one) is real-time once light (a busy
            # start may have taken it out for a second): no slice to show
            wait_until(lambda: {sched_slices.policy(pid) for pid in brokers} == {os.SCHED_FIFO}, timeout_s=30,
                       message="the brokers' loop threads under SCHED_FIFO")
        if sched_slices.REPORTED:  # else a broker's loop thread asks for its own slice; the others inherit ours
            for name, pid in children.items():
                if pid not in brokers:
                    assert sched_slices.slices_ns(pid) == {CONTROL_PLANE_SLICE_US * 1000}, name
                elif not sched_slices.REALTIME_PERMITTED:
                    assert sched_slices.slice_ns(Path(f"/proc/{pid}/task/{pid}/sched")) == BROKER_SLICE_US * 1000

        base = f"http://127.0.0.1:{http_port}"
        session = requests.Session()
        assert session.get(f"{base}/dashboard/", allow_redirects=False).headers["Location"] == \
            "/login/?next=/dashboard/"
        assert session.get(f"{base}/api/schema/").status_code in (401, 403)
        session.get(f"{base}/login/")
        login = session.post(f"{base}/login/", data={"username": "admin", "password": "run-local-secret",
                                                      "csrfmiddlewaretoken": session.cookies["csrftoken"]},
                             headers={"Referer": f"{base}/login/"})
        assert login.url == f"{base}/" and "Cluster overview" in login.text
        assert session.get(f"{base}/api/schema/").text.startswith("openapi: 3")
        assert "_dash-config" in session.get(f"{base}/dashboard/").text
        running = lambda: session.get(f"{base}/api/brokers/?state=running").json()["count"] == 3  # noqa: E731
        wait_until(running, timeout_s=60, message="3 running brokers in the metadata store")

        producer = Producer({"bootstrap.servers": f"127.0.0.1:{broker_port + 2}", "acks": "all"})
        delivered = []
        producer.produce("smoke", b"hello", on_delivery=lambda err, msg: delivered.append(err))
        assert producer.flush(60) == 0 and delivered == [None]
        topic = session.get(f"{base}/api/topics/smoke/").json()
        assert topic["replication_factor"] == 3, topic
        for broker in range(3):  # a broker binds its metrics port just after it starts serving Kafka clients
            wait_until(lambda port=metrics_port + broker: "kafka_server_brokertopicmetrics_bytesin_total" in
                       scrape(f"http://127.0.0.1:{port}/metrics"), timeout_s=60,
                       message=f"broker {broker + 1}'s metrics")

        # A broker dies: the supervisor restarts it, it rejoins the ISR, nothing else stopped.
        reader = threading.Thread(target=lambda: lines.extend(supervisor.stdout), daemon=True)
        reader.start()
        os.kill(children["broker-2"], signal.SIGKILL)
        restarted = lambda: next((int(line.split()[3]) for line in lines  # noqa: E731
                                  if line.startswith("started broker-2 pid ")
                                  and int(line.split()[3]) != children["broker-2"]), None)
        new_pid = wait_until(restarted, timeout_s=60, message="broker-2 started again")
        assert any(line.startswith("broker-2 exited with status -9; restarting") for line in lines), lines
        isr_of_smoke = lambda: session.get(f"{base}/api/partitions/?topic=smoke").json()["results"][0]["isr"]  # noqa: E731
        wait_until(lambda: 2 in isr_of_smoke(), timeout_s=60, message="broker 2 back in the ISR of smoke-0")
        assert not [line for line in lines if "exited" in line and not line.startswith("broker-2 ")], lines
        assert all(group_alive(pid) for name, pid in children.items() if name != "broker-2")
        children["broker-2"] = new_pid
    finally:
        supervisor.send_signal(signal.SIGINT)
        if reader is None:
            rest, _ = supervisor.communicate(timeout=60)
        else:  # the reader owns stdout
            supervisor.wait(timeout=60)
            reader.join(10)
            rest = "".join(lines)
    assert supervisor.returncode == 0, rest
    assert "stopped." in rest
    assert not [name for name, pid in children.items() if group_alive(pid)]
