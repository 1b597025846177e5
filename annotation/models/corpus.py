"""Corpora, documents and passages: the text that HITs are built from."""

from __future__ import annotations

import bisect
import hashlib

from django.db import models


def sha256_text(text: str) -> str:
    """Hex SHA-256 of a text's UTF-8 bytes (used to detect unchanged re-imports)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Corpus(models.Model):
    """A named collection of documents and passages (one per imported dataset by default)."""

    class Kind(models.TextChoices):
        SYLLABUS = "syllabus", "Syllabi"
        TEXTBOOK = "textbook", "Textbook passages"
        EXAM = "exam", "Exam questions"
        GENERIC = "generic", "Documents"

    name = models.SlugField(max_length=100, unique=True)
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.GENERIC)
    description = models.TextField(blank=True)
    source = models.CharField(max_length=500, blank=True, help_text="Where the data came from.")
    license = models.CharField(max_length=200, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "corpora"

    def __str__(self) -> str:
        return self.name


class Document(models.Model):
    """One source document (a syllabus, a textbook chapter) with clean UTF-8 text and page offsets.

    ``page_starts[i]`` is the character offset in ``text`` where page ``i + 1`` begins, so an answer
    span located by character offsets can be shown on its PDF page.
    """

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="documents")
    name = models.CharField(max_length=300)
    title = models.CharField(max_length=500, blank=True)
    text = models.TextField()
    text_sha256 = models.CharField(max_length=64, editable=False)
    pdf = models.FileField(upload_to="pdfs/", blank=True)
    page_starts = models.JSONField(default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    original_split = models.CharField(max_length=10, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["corpus", "name"]
        constraints = [models.UniqueConstraint(fields=["corpus", "name"], name="document_unique_name")]

    def __str__(self) -> str:
        return f"{self.corpus.name}/{self.name}"

    @property
    def num_pages(self) -> int:
        """Number of pages (1 for a document without page information)."""
        return max(1, len(self.page_starts))

    def page_of(self, offset: int) -> int:
        """Return the 1-based page holding character ``offset``."""
        if not self.page_starts:
            return 1
        return max(1, bisect.bisect_right(self.page_starts, offset))

    def page_bounds(self, page: int) -> tuple[int, int]:
        """Return the [start, end) character range of a 1-based page.

        Raises:
            ValueError: when the page does not exist.
        """
        if page < 1 or page > self.num_pages:
            raise ValueError(f"Document({self.pk}) has no page {page} (it has {self.num_pages})")
        starts = self.page_starts or [0]
        end = starts[page] if page < len(starts) else len(self.text)
        return starts[page - 1], end

    def page_text(self, page: int) -> str:
        """Text of one 1-based page."""
        start, end = self.page_bounds(page)
        return self.text[start:end]


MAX_CROWD_REJECTIONS = 2
"""A passage that two stage-1 workers rejected (each among three) is not offered again."""


class PassageQuerySet(models.QuerySet):
    """Queries over passages that views, tasks and HIT creation share."""

    def accepted(self) -> PassageQuerySet:
        return self.filter(filter_status=Passage.FilterStatus.ACCEPTED)

    def unused(self) -> PassageQuerySet:
        """Passages nobody has written a question about and no open HIT is showing as chosen."""
        return self.filter(used_by__isnull=True)

    def not_retired(self) -> PassageQuerySet:
        """Passages fewer than :data:`MAX_CROWD_REJECTIONS` stage-1 workers found unsuitable."""
        return self.filter(crowd_rejections__lt=MAX_CROWD_REJECTIONS)


class Passage(models.Model):
    """A paragraph of a corpus with the sentence filter's verdict and the rule codes behind it."""

    class FilterStatus(models.TextChoices):
        PENDING = "pending", "Not filtered yet"
        ACCEPTED = "accepted", "Accepted"
        REJECTED = "rejected", "Rejected"

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="passages")
    document = models.ForeignKey(
        Document, on_delete=models.CASCADE, related_name="passages", null=True, blank=True
    )
    position = models.PositiveIntegerField(default=0, help_text="Order within the document or corpus.")
    text = models.TextField()
    text_sha256 = models.CharField(max_length=64, editable=False)
    start = models.PositiveIntegerField(null=True, blank=True, help_text="Offset in the document text.")
    filter_status = models.CharField(
        max_length=10, choices=FilterStatus.choices, default=FilterStatus.PENDING
    )
    filter_reasons = models.JSONField(default=list, blank=True)
    filtered_at = models.DateTimeField(null=True, blank=True)
    used_by = models.ForeignKey(
        "QAPair",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="The QA pair written about this passage; a used passage is never offered again.",
    )
    crowd_rejections = models.PositiveSmallIntegerField(
        default=0, help_text="How many SciQ stage-1 workers rejected this passage (with its two companions)."
    )

    objects = PassageQuerySet.as_manager()

    class Meta:
        ordering = ["corpus", "document", "position"]
        constraints = [
            models.UniqueConstraint(fields=["corpus", "text_sha256"], name="passage_unique_text"),
        ]
        # Plain B-tree indexes rather than db_index (see annotation.models.work.HIT.Meta).
        indexes = [
            models.Index(fields=["corpus", "filter_status"], name="passage_corpus_status"),
            models.Index(fields=["text_sha256"], name="passage_text_sha256"),
            models.Index(fields=["filter_status"], name="passage_filter_status"),
        ]

    def __str__(self) -> str:
        return f"Passage({self.pk}) {self.text[:60]}"
