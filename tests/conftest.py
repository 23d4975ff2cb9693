"""Fixtures shared across the suite: metadata-store users and a small cluster, the project's WSGI app on a
live port, and a headless Chromium."""

import os
import threading
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient
from werkzeug.serving import make_server

from controlplane.access.actions import Role
from controlplane.access.roles import set_role
from controlplane.cluster.models import Broker, BrokerState
from controlplane.topics.models import NO_LEADER, Partition, Topic

PASSWORD = "correct horse battery"
ROOT = Path(__file__).resolve().parents[1]
SCREENSHOTS = ROOT / "var" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
# Without these, Chromium keeps trying to reach Google's hosts, which this machine's closed network refuses.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
                 "--disable-background-networking", "--disable-component-update"]


_DATABASE_FIXTURES = {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback",
                      "live_server"}


def pytest_collection_modifyitems(items):
    """A test using the database gets every database: broker liveness has its own on SQLite
    (`controlplane.liveness.router`), and whatever registers or heartbeats a broker writes it."""
    for item in items:
        marker = item.get_closest_marker("django_db")
        if marker is None and not _DATABASE_FIXTURES & set(item.fixturenames):
            continue
        kwargs = dict(marker.kwargs) if marker is not None else {}
        if kwargs.get("databases") is None:
            kwargs["databases"] = "__all__"
            item.add_marker(pytest.mark.django_db(*(marker.args if marker else ()), **kwargs), append=False)


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Django's PBKDF2 (a million rounds, about a second per hash on a loaded 2-core machine) would dominate the
    tests that create users; what they test does not depend on the hash."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def live_app(transactional_db):
    """`controlplane.wsgi.application` (Django + dashboard) served by a threaded server on 127.0.0.1."""
    from django.db import connections

    from controlplane.wsgi import application

    def app_closing_connections(environ, start_response):
        # Each request runs in its own thread; close that thread's connections so the test database can
        # be dropped afterwards (PostgreSQL refuses while sessions remain).
        try:
            return application(environ, start_response)
        finally:
            connections.close_all()

    server = make_server("127.0.0.1", 0, app_closing_connections, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join()


@pytest.fixture(scope="module")
def chromium():
    """Debian's Chromium driven by Playwright (Playwright's own browser download is not available here).

    Module-scoped: Playwright's sync API runs an event loop in this thread while it is open, which would
    break later tests that call asyncio.run().
    """
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop in this thread; the ORM calls tests make between page
    # actions are still plain synchronous calls.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium):
    context = chromium.new_context(viewport={"width": 1366, "height": 850})
    page = context.new_page()
    page.set_default_timeout(20_000)
    yield page
    context.close()



def user_with_role(username: str, role: Role | None):
    """A user (password PASSWORD) holding `role` (None: no role)."""
    created = get_user_model().objects.create_user(username, password=PASSWORD)
    set_role(created, role)
    return created


@pytest.fixture
def user(db):
    """The user most tests act as: 'operator', with the operator role."""
    return user_with_role("operator", Role.OPERATOR)


@pytest.fixture
def local_superuser(db, settings):
    """The superuser `manage.py ensure_admin` creates, which management commands act as by default."""
    return get_user_model().objects.create_superuser(settings.STROM_ADMIN_USER, password=PASSWORD)


@pytest.fixture
def api_client(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def cluster(db):
    """3 brokers (2 running, 1 fenced); topic 'orders' with 3 partitions (one under-replicated, one
    whose leader is the fenced broker) and topic 'payments' with 1 healthy partition."""
    for broker_id, state in ((1, BrokerState.RUNNING), (2, BrokerState.RUNNING), (3, BrokerState.FENCED)):
        Broker.objects.create(broker_id=broker_id, listeners=f"PLAINTEXT://127.0.0.1:{9091 + broker_id}",
                              rack=f"rack-{broker_id % 2}", state=state)
    orders = Topic.objects.create(name="orders", configs={"retention.ms": "3600000"})
    Partition.objects.create(topic=orders, partition=0, replicas=[1, 2, 3], isr=[1, 2, 3], leader=1)
    Partition.objects.create(topic=orders, partition=1, replicas=[2, 3, 1], isr=[2, 1], leader=2)
    Partition.objects.create(topic=orders, partition=2, replicas=[3, 1, 2], isr=[3, 1, 2], leader=3)
    payments = Topic.objects.create(name="payments")
    Partition.objects.create(topic=payments, partition=0, replicas=[1], isr=[1], leader=1)
    return {"brokers": 3, "running": 2, "topics": 2, "partitions": 4, "offline": 1, "under_replicated": 1,
            "no_leader": NO_LEADER}
