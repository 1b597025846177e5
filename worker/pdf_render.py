"""Render one page of a PDF to a PNG at a requested width, cached on disk (no Django import).

Why: the Syllabus HIT shows the syllabus as page images beside its text (SyllabusQA section 2.1 keeps
the raw PDFs because tables, boxes and schedules lose their layout in extracted text). Rendering on the
server means the page works in MTurk's iframe and on any browser without a PDF viewer, and the disk
cache means each (PDF, page, width) is rasterised once however many workers open the HIT.

Pages are numbered from 1, as a worker reads them and as they appear in URLs. Rendering uses pypdfium2
(PDFium). PDFium is not thread-safe, so calls into it hold one process-wide lock; separate processes (gunicorn
workers) are safe, and the cache is written through a temporary file and :func:`os.replace`, so concurrent
requests never see a half-written PNG.
"""

from __future__ import annotations

import functools
import io
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from annotation.hashing import file_sha256
from config.atomic import atomic_write

if TYPE_CHECKING:
    import pypdfium2

logger = logging.getLogger(__name__)

#: Narrowest and widest page image served; requests outside are clamped (a tiny image is unreadable,
#: a huge one is a cheap way to exhaust memory).
MIN_WIDTH = 400
MAX_WIDTH = 2000
DEFAULT_WIDTH = 900

_PDFIUM_LOCK = threading.Lock()


def clamp_width(width: int) -> int:
    """Clamp a requested pixel width to [:data:`MIN_WIDTH`, :data:`MAX_WIDTH`]."""
    return max(MIN_WIDTH, min(MAX_WIDTH, int(width)))


@functools.lru_cache(maxsize=512)
def _sha256_cached(path: str, size: int, mtime_ns: int) -> str:
    """The PDF's digest, memoised by path, size and mtime so a page request does not re-read the file."""
    return file_sha256(Path(path))


def pdf_sha256(pdf_path: Path) -> str:
    """Hex SHA-256 of a PDF, the content part of the cache key (renaming a file keeps its cache)."""
    stat = pdf_path.stat()
    return _sha256_cached(str(pdf_path), stat.st_size, stat.st_mtime_ns)


def _open(pdf_path: Path) -> pypdfium2.PdfDocument:
    """Open a PDF with PDFium, turning its error into a ValueError that names the file."""
    import pypdfium2

    try:
        return pypdfium2.PdfDocument(str(pdf_path))
    except pypdfium2.PdfiumError as e:
        raise ValueError(f"{pdf_path}: cannot open PDF ({e})") from e


def page_count(pdf_path: Path) -> int:
    """Number of pages of a PDF.

    Args:
        pdf_path: the PDF file.

    Returns:
        The page count.

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: the file is not a readable PDF (the message names it).
    """
    pdf_path = Path(pdf_path)
    if not pdf_path.is_file():
        raise FileNotFoundError(f"{pdf_path}: no such PDF")
    with _PDFIUM_LOCK:
        document = _open(pdf_path)
        try:
            return len(document)
        finally:
            document.close()


def render_page_png(pdf_path: Path, page: int, width: int) -> bytes:
    """Rasterise one page to PNG bytes, exactly ``clamp_width(width)`` pixels wide (no cache).

    Args:
        pdf_path: the PDF file.
        page: 1-based page number.
        width: requested width in pixels (clamped, see :func:`clamp_width`).

    Returns:
        The PNG image; its height keeps the page's aspect ratio.

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: the page is out of range (the message names the file and its page count), or the
            file is not a readable PDF.
    """
    pdf_path = Path(pdf_path)
    if not pdf_path.is_file():
        raise FileNotFoundError(f"{pdf_path}: no such PDF")
    width = clamp_width(width)
    with _PDFIUM_LOCK:
        document = _open(pdf_path)
        try:
            count = len(document)
            if not 1 <= page <= count:
                raise ValueError(f"{pdf_path}: page {page} is out of range (the PDF has {count} pages)")
            pdf_page = document[page - 1]
            try:
                # get_size() is in PDF points (1/72 in) and already accounts for the page's rotation.
                page_width, _ = pdf_page.get_size()
                scale = width / page_width if page_width > 0 else 1.0
                bitmap = pdf_page.render(scale=scale, fill_color=(255, 255, 255, 255))
                image = bitmap.to_pil()
            finally:
                pdf_page.close()
        finally:
            document.close()
    if image.width != width:
        # PDFium rounds the bitmap size; resize by the pixel or two so the width is exactly as asked.
        from PIL import Image

        height = max(1, round(image.height * width / image.width))
        image = image.resize((width, height), Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()


def cache_path(pdf_path: Path, page: int, width: int, cache_dir: Path) -> Path:
    """Where the PNG of (PDF content, page, clamped width) is cached.

    The layout is ``<cache_dir>/<sha[:2]>/<sha>-p<page>-w<width>.png``: the two-character fan-out keeps
    directories small when thousands of syllabi are cached.
    """
    digest = pdf_sha256(Path(pdf_path))
    return Path(cache_dir) / digest[:2] / f"{digest}-p{page}-w{clamp_width(width)}.png"


def render_page(pdf_path: Path, page: int, width: int, cache_dir: Path) -> Path:
    """Return the path of a cached PNG of one PDF page, rendering it on the first request.

    The cache key is the PDF's SHA-256, the page and the clamped width, so an edited PDF gets fresh
    images and the same file under two names shares them. The PNG is written to a temporary file in the
    same directory and moved into place with :func:`os.replace` (atomic on POSIX), so two requests
    rendering the same page at once both succeed and readers never see a partial file.

    Args:
        pdf_path: the PDF file.
        page: 1-based page number.
        width: requested width in pixels (clamped to [:data:`MIN_WIDTH`, :data:`MAX_WIDTH`]).
        cache_dir: the cache directory (created if missing).

    Returns:
        The path of the PNG file inside ``cache_dir``.

    Raises:
        FileNotFoundError: the PDF does not exist.
        ValueError: the page is out of range (names the file and its page count) or the PDF is unreadable.
    """
    pdf_path = Path(pdf_path)
    if not pdf_path.is_file():
        raise FileNotFoundError(f"{pdf_path}: no such PDF")
    target = cache_path(pdf_path, page, width, cache_dir)
    if target.is_file():
        return target
    png = render_page_png(pdf_path, page, width)
    # 0644: a front-end server may serve the cache directly.
    with atomic_write(target, "wb", permissions=0o644) as handle:
        handle.write(png)
    logger.info("Rendered %s page %d at %d px to %s", pdf_path, page, clamp_width(width), target)
    return target
