"""Template helpers of the HIT pages: look up a form field's value, errors and warnings by name, and
static files' and routes' URLs worked out once per process.

Every HIT page view and every submission renders these templates, so what ``{% static %}`` and
``{% url %}`` would work out again on each render (about 20 and 50-100 us each) is kept instead:
:func:`django.templatetags.static.static` and :func:`django.urls.reverse` are functions of the settings,
the URLconf and the script prefix (``SCRIPT_NAME``) only, and both caches are keyed by the prefix and the
URLconf and emptied when a setting changes (``setting_changed``, as in tests).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from django import template
from django.core.signals import setting_changed
from django.templatetags.static import static
from django.urls import get_script_prefix, get_urlconf, reverse

register = template.Library()

#: Routes and files kept per process; HIT templates pass constants and a HIT kind, so few are ever kept.
_CACHED = 256


@lru_cache(maxsize=_CACHED)
def _static(prefix: str, path: str) -> str:
    return static(path)


@lru_cache(maxsize=_CACHED)
def _reverse(prefix: str, urlconf: Any, name: str, args: tuple[Any, ...]) -> str:
    return reverse(name, urlconf=urlconf, args=args)


def _forget(**kwargs: Any) -> None:
    _static.cache_clear()
    _reverse.cache_clear()


setting_changed.connect(_forget, dispatch_uid="hit_tags.forget_urls")


@register.simple_tag
def cached_static(path: str) -> str:
    """``{% cached_static "crowdqa/hit.css" %}``: ``{% static %}``'s URL, worked out once per process."""
    return _static(get_script_prefix(), path)


@register.simple_tag
def cached_url(name: str, *args: Any) -> str:
    """``{% cached_url "hits:tutorial" batch.kind %}``: ``{% url %}`` for a route whose arguments take few
    values (a HIT kind, none), worked out once per process; not for per-assignment tokens."""
    return _reverse(get_script_prefix(), get_urlconf(), name, tuple(args))


@register.filter
def get(mapping: Any, key: Any) -> Any:
    """``{{ fields|get:name }}``: a mapping's value for a computed key ("" when absent)."""
    if not hasattr(mapping, "get"):
        return ""
    value = mapping.get(str(key), "")
    return "" if value is None else value


@register.filter
def getlist(mapping: Any, key: Any) -> list[Any]:
    """``{{ fields|getlist:"flag" }}``: a repeatable field's values as a list (a lone string: one item)."""
    if not hasattr(mapping, "get"):
        return []
    value = mapping.get(str(key), [])
    if isinstance(value, str):
        return [value] if value else []
    return list(value or [])


@register.filter
def contains(values: Any, item: Any) -> bool:
    """``{% if fields|getlist:"flag"|contains:"ungrammatical" %}``: membership with string comparison."""
    return str(item) in [str(v) for v in (values or [])]
