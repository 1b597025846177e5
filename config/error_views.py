"""Pages for refused and failed requests: what happened, and where the visitor can go from here.

Django's defaults answer "403 Forbidden" or "Not Found" and nothing else, which strands a local worker who
opened a researcher link, or a researcher whose form expired. Each page here says what happened in a
sentence and offers the ways on that fit who is asking: a local worker gets their work page, a researcher
the console's overview, an anonymous visitor the sign-in pages, a user without the permission the name of
what is missing and whom to ask.

Security behavior: these pages reveal nothing beyond what the refused request already knew: the refusal
message the view chose (never a traceback or a server path) and the visitor's own account name. The 500
page renders a static template with no context processor, so it works when the database does not.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template import loader

logger = logging.getLogger(__name__)

TEMPLATE = "errors/refused.html"


def _visitor(request: HttpRequest) -> dict[str, Any]:
    """Who is asking: ``worker`` (a local crowd account), ``researcher``, ``account`` or ``anonymous``."""
    from annotation.permissions import can_view

    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"visitor": "anonymous", "researcher": can_view(request)}
    worker = getattr(user, "worker", None)
    if worker is not None:
        return {"visitor": "worker", "researcher": False, "worker": worker}
    return {"visitor": "researcher" if can_view(request) else "account", "researcher": can_view(request)}


def _page(
    request: HttpRequest,
    status: int,
    title: str,
    text: str,
    detail: Optional[str] = None,
) -> HttpResponse:
    context = {"status": status, "title": title, "text": text, "detail": detail, **_visitor(request)}
    return render(request, TEMPLATE, context, status=status)


def _message(exception: Optional[BaseException]) -> Optional[str]:
    """The message a view put in its exception, when it wrote one for people (not Django's resolver)."""
    if exception is None or not exception.args:
        return None
    message = exception.args[0]
    return message if isinstance(message, str) and message.strip() else None


def permission_denied(request: HttpRequest, exception: Optional[BaseException] = None) -> HttpResponse:
    """403: the visitor is known but may not open this page."""
    detail = _message(exception)
    visitor = _visitor(request)["visitor"]
    if visitor == "worker":
        text = "This page is for researchers. You are signed in with a worker account."
    elif visitor == "anonymous":
        text = "This page needs you to sign in."
    else:
        text = "Your account may not open this page or do this."
    return _page(request, 403, "Not allowed", text, detail)


def page_not_found(request: HttpRequest, exception: Optional[BaseException] = None) -> HttpResponse:
    """404: nothing here (a mistyped, expired or forged link)."""
    detail = _message(exception)
    if detail and ("Resolver404" in detail or detail.startswith("{")):
        detail = None  # Django's URL resolver puts its internal report here, not a sentence
    return _page(request, 404, "Page not found", "There is nothing at this address.", detail)


def bad_request(request: HttpRequest, exception: Optional[BaseException] = None) -> HttpResponse:
    """400: the request could not be understood (a damaged link or form)."""
    return _page(request, 400, "Bad request", "This request could not be understood; nothing was changed.")


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """403 from the CSRF check: the form is older than the session (signed out or in meanwhile)."""
    return _page(
        request,
        403,
        "This form has expired",
        "Nothing was changed. Go back, reload the page and send the form again.",
    )


def server_error(request: HttpRequest) -> HttpResponse:
    """500: a static page (no database, no context processors)."""
    body = loader.get_template("errors/500.html").render()
    return HttpResponse(body, status=500)
