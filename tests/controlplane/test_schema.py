"""The OpenAPI 3 schema is served at /api/schema/ and validates."""

import pytest
import yaml
from django.core.management import call_command


def test_schema_is_served_to_logged_in_users(api_client):
    response = api_client.get("/api/schema/")
    assert response.status_code == 200
    schema = yaml.safe_load(response.content)
    assert schema["openapi"].startswith("3.")
    assert {"/api/brokers/", "/api/topics/", "/api/partitions/"} <= set(schema["paths"])
    parameters = {p["name"] for p in schema["paths"]["/api/brokers/"]["get"]["parameters"]}
    assert {"state", "limit", "offset", "ordering"} <= parameters


@pytest.mark.django_db
def test_schema_validates(tmp_path):
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yml"))
    assert (tmp_path / "schema.yml").stat().st_size > 1000


def test_swagger_ui_is_served(api_client):
    response = api_client.get("/api/docs/")
    assert response.status_code == 200
    assert b"swagger-ui" in response.content
