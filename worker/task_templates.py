"""The Jinja2 environment of the worker's pages around a HIT (``templates/jinja2/hits/`` and a platform
package's ``jinja2/``; settings.TEMPLATES "jinja2"): the task pages, the consent page, the messages a
worker meets (a submission's "Thank you!" included), the tutorial and a platform's completion page.

Why a second template engine: a task page is rendered on every HIT view and on every submission a
worker must correct, and Django's template engine spent about 2 ms of CPU on the SciQ question page
(nodes resolved and escaped one by one at every render; a syllabus page's 14 cards far more), half of
the page's CPU in the web worker. Jinja2 compiles a template to Python once and renders the same page in
about 0.2 ms (benchmarks/RESULTS.md, "The task pages rendered by Jinja2"). The researcher console and
the worker's sign-in, home and invite pages (``templates/worker/``, extending the site's ``base.html``)
stay on Django's templates.

The helpers are the functions of ``page_helpers``, so a URL, a field's value or the time note is worked
out in one place. Django's ``date`` and ``time`` filters are used as Django's templates apply them: on
the value converted to the current time zone first.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template import defaultfilters
from django.utils.html import json_script
from django.utils.timezone import template_localtime
from jinja2 import ChainableUndefined, Environment

from worker import page_helpers

#: The engine (``settings.TEMPLATES`` name) every view rendering one of these pages passes to ``render``.
ENGINE = "jinja2"


def message_page(
    request: HttpRequest, title: str, text: str, status: int = 200, **extra: Any
) -> HttpResponse:
    """A short page for a worker (``hits/message.html``): a title, a text, and with ``next_url`` a link back
    to the available work."""
    return render(
        request, "hits/message.html", {"title": title, "text": text, **extra}, status=status, using=ENGINE
    )


def _date(value: Any, format_string: str) -> str:
    """Django's ``|date:format`` (``"c"``: ISO 8601) of a datetime in the current time zone."""
    return defaultfilters.date(template_localtime(value), format_string)


def _time(value: Any, format_string: str) -> str:
    """Django's ``|time:format`` of a datetime in the current time zone."""
    return defaultfilters.time(template_localtime(value), format_string)


def environment(**options: Any) -> Environment:
    """The environment Django's Jinja2 backend renders the task pages with: autoescaped, and a missing
    value (or an attribute of one) prints nothing, as in Django's templates, with ``DJANGO_DEBUG`` on too
    (the backend's defaults print the expression there and fail on an attribute of a missing value)."""
    options["undefined"] = ChainableUndefined
    env = Environment(**options)
    env.globals.update(
        static=page_helpers.cached_static,
        cached_url=page_helpers.cached_url,
        token_url=page_helpers.token_url,
        time_note=page_helpers.time_note,
        json_script=json_script,
    )
    env.filters.update(
        get=page_helpers.get,
        getlist=page_helpers.getlist,
        contains=page_helpers.contains,
        pluralize=defaultfilters.pluralize,
        date=_date,
        time=_time,
    )
    return env
