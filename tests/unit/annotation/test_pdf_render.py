"""Tests of worker/pdf_render.py: page rasterisation, width clamping and the disk cache."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from worker import pdf_render


def _make_pdf(path: Path, pages: int = 3) -> Path:
    """A small letter-size PDF with one line of text per page (reportlab)."""
    from reportlab.lib.pagesizes import letter
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path), pagesize=letter, invariant=1)
    for number in range(1, pages + 1):
        pdf.setFont("Helvetica", 24)
        pdf.drawString(72, 700, f"Page {number} of the test syllabus")
        pdf.showPage()
    pdf.save()
    return path


def _png_size(path: Path) -> tuple[int, int]:
    with Image.open(path) as image:
        assert image.format == "PNG"
        return image.size


def test_page_count__reportlab_pdf(tmp_path: Path) -> None:
    pdf = _make_pdf(tmp_path / "three.pdf", pages=3)
    assert pdf_render.page_count(pdf) == 3


def test_render_page__each_page_has_requested_width(tmp_path: Path) -> None:
    pdf = _make_pdf(tmp_path / "three.pdf")
    cache = tmp_path / "cache"
    paths = [pdf_render.render_page(pdf, page, 640, cache) for page in (1, 2, 3)]
    assert len(set(paths)) == 3
    for path in paths:
        assert path.is_relative_to(cache)
        width, height = _png_size(path)
        assert width == 640
        # Letter is 8.5 x 11 in: the aspect ratio is kept.
        assert height == pytest.approx(640 * 11 / 8.5, abs=2)


def test_render_page__pages_differ(tmp_path: Path) -> None:
    pdf = _make_pdf(tmp_path / "three.pdf")
    first = pdf_render.render_page(pdf, 1, 500, tmp_path / "cache").read_bytes()
    second = pdf_render.render_page(pdf, 2, 500, tmp_path / "cache").read_bytes()
    assert first != second


def test_render_page__second_call_uses_cache(tmp_path: Path) -> None:
    pdf = _make_pdf(tmp_path / "three.pdf")
    cache = tmp_path / "cache"
    path = pdf_render.render_page(pdf, 2, 800, cache)
    mtime = path.stat().st_mtime_ns
    again = pdf_render.render_page(pdf, 2, 800, cache)
    assert again == path
    assert again.stat().st_mtime_ns == mtime
    # Only the PNG is left behind: no temporary files.
    assert [p.name for p in cache.rglob("*") if p.is_file()] == [path.name]


def test_render_page__width_is_clamped(tmp_path: Path) -> None:
    pdf = _make_pdf(tmp_path / "one.pdf", pages=1)
    small = pdf_render.render_page(pdf, 1, 10, tmp_path / "cache")
    large = pdf_render.render_page(pdf, 1, 99_999, tmp_path / "cache")
    assert _png_size(small)[0] == pdf_render.MIN_WIDTH
    assert _png_size(large)[0] == pdf_render.MAX_WIDTH


@pytest.mark.parametrize("page", [0, 4, -1])
def test_render_page__out_of_range_page_raises(tmp_path: Path, page: int) -> None:
    pdf = _make_pdf(tmp_path / "three.pdf")
    with pytest.raises(ValueError, match=r"three\.pdf.*3 pages"):
        pdf_render.render_page(pdf, page, 600, tmp_path / "cache")
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.png"))


def test_render_page__missing_file_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="missing.pdf"):
        pdf_render.render_page(tmp_path / "missing.pdf", 1, 600, tmp_path / "cache")


def test_page_count__not_a_pdf_raises(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.pdf"
    bogus.write_text("this is not a PDF")
    with pytest.raises(ValueError, match="bogus.pdf"):
        pdf_render.page_count(bogus)


def test_render_page__edited_pdf_gets_new_cache_entry(tmp_path: Path) -> None:
    pdf = _make_pdf(tmp_path / "doc.pdf", pages=1)
    cache = tmp_path / "cache"
    before = pdf_render.render_page(pdf, 1, 600, cache)
    _make_pdf(pdf, pages=2)
    after = pdf_render.render_page(pdf, 1, 600, cache)
    assert after != before


def test_render_page_png__bytes_decode(tmp_path: Path) -> None:
    pdf = _make_pdf(tmp_path / "one.pdf", pages=1)
    png = pdf_render.render_page_png(pdf, 1, 700)
    with Image.open(io.BytesIO(png)) as image:
        assert image.size[0] == 700
        # The page has dark text on white: not a blank image.
        assert image.convert("L").getextrema()[0] < 100


def test_render_page__real_syllabusqa_pdf(shared_data, tmp_path: Path) -> None:
    pdf_dir = shared_data("syllabusqa") / "syllabi" / "syllabi_redacted" / "pdf"
    pdf = sorted(pdf_dir.glob("*.pdf"))[0]
    assert pdf_render.page_count(pdf) >= 1
    path = pdf_render.render_page(pdf, 1, 900, tmp_path / "cache")
    width, height = _png_size(path)
    assert width == 900
    assert height > 0
