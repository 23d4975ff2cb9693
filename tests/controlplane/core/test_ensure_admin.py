import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command


def run(monkeypatch, password=None) -> str:
    if password is None:
        monkeypatch.delenv("STROM_ADMIN_PASSWORD", raising=False)
    else:
        monkeypatch.setenv("STROM_ADMIN_PASSWORD", password)
    out = io.StringIO()
    call_command("ensure_admin", stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_generated_password_is_printed_once_and_works(monkeypatch):
    output = run(monkeypatch)
    password = output.split("password: ")[1].split()[0]
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_superuser and admin.check_password(password)
    assert run(monkeypatch) == ""
    assert get_user_model().objects.get(username="admin").check_password(password)


@pytest.mark.django_db
def test_password_from_environment(monkeypatch):
    assert "STROM_ADMIN_PASSWORD" in run(monkeypatch, "first-secret")
    assert get_user_model().objects.get(username="admin").check_password("first-secret")
    assert "Reset" in run(monkeypatch, "second-secret")
    assert get_user_model().objects.get(username="admin").check_password("second-secret")
    assert run(monkeypatch, "second-secret") == ""
