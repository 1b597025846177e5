"""A cap on what one request may upload (``CROWDQA_UPLOAD_MAX_MB``), enforced while the body streams in.

Django writes uploaded files larger than ``FILE_UPLOAD_MAX_MEMORY_SIZE`` to temporary files but sets no
bound on their size. :class:`UploadLimitHandler`, first in ``FILE_UPLOAD_HANDLERS``, counts the bytes of
every file of the request and stops the upload once they pass the cap: the rest of the body is read and
dropped (so the browser gets a page, not a reset connection), no file of the request is kept, and
``request.upload_refused`` says why, for the view to show with the form's other choices kept (the
fields sent before the first file still arrive).
"""

from __future__ import annotations

from typing import Any, Optional

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload


def upload_limit_bytes() -> int:
    """The most bytes of files one request may upload."""
    return int(getattr(settings, "CROWDQA_UPLOAD_MAX_MB", 100)) * 1024 * 1024


class UploadLimitHandler(FileUploadHandler):
    """Stops a request's upload once its files pass :func:`upload_limit_bytes` in total."""

    def __init__(self, request: Optional[Any] = None) -> None:
        super().__init__(request)
        self.received = 0

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received += len(raw_data)
        limit = upload_limit_bytes()
        if self.received > limit:
            if self.request is not None:
                self.request.upload_refused = (
                    f"The files are larger than {limit // (1024 * 1024)} MB, the most one upload may hold; "
                    "nothing was kept. Upload fewer files at a time, or import a large dataset with the "
                    "manage.py import commands."
                )
            raise StopUpload(connection_reset=False)
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None
