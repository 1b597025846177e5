"""Template helpers of the HIT pages: look up a form field's value, errors and warnings by name."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


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
