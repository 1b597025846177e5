"""The helpers of the worker's pages around a HIT (the globals and filters of their Jinja2 environment,
``worker/task_templates.py``): look up a form field's value, errors and warnings by name, static files'
and routes' URLs worked out once per process, and the time note.

Every HIT page view and every submission renders these pages, so what Django's ``static`` and
``reverse`` would work out again on each render (about 20 and 50-100 us each) is kept instead:
:func:`django.templatetags.static.static` and :func:`django.urls.reverse` are functions of the
settings, the URLconf and the script prefix (``SCRIPT_NAME``) only, and both caches are keyed by the
prefix and the URLconf and emptied when a setting changes (``setting_changed``, as in tests).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any
from urllib.parse import quote

from django.core.signals import setting_changed
from django.templatetags.static import static
from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

#: Routes and files kept per process; HIT templates pass constants and a HIT kind, so few are ever kept.
_CACHED = 256


@lru_cache(maxsize=_CACHED)
def _static(prefix: str, path: str) -> str:
    return static(path)


@lru_cache(maxsize=_CACHED)
def _reverse(prefix: str, urlconf: Any, name: str, args: tuple[Any, ...]) -> str:
    return reverse(name, urlconf=urlconf, args=args)


#: Stands for the token while a per-assignment route is reversed once (``reverse`` quotes nothing in it).
_TOKEN_MARK = "crowdqa-token-mark"
#: What ``reverse`` leaves unquoted in a path (``django.urls.resolvers``: RFC 3986 sub-delims and "~:@"),
#: less "/": ``reverse`` refuses a token holding one (``<str:token>``), here it is quoted instead.
_PATH_SAFE = "!$&'()*+,;=~:@"


@lru_cache(maxsize=_CACHED)
def _token_route(prefix: str, urlconf: Any, name: str) -> tuple[str, str]:
    before, mark, after = reverse(name, urlconf=urlconf, kwargs={"token": _TOKEN_MARK}).partition(_TOKEN_MARK)
    if not mark:
        raise ValueError(f"route {name!r} takes no token")
    return before, after


def _forget(**kwargs: Any) -> None:
    _static.cache_clear()
    _reverse.cache_clear()
    _token_route.cache_clear()


setting_changed.connect(_forget, dispatch_uid="page_helpers.forget_urls")


def cached_static(path: str) -> str:
    """``{{ static("crowdqa/hit.css") }}``: Django's ``static`` URL of a file, worked out once per
    process."""
    return _static(get_script_prefix(), path)


def cached_url(name: str, *args: Any) -> str:
    """``{{ cached_url("hits:tutorial", batch.kind) }}``: ``reverse`` for a route whose arguments take few
    values (a HIT kind, none), worked out once per process; not for per-assignment tokens."""
    return _reverse(get_script_prefix(), get_urlconf(), name, tuple(args))


def token_url(name: str, token: str) -> str:
    """``{{ token_url("hits:draft", token) }}``: ``reverse(name, args=[token])`` for a route of a signed
    link (``<str:token>``), the route reversed once per process and the token quoted as ``reverse`` quotes
    it."""
    before, after = _token_route(get_script_prefix(), get_urlconf(), name)
    return before + quote(str(token), safe=_PATH_SAFE) + after


def time_note(tutorial: Any, batch: Any) -> SafeString:
    """``{{ time_note(tutorial, batch) }}``: how long the task takes and how long the worker has, from the
    tutorial's typical minutes and the batch's limit (the number the platform gets and the timer counts
    down from); on the consent page and in every task page's Instructions dialog."""
    low, high = tutorial.consent.typical_minutes
    return format_html(
        '<p class="time-note" id="time-note"><strong>Time:</strong> this task usually takes {} to {} '
        "minutes. You have {} minutes from accepting it to submit it; a HIT not submitted in time goes "
        "back to other workers, and your draft is kept if you take it again.</p>",
        low,
        high,
        batch.time_limit_minutes,
    )


def get(mapping: Any, key: Any) -> Any:
    """``{{ fields|get(name) }}``: a mapping's value for a computed key ("" when absent)."""
    if not hasattr(mapping, "get"):
        return ""
    value = mapping.get(str(key), "")
    return "" if value is None else value


def getlist(mapping: Any, key: Any) -> list[Any]:
    """``{{ fields|getlist("flag") }}``: a repeatable field's values as a list (a lone string: one item)."""
    if not hasattr(mapping, "get"):
        return []
    value = mapping.get(str(key), [])
    if isinstance(value, str):
        return [value] if value else []
    return list(value or [])


def contains(values: Any, item: Any) -> bool:
    """``{% if fields|getlist("flag")|contains("ungrammatical") %}``: membership with string comparison."""
    return str(item) in [str(v) for v in (values or [])]
