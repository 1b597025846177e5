"""Tests for exports/card_html.py: card Markdown to HTML with guarded relative targets."""

from __future__ import annotations

from exports.card_html import render_card_html

LISTED = {"plots/lengths.png", "train.csv"}


def _resolve(path: str) -> str | None:
    return f"/releases/1/files/{path}" if path in LISTED else None


def test_render_card_html__tables_and_listed_image_rewritten():
    html = render_card_html(
        "# Card\n\n| split | QA pairs |\n|---|---:|\n| train | 4,018 |\n\n![lengths](plots/lengths.png)\n",
        _resolve,
    )
    assert "<h1>Card</h1>" in html and '<table tabindex="0">' in html  # a phone scrolls it by keyboard
    assert '<td style="text-align:right">4,018</td>' in html
    assert '<img src="/releases/1/files/plots/lengths.png" alt="lengths" />' in html


def test_render_card_html__unlisted_and_traversal_targets_dropped():
    html = render_card_html("![x](../../etc/passwd) [data](secret.csv) [ok](train.csv)", _resolve)
    assert "passwd" not in html and 'href="secret.csv"' not in html
    assert '<img alt="x" />' in html
    assert '<a href="/releases/1/files/train.csv">ok</a>' in html


def test_render_card_html__raw_html_escaped_and_external_links_kept():
    html = render_card_html(
        "A <script>alert(1)</script> [paper](https://arxiv.org/abs/2403.14666) [j](javascript:alert(1))",
        _resolve,
    )
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert '<a href="https://arxiv.org/abs/2403.14666">paper</a>' in html
    assert 'href="javascript' not in html
