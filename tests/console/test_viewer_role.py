"""The view-only role (``viewers`` group, annotation/roles.py): set from the Accounts page, it sees every
researcher page and acts on none: every POST route of the console, the releases, the benchmarks and
the API is refused to it (403, or 405 on a read-only page), and nothing changes."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.authtoken.models import Token

from annotation.models import Assignment, Batch, Corpus, Job
from annotation.permissions import RESEARCHERS_GROUP, VIEWERS_GROUP, ensure_viewers_group
from annotation.roles import role_of
from crowd.models import Payment, Worker
from tests.security.fuzzing import World, build_world

pytestmark = pytest.mark.django_db
RESEARCHER_NAMESPACES = ("annotation", "exports", "evaluation", "crowd")
ACCOUNT_ROUTES = {"accounts", "account-change"}  # need auth.change_user, which no researcher holds either


def _routes(patterns: list[Any], prefix: str = "", namespace: str = "") -> Iterator[tuple[str, str, str]]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            inner = pattern.namespace or namespace
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern), inner)
        elif isinstance(pattern, URLPattern):
            yield namespace, pattern.name or "", prefix + str(pattern.pattern)


def _fill(route: str, ids: dict[str, Any]) -> str:
    """A concrete path: every converter filled with an id of an existing object (or a plain word)."""
    route = route.lstrip("^").rstrip("$")
    route = re.sub(r"\(\?P<format>[^)]*\)/\?", "json", route).replace("\\.", ".")
    route = re.sub(r"\(\?P<pk>[^)]*\)", str(ids["submitted"]), route)
    route = re.sub(r"<int:[a-z_]+>", str(ids["local_batch"]), route)
    route = re.sub(r"<slug:name>", "tb", route)
    route = re.sub(r"<str:fmt>", "csv", route)
    route = re.sub(r"<(str|path):[a-z_]+>", "x", route)
    return "/" + route.replace("^", "")


@pytest.fixture
def world() -> World:
    return build_world()


@pytest.fixture
def viewer(world: World) -> Any:
    """A researcher moved to the viewer role by an admin on the Accounts page."""
    admin = get_user_model().objects.create_superuser("boss", password="pw-for-tests")
    user = get_user_model().objects.create_user("looker", password="pw-for-tests")
    user.groups.add(Group.objects.get(name=RESEARCHERS_GROUP))
    client = Client()
    client.force_login(admin)
    response = client.post(f"/accounts/manage/{user.pk}/", {"action": "role", "role": "viewer"})
    assert response.status_code == 302
    user = get_user_model().objects.get(pk=user.pk)
    assert role_of(user) == "viewer"
    assert {g.name for g in user.groups.all()} == {VIEWERS_GROUP}
    return user


def _snapshot() -> tuple[Any, ...]:
    return (
        list(Assignment.objects.order_by("pk").values_list("pk", "status")),
        list(Batch.objects.order_by("pk").values_list("pk", "status", "name")),
        list(Worker.objects.order_by("pk").values_list("pk", "blocked")),
        Payment.objects.count(),
        Job.objects.count(),
        Corpus.objects.count(),
    )


def test_viewers_group__holds_only_read_permissions() -> None:
    group = ensure_viewers_group()
    codenames = set(group.permissions.values_list("codename", flat=True))
    assert codenames and all(name.startswith("view_") for name in codenames)
    from django.contrib.auth.models import Permission

    group.permissions.add(Permission.objects.get(codename="add_batch"))
    assert "add_batch" not in set(ensure_viewers_group().permissions.values_list("codename", flat=True))


def test_viewer__reads_every_page_without_action_buttons(world: World, viewer: Any) -> None:
    client = Client()
    client.force_login(viewer)
    batch = world.ids["local_batch"]
    for path in ("/", f"/batches/{batch}/", "/review/", "/releases/", "/benchmarks/", "/corpora/tb/"):
        assert client.get(path).status_code == 200, path
    page = client.get(f"/batches/{batch}/").content.decode()
    assert "New batch" not in client.get("/").content.decode()
    assert "Add data" not in client.get("/").content.decode()
    assert f'action="/batches/{batch}/status/"' not in page
    assert f'action="/batches/{batch}/message/"' not in page
    assert client.get("/api/v1/batches/").status_code == 200


def test_viewer__every_post_route_is_refused_and_nothing_changes(world: World, viewer: Any) -> None:
    client = Client()  # no CSRF check here: the permission, not the token, must refuse
    client.force_login(viewer)
    before = _snapshot()
    tried = []
    wrong: list[tuple[str, str, int]] = []
    for namespace, name, route in _routes(get_resolver().url_patterns):
        if namespace not in RESEARCHER_NAMESPACES or name in ("health", "ready", "platform-webhook"):
            continue
        path = _fill(route, world.ids)
        fields = {
            "action": "approve",
            "reason": "viewer tries",
            "role": "admin",
            "to": "all",
            "message": "hi",
        }
        status = client.post(path, fields).status_code
        if status not in (403, 405):
            wrong.append((name, path, status))
        tried.append(name)
    assert wrong == [], "\n".join(map(str, wrong))
    assert {"batch-status", "assignment-review", "assignment-bonus", "worker-block", "batch-message"} <= set(
        tried
    )
    assert {"batch-bonuses", "review-decide", "new", "confirm", "start", "upload", "payment-resolve"} <= set(
        tried
    )
    assert _snapshot() == before


def test_viewer__every_api_change_is_refused(world: World, viewer: Any) -> None:
    key = Token.objects.create(user=viewer).key
    client = Client(HTTP_AUTHORIZATION=f"Token {key}")
    before = _snapshot()
    tried = 0
    wrong: list[tuple[str, str, str, int]] = []
    for namespace, name, route in _routes(get_resolver("config.api_urls").url_patterns):
        if namespace != "api" or "format" in route or name in ("schema", "docs", "api-root"):
            continue
        path = _fill(route, world.ids)
        for method in ("post", "patch", "delete"):
            status = getattr(client, method)(path, {}, content_type="application/json").status_code
            if status not in (403, 405):
                wrong.append((name, method, path, status))
            tried += 1
    assert wrong == [], "\n".join(map(str, wrong))
    assert tried > 30 and _snapshot() == before


def test_accounts_page__invites_a_viewer_and_moves_one_back(world: World) -> None:
    admin = get_user_model().objects.create_superuser("boss", password="pw-for-tests")
    client = Client()
    client.force_login(admin)
    page = client.get("/accounts/manage/").content.decode()
    assert '<option value="viewer"' in page and "changes nothing" in page
    response = client.post("/accounts/manage/", {"username": "auditor", "email": "", "role": "viewer"})
    assert response.status_code == 200
    auditor = get_user_model().objects.get(username="auditor")
    assert role_of(auditor) == "viewer"
    assert "Viewer" in client.get("/accounts/manage/").content.decode()
    client.post(f"/accounts/manage/{auditor.pk}/", {"action": "role", "role": "researcher"})
    auditor = get_user_model().objects.get(pk=auditor.pk)
    assert role_of(auditor) == "researcher" and not auditor.groups.filter(name=VIEWERS_GROUP).exists()
