"""Requests under ``/api/`` resolve with the URLconf that holds the REST API (:mod:`config.api_urls`).

Kept apart from that URLconf: the middleware loads with every web worker, the API only with the first
request under ``/api/`` (Django's documented ``request.urlconf``).
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

#: The prefix under which requests use :data:`API_URLCONF`.
API_PREFIX = "/api/"
API_URLCONF = "config.api_urls"


class ApiURLConfMiddleware:
    """Resolve requests under ``/api/`` with :data:`API_URLCONF` (placed before CommonMiddleware, whose
    slash redirect resolves with the request's URLconf)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info.startswith(API_PREFIX):
            request.urlconf = API_URLCONF
        return self.get_response(request)
