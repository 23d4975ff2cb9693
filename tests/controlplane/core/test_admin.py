"""The Django admin shows the cluster's metadata (and the audit log) read-only: changes go through the services
that take the controller-state lock and bump epochs and the metadata version. User changes are audited."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from controlplane.audit.models import AuditEntry
from controlplane.cluster.models import Broker, ControllerState
from controlplane.topics.models import Partition, Topic


@pytest.fixture
def admin_client(cluster, local_superuser):
    ControllerState.current()
    client = Client()
    client.force_login(local_superuser)
    return client


def admin_url(model, suffix: str) -> str:
    return f"/admin/{model._meta.app_label}/{model._meta.model_name}/{suffix}"


READ_ONLY = [Broker, ControllerState, Topic, Partition, AuditEntry]


@pytest.mark.parametrize("model", READ_ONLY, ids=lambda m: m.__name__)
def test_listed_and_viewable_but_never_added_changed_or_deleted(admin_client, model):
    AuditEntry.objects.create(actor="x", source="cli", action="reset_offsets", result="ok")
    row = model.objects.first()
    assert admin_client.get(admin_url(model, "")).status_code == 200
    page = admin_client.get(admin_url(model, f"{row.pk}/change/"))
    assert page.status_code == 200 and b'name="_save"' not in page.content
    assert admin_client.get(admin_url(model, "add/")).status_code == 403
    assert admin_client.post(admin_url(model, f"{row.pk}/change/"), {}).status_code == 403
    assert admin_client.post(admin_url(model, f"{row.pk}/delete/"), {"post": "yes"}).status_code == 403
    assert model.objects.filter(pk=row.pk).exists()


def test_a_partitions_leader_cannot_be_edited(admin_client):
    partition = Partition.objects.get(topic__name="orders", partition=0)
    response = admin_client.post(admin_url(Partition, f"{partition.pk}/change/"), {
        "topic": partition.topic_id, "partition": 0, "replicas": "[1, 2, 3]", "isr": "[3]", "leader": 3,
        "leader_epoch": 9, "partition_epoch": 9})
    assert response.status_code == 403
    partition.refresh_from_db()
    assert (partition.leader, partition.isr, partition.leader_epoch) == (1, [1, 2, 3], 0)


def test_user_changes_in_the_admin_are_audited(admin_client):
    bob = get_user_model().objects.create_user("bob")
    response = admin_client.post(f"/admin/auth/user/{bob.pk}/change/", {
        "username": "bob", "is_active": "on", "date_joined_0": "2024-01-01", "date_joined_1": "00:00:00",
        "initial-date_joined_0": "2024-01-01", "initial-date_joined_1": "00:00:00"})
    assert response.status_code == 302, response.content
    entry = AuditEntry.objects.get()
    assert (entry.actor, entry.action, entry.target, entry.source, entry.result) == (
        "admin", "change_user", "user:bob", "console", "ok")
    assert entry.detail.startswith("Django admin: changed")
