"""Every request body and query string is decodable and storable before any view or middleware reads it.

One place for what any view would otherwise have to remember:

- a body whose ``Content-Type`` names a charset other than UTF-8 (or one Python does not know) is refused
  with 400: forms and JSON are UTF-8 on every page crowdqa serves, and Django would otherwise decode
  the form with that charset inside its own middleware (CSRF) and fail with a server error;
- a form body that cannot be parsed (malformed ``multipart/form-data``, a boundary that is missing or
  too long) is refused with 400 instead of surfacing as a ``MultiPartParserError`` (500);
- NUL characters and lone UTF-16 surrogates are removed from every query-string and form value (no
  database column takes them: PostgreSQL refuses NUL in text, and surrogates are not UTF-8), so a
  filter, a reason, a label or a HIT field holding one is stored or looked up without it, never a 500.

Nothing else of the text is changed. A refusal is a short plain-text page that says what to fix.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, QueryDict
from django.http.multipartparser import MultiPartParserError

FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
UTF8_NAMES = frozenset({"utf-8", "ascii"})
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def charset_refusal(request: HttpRequest) -> str | None:
    """Why the body's declared charset cannot be taken (None when it is UTF-8, ASCII or not declared).

    Any spelling of UTF-8 (and ASCII, a subset) is read as ``utf-8``.
    """
    charset = request.content_params.get("charset") if request.content_params else None
    if not charset:
        return None
    try:
        name = codecs.lookup(charset.strip().strip('"')).name
    except LookupError:
        name = ""
    if name in UTF8_NAMES:
        if charset != "utf-8":
            request.encoding = "utf-8"  # "UTF8", "us-ascii": the one spelling Django's form parser takes
        return None
    return "This site takes request bodies in UTF-8 only; send the form again as UTF-8."


def _clean(values: QueryDict) -> QueryDict:
    """``values`` without NUL or lone surrogates in any key or value (the same object when there are none)."""
    if not any(_UNSTORABLE.search(k) or any(_UNSTORABLE.search(v) for v in vs) for k, vs in values.lists()):
        return values
    cleaned = QueryDict(mutable=True)
    for key, items in values.lists():
        cleaned.setlist(_UNSTORABLE.sub("", key), [_UNSTORABLE.sub("", v) for v in items])
    cleaned._mutable = False
    return cleaned


class RequestGuardMiddleware:
    """Refuse undecodable bodies with 400 and clean NUL / surrogates out of query and form values.

    Sits before the CSRF middleware, which is the first to read ``request.POST``. Only form bodies are
    parsed here (as CSRF would parse them anyway); other bodies (the Prolific webhook's JSON) are left
    to their view, apart from the charset check.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.META.get("CONTENT_TYPE") or request.method in ("POST", "PUT", "PATCH"):
            refusal = charset_refusal(request)
            if refusal:
                return HttpResponseBadRequest(refusal, content_type="text/plain; charset=utf-8")
            if request.content_type in FORM_TYPES and request.method == "POST":
                try:
                    if int(request.META.get("CONTENT_LENGTH") or 0) <= settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
                        # Read into memory first, so a view that reads the raw body (the webhook) still
                        # can after the form was parsed; larger bodies (file uploads) are streamed.
                        request.body  # noqa: B018
                    request.POST = _clean(request.POST)  # type: ignore[misc]
                except (MultiPartParserError, UnicodeError, LookupError, ValueError):
                    request._mark_post_parse_error()  # type: ignore[attr-defined]
                    return HttpResponseBadRequest(
                        "The form could not be read (malformed body); reload the page and send it again.",
                        content_type="text/plain; charset=utf-8",
                    )
        request.GET = _clean(request.GET)  # type: ignore[misc]
        return self.get_response(request)


def client_ip(request: HttpRequest) -> str:
    """The client's address for sign-in throttling (django-axes ``AXES_CLIENT_IP_CALLABLE``).

    Behind the reverse proxy the README describes (``CROWDQA_BEHIND_PROXY``), ``REMOTE_ADDR`` is the
    proxy's for every client, so the address the proxy appended last to ``X-Forwarded-For`` is taken
    (earlier entries are the client's to choose and are ignored); otherwise ``REMOTE_ADDR``.
    """
    if getattr(settings, "CROWDQA_BEHIND_PROXY", False):
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        last = forwarded.rsplit(",", 1)[-1].strip()
        if last:
            return last[:64]
    return str(request.META.get("REMOTE_ADDR", ""))
