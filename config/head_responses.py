"""A HEAD request is answered with the headers its GET would get and no body.

Django's handler renders a HEAD request as a GET and leaves dropping the body to the server (its own
development server and test client do; see ``django.test.client.conditional_content_removal``).
gunicorn drops it too, but logs a warning for each such response ("WSGI app sent body bytes on a no-body
response"), so every uptime probe or link checker that sends HEAD filled the error log. First in
``settings.MIDDLEWARE``, this runs last on the way out: the body goes after compression, so
``Content-Length`` (when set) stays the length the GET's body has, as RFC 9110 allows for HEAD.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse


class HeadResponseMiddleware:
    """Empty the body of every response to a HEAD request (headers and status kept)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.method == "HEAD":
            if response.streaming:
                response.streaming_content = []
            else:
                response.content = b""
        return response
