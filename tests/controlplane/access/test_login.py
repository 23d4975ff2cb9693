"""Login hardening: failed logins are throttled per user name and address (console and POST /api/token/), the
session cookie is HttpOnly and SameSite, forms need their CSRF token, answers carry security headers, and under
STROM_PRODUCTION=1 `manage.py check --deploy` reports nothing."""

import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.test import Client
from rest_framework.test import APIClient

from controlplane.access.actions import Role
from tests.conftest import PASSWORD, ROOT, user_with_role


@pytest.fixture
def alice(db):
    return user_with_role("alice", Role.OPERATOR)


def login(client: Client, password: str):
    return client.post("/login/", {"username": "alice", "password": password})


def test_failed_logins_lock_the_user_name_out_from_that_address(alice):
    attacker = Client(REMOTE_ADDR="203.0.113.9")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert b"didn't match" in login(attacker, "guess").content
    locked = login(attacker, "guess")
    assert locked.status_code == 429
    assert "Too many failed logins for this user name from your address; try again in 15 minutes." in \
        locked.content.decode()
    assert login(attacker, PASSWORD).status_code == 429  # even the right password, during the cool-off
    token = APIClient(REMOTE_ADDR="203.0.113.9").post("/api/token/", {"username": "alice", "password": PASSWORD})
    assert token.status_code == 429 and "Too many failed logins" in token.json()["detail"]

    elsewhere = Client(REMOTE_ADDR="198.51.100.7")  # alice at her desk is not locked out by the attacker
    assert login(elsewhere, PASSWORD).status_code == 302


def test_failed_token_requests_count_towards_the_lockout(alice):
    client = APIClient(REMOTE_ADDR="203.0.113.10")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert client.post("/api/token/", {"username": "alice", "password": "guess"}).status_code == 400
    assert client.post("/api/token/", {"username": "alice", "password": "guess"}).status_code == 429
    assert client.post("/api/token/", {"username": "alice", "password": PASSWORD}).status_code == 429
    assert login(Client(REMOTE_ADDR="203.0.113.10"), PASSWORD).status_code == 429


def test_session_cookie_and_security_headers(alice):
    client = Client()
    response = login(client, PASSWORD)
    cookie = response.cookies[settings.SESSION_COOKIE_NAME]
    assert cookie["httponly"] is True and cookie["samesite"] == "Lax"
    page = client.get("/")
    assert page["X-Frame-Options"] == "DENY"
    assert page["X-Content-Type-Options"] == "nosniff"
    assert page["Referrer-Policy"] == "same-origin"
    assert page["Cross-Origin-Opener-Policy"] == "same-origin"


@pytest.mark.parametrize("path", ["/login/", "/groups/etl/delete/", "/brokers/elect-leaders/", "/tokens/new/"])
def test_every_form_needs_its_csrf_token(alice, path):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = client.post(path, {"username": "alice", "password": PASSWORD, "confirm": "yes",
                                  "election_type": "preferred", "name": "x"})
    assert response.status_code == 403 and b"CSRF" in response.content


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    """A management command in a clean environment (none of the test run's settings, e.g. the browser tests'
    DJANGO_ALLOW_ASYNC_UNSAFE, which the deploy check rightly refuses)."""
    child_env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "STROM_VAR_DIR")}
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env={**child_env, **env},
                          capture_output=True, text=True, timeout=120)


def test_production_settings_pass_the_deploy_check():
    checked = manage("check", "--deploy", "--fail-level", "DEBUG", STROM_PRODUCTION="1",
                     STROM_ALLOWED_HOSTS="strom.example.com", STROM_DEBUG="1")
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip() == "System check identified no issues (0 silenced)."
    development = manage("check", "--deploy")  # without the switch: plain HTTP, no HSTS
    assert "security.W004" in development.stderr and "security.W012" in development.stderr


def test_production_needs_its_host_names():
    refused = manage("check", STROM_PRODUCTION="1")
    assert refused.returncode != 0
    assert "STROM_PRODUCTION=1 needs STROM_ALLOWED_HOSTS" in refused.stderr
