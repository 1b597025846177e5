"""config/error_views.py: the refusal pages say what happened and where to go, and leak nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.test import Client, RequestFactory

from config import error_views
from tests.factories import make_researcher, make_worker

pytestmark = pytest.mark.django_db


def test_server_error__static_page_without_database(django_assert_num_queries) -> None:  # noqa: ANN001
    request = RequestFactory().get("/anything/")
    with django_assert_num_queries(0):
        response = error_views.server_error(request)
    assert response.status_code == 500
    assert b"Something went wrong on our side" in response.content
    assert b"Traceback" not in response.content


def test_permission_denied__worker__links_to_worker_home() -> None:
    worker = make_worker("w-err")
    from django.contrib.auth import get_user_model

    worker.user = get_user_model().objects.create_user("w-err-user")
    worker.save()
    client = Client()
    client.force_login(worker.user)
    response = client.get("/review/")
    html = response.content.decode()
    assert response.status_code == 403
    assert 'href="/work/"' in html and "This page is for researchers" in html
    assert "annotation.view_batch" in html  # names what is missing


def test_permission_denied__researcher_without_right__names_it_and_links_overview() -> None:
    user = make_researcher("half")
    request = RequestFactory().post("/batches/1/pause/")
    request.user = user
    response = error_views.permission_denied(request, PermissionDenied("Your account may not pause."))
    html = response.content.decode()
    assert response.status_code == 403 and "Your account may not pause." in html
    assert 'href="/"' in html and "Go to the overview" in html


def test_page_not_found__hides_the_resolver_report() -> None:
    response = Client().get("/definitely/not/here/")
    html = response.content.decode()
    assert response.status_code == 404 and "Page not found" in html
    assert "Resolver404" not in html and "tried" not in html


def test_bad_request__anonymous__offers_sign_in() -> None:
    request = RequestFactory().get("/x/")
    request.user = AnonymousUser()
    response = error_views.bad_request(request, ValueError("bad"))
    assert response.status_code == 400 and b"Sign in as a researcher" in response.content
