"""API tokens: named, several per user, optional expiry, revocable, shown once, stored hashed; created on the
console's Tokens page or by POST /api/token/, and every creation and revocation audited."""

import datetime
import hashlib
import re

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from controlplane.access.actions import Role
from controlplane.access.models import ApiToken
from controlplane.audit.models import AuditEntry
from tests.conftest import PASSWORD, user_with_role


@pytest.fixture
def alice(db):
    return user_with_role("alice", Role.VIEWER)


def console(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def create_on_console(user, name: str, days: int | None = None) -> str:
    response = console(user).post("/tokens/new/", {"name": name, "expires_in_days": days or ""})
    assert response.status_code == 200, response.content
    return re.search(r'<code id="token-secret" class="secret">([^<]+)</code>', response.content.decode()).group(1)


def api_with(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    return client


def test_a_token_is_shown_once_and_stored_only_as_a_hash(alice):
    secret = create_on_console(alice, "ci")
    token = ApiToken.objects.get(user=alice)
    assert (token.name, token.expiry) == ("ci", None)
    assert token.digest == hashlib.sha512(secret.encode()).hexdigest() and secret not in token.digest
    assert secret.startswith("strom_") and token.token_key == secret[:15]
    page = console(alice).get("/tokens/").content.decode()
    assert "ci" in page and token.token_key in page and secret not in page
    assert api_with(secret).get("/api/brokers/").status_code == 200


def test_several_named_tokens_per_user_with_unique_names(alice):
    first, second = create_on_console(alice, "ci"), create_on_console(alice, "laptop", days=30)
    assert first != second
    assert sorted(ApiToken.objects.filter(user=alice).values_list("name", flat=True)) == ["ci", "laptop"]
    laptop = ApiToken.objects.get(name="laptop")
    assert abs(laptop.expiry - (timezone.now() + datetime.timedelta(days=30))) < datetime.timedelta(minutes=1)
    response = console(alice).post("/tokens/new/", {"name": "ci"})
    assert response.status_code == 400 and "You have a token named &#x27;ci&#x27; already." in response.content.decode()
    assert ApiToken.objects.filter(user=alice).count() == 2
    assert list(AuditEntry.objects.order_by("id").values_list("action", "target", "result")) == [
        ("create_token", "token:alice/ci", "ok"), ("create_token", "token:alice/laptop", "ok"),
        ("create_token", "token:alice/ci", "failed")]


def test_an_expired_token_is_refused_and_removed(alice):
    secret = create_on_console(alice, "short", days=1)
    assert api_with(secret).get("/api/topics/").status_code == 200
    ApiToken.objects.filter(name="short").update(expiry=timezone.now() - datetime.timedelta(seconds=1))
    assert api_with(secret).get("/api/topics/").status_code == 401
    assert not ApiToken.objects.filter(name="short").exists()


def test_a_revoked_token_stops_working_and_the_revocation_is_audited(alice):
    secret = create_on_console(alice, "ci")
    digest = ApiToken.objects.get(name="ci").digest
    response = console(alice).post("/tokens/revoke/", {"token": digest})
    assert response.status_code == 302
    assert api_with(secret).get("/api/topics/").status_code == 401
    revoked = AuditEntry.objects.get(action="revoke_token")
    assert (revoked.actor, revoked.target, revoked.result, revoked.before["name"]) == ("alice", "token:alice/ci",
                                                                                       "ok", "ci")


def test_admins_see_and_revoke_everyones_tokens_others_only_their_own(alice):
    create_on_console(alice, "ci")
    admin, bob = user_with_role("root", Role.ADMIN), user_with_role("bob", Role.OPERATOR)
    assert "alice" not in console(bob).get("/tokens/").content.decode().split("Your tokens")[1]
    digest = ApiToken.objects.get(name="ci").digest
    assert console(bob).post("/tokens/revoke/", {"token": digest}).status_code == 403
    assert ApiToken.objects.filter(digest=digest).exists()
    assert "Every user's tokens" in console(admin).get("/tokens/").content.decode()
    assert console(admin).post("/tokens/revoke/", {"token": digest}).status_code == 302
    revocations = AuditEntry.objects.filter(action="revoke_user_token").order_by("id")
    assert list(revocations.values_list("actor", "result")) == [("bob", "refused"), ("root", "ok")]


def test_password_exchange_with_expiry(alice):
    response = APIClient().post("/api/token/", {"username": "alice", "password": PASSWORD, "name": "script",
                                                "expires_in_days": 7}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["name"] == "script" and body["expiry"] is not None
    assert api_with(body["token"]).get("/api/brokers/").status_code == 200
    assert APIClient().post("/api/token/", {"username": "alice", "password": PASSWORD, "expires_in_days": 0},
                            format="json").status_code == 400


def test_users_without_a_role_get_no_token(db):
    user_with_role("nobody", None)
    response = APIClient().post("/api/token/", {"username": "nobody", "password": PASSWORD}, format="json")
    assert response.status_code == 403
    assert response.json()["detail"] == "Creating API tokens for yourself needs the viewer role; you have no role."
    assert not ApiToken.objects.exists()
