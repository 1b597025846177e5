"""Render a release's ``card.md`` to HTML for the release page, with its images served safely.

Why a module of its own: the card is Markdown written by :mod:`exports.card` but it quotes corpus
descriptions and citations that people typed, so raw HTML in it is not trusted (markdown-it-py's
``html`` option stays off and links keep its ``validateLink`` check against ``javascript:`` URLs).
Relative image and link targets (``plots/lengths.png``) are rewritten through a caller-supplied
function, so the page can point them at a view that serves only files listed in the manifest; a target
the function refuses is dropped rather than left pointing anywhere.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Optional
from urllib.parse import urlsplit

from markdown_it import MarkdownIt
from markdown_it.token import Token

logger = logging.getLogger(__name__)

LinkResolver = Callable[[str], Optional[str]]


def _is_relative(target: str) -> bool:
    """True for a path inside the release (no scheme, no host, not absolute, not a fragment)."""
    parts = urlsplit(target)
    return not (parts.scheme or parts.netloc or target.startswith(("/", "#")))


def _rewrite(tokens: Sequence[Token], resolve: LinkResolver) -> None:
    for token in tokens:
        if token.children:
            _rewrite(token.children, resolve)
        attr = "src" if token.type == "image" else "href" if token.type == "link_open" else None
        if attr is None:
            continue
        target = str(token.attrGet(attr) or "")
        if not target or not _is_relative(target):
            continue
        url = resolve(target)
        if url is None:
            logger.warning("card.md: %s target %r is not a file of the release; dropped", token.type, target)
            token.attrs.pop(attr, None)
        else:
            token.attrSet(attr, url)


def render_card_html(markdown: str, resolve: LinkResolver) -> str:
    """Return the HTML of a dataset card (CommonMark plus tables), with relative targets resolved.

    Args:
        markdown: the text of ``card.md``.
        resolve: maps a relative path in the release (e.g. ``plots/types.png``) to the URL that serves
            it, or None when the path must not be served (then the image/link target is removed).

    Returns:
        HTML safe to insert into a page: raw HTML in the card is escaped, not rendered.
    """
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse(markdown)
    _rewrite(tokens, resolve)
    for token in tokens:
        if token.type == "table_open":
            # On a phone a wide table scrolls in its own box; keyboard users reach it with Tab.
            token.attrSet("tabindex", "0")
    return md.renderer.render(tokens, md.options, {})
