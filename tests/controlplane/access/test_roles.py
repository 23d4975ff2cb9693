"""Roles are Django groups whose permissions equal the action registry (kept so by migration and after every
migrate); the check says which role an action needs; reads need a role; an undeclared REST mutation is refused."""

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.test import Client
from rest_framework import viewsets
from rest_framework.response import Response
from rest_framework.test import APIClient, APIRequestFactory, force_authenticate

from controlplane.access import actions, checks
from controlplane.access.actions import ACTIONS, Role
from controlplane.access.rest import ActionPermission
from controlplane.access.roles import role_of, set_role, sync_roles
from tests.conftest import user_with_role


def action_permissions(role: Role) -> set[str]:
    return set(Group.objects.get(name=role.group_name).permissions.filter(content_type__app_label="access")
               .values_list("codename", flat=True))


@pytest.mark.django_db
@pytest.mark.parametrize("role", list(Role), ids=lambda r: r.group_name)
def test_each_role_holds_exactly_the_actions_at_or_below_it(role):
    assert action_permissions(role) == {a.permission for a in ACTIONS.values() if a.role <= role}


@pytest.mark.django_db
def test_the_groups_are_restored_to_the_registry():
    viewer = Group.objects.get(name="viewer")
    viewer.permissions.add(Permission.objects.get(content_type__app_label="access", codename="delete_topics"))
    Group.objects.filter(name="admin").delete()
    sync_roles(apps)
    assert "delete_topics" not in action_permissions(Role.VIEWER)
    assert action_permissions(Role.ADMIN) == {a.permission for a in ACTIONS.values()}


@pytest.mark.django_db
def test_role_of_and_set_role():
    user = user_with_role("u", Role.OPERATOR)
    assert role_of(user) == Role.OPERATOR and not user.is_staff
    set_role(user, Role.ADMIN)
    user = get_user_model().objects.get(pk=user.pk)  # fresh permission cache
    assert role_of(user) == Role.ADMIN and user.is_staff
    assert user.has_perm("access.elect_unclean_leaders") and user.has_perm("auth.change_user")
    set_role(user, None)
    assert role_of(get_user_model().objects.get(pk=user.pk)) is None
    superuser = get_user_model().objects.create_superuser("root")
    assert role_of(superuser) == Role.ADMIN and checks.refusal(superuser, actions.ELECT_UNCLEAN_LEADERS) is None


@pytest.mark.django_db
def test_refusal_names_the_role_needed_and_held():
    assert checks.refusal(None, actions.VIEW_CLUSTER) == "Log in first."
    operator = user_with_role("o", Role.OPERATOR)
    assert checks.refusal(operator, actions.RESET_OFFSETS) is None
    assert checks.refusal(operator, actions.DELETE_TOPICS) == \
        "Deleting topics needs the admin role; your role is operator."
    operator.is_active = False
    assert checks.refusal(operator, actions.RESET_OFFSETS) == "This account is disabled."


@pytest.mark.django_db
def test_users_without_a_role_read_nothing(cluster):
    nobody = user_with_role("nobody", None)
    client = Client()
    client.force_login(nobody)
    page = client.get("/topics/")
    assert page.status_code == 403 and b"needs the viewer role; you have no role." in page.content
    assert "orders" not in page.content.decode()
    api = APIClient()
    api.force_authenticate(nobody)
    assert api.get("/api/topics/").status_code == 403


class Undeclared(viewsets.ViewSet):
    def create(self, request):
        return Response({"changed": True})


@pytest.mark.django_db
def test_a_mutation_without_a_declared_action_is_refused():
    admin = user_with_role("a", Role.ADMIN)
    request = APIRequestFactory().post("/api/undeclared/", {})
    view = Undeclared.as_view({"post": "create"}, permission_classes=[ActionPermission])
    force_authenticate(request, admin)
    response = view(request)
    assert response.status_code == 403
    assert response.data["detail"] == "POST /api/undeclared/ declares no action, so nobody may call it."
