"""Template helpers of the review pages: spans shown inside their document text, QC flag badges."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

from annotation.qc.common import problem_flags
from crowd.providers.costs import format_money

register = template.Library()

CONTEXT_CHARS = 160


@register.filter
def flag_badge(code: str) -> str:
    """The badge class of a QC flag: ``ok`` for a normalisation QC applied (not a problem), else ``warn``."""
    return "warn" if problem_flags([code]) else "ok"


@register.filter
def flag_title(code: str) -> str:
    """A tooltip saying what kind of flag it is."""
    return "Needs a look" if problem_flags([code]) else "Normalised automatically; the original text is kept"


@register.simple_tag
def span_in_context(span: Any, document: Any, width: int = CONTEXT_CHARS) -> SafeString:
    """The document text around an answer span, the span marked (every piece autoescaped)."""
    if document is None or span.start is None or span.end is None:
        return format_html("<mark>{}</mark>", span.text)
    text = document.text
    start, end = max(0, span.start - width), min(len(text), span.end + width)
    return format_html(
        '{}{}<mark class="span">{}</mark>{}{}',
        "… " if start > 0 else "",
        text[start : span.start],
        text[span.start : span.end],
        text[span.end : end],
        " …" if end < len(text) else "",
    )


@register.simple_tag
def page_with_spans(document: Any, page: int, spans: Any) -> SafeString:
    """One page of a document with every given span on it marked (overlaps are merged)."""
    start, end = document.page_bounds(page)
    ranges = sorted(
        (max(s.start, start), min(s.end, end))
        for s in spans
        if s.start is not None and s.end is not None and s.start < end and s.end > start
    )
    merged: list[list[int]] = []
    for a, b in ranges:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    out = SafeString("")
    cursor = start
    for a, b in merged:
        out += format_html('{}<mark class="span">{}</mark>', document.text[cursor:a], document.text[a:b])
        cursor = b
    return out + format_html("{}", document.text[cursor:end])


@register.filter
def money(cents: Any, currency: str = "USD") -> str:
    """``{{ cents|money:batch.currency }}``: an amount in minor units with its currency ("0.50 GBP")."""
    if cents in (None, ""):
        return "—"
    return format_money(round(float(cents)), currency or "USD")
