"""Models of the `exports` app: a catalogue of the releases written to disk.

A release is an immutable directory (docs/reference/releases.md); the row only records where it is and what
its manifest said when it was registered, so pages and benchmark runs can refer to it. The files stay
the source of truth: the manifest's own sha256 is kept to notice a directory that changed behind our
back (Label Studio's export snapshots keep a checksum for the same reason).
"""

from __future__ import annotations

from django.db import models


class Release(models.Model):
    """One release directory registered by ``export_release`` (or by ``run_benchmark`` on first use)."""

    name = models.CharField(max_length=100)
    version = models.CharField(max_length=50)
    path = models.CharField(max_length=500, unique=True, help_text="Absolute path of the release directory.")
    manifest_sha256 = models.CharField(max_length=64)
    kind = models.CharField(max_length=20, blank=True, help_text="qa (SyllabusQA-style) or mcq (SciQ-style).")
    counts = models.JSONField(default=dict, blank=True, help_text="Split -> number of items.")
    seed = models.IntegerField(null=True, blank=True)
    ratios = models.JSONField(default=dict, blank=True)
    source = models.CharField(max_length=200, blank=True, help_text="Corpus or batch the items came from.")
    created = models.DateTimeField(help_text="When the release was built (the manifest's 'created').")
    published_url = models.CharField(
        max_length=1100,
        blank=True,
        help_text="s3://bucket/prefix/ the release was last published to (export_release --publish).",
    )
    registered = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "-created"]
        constraints = [models.UniqueConstraint(fields=["name", "version"], name="release_name_version")]

    def __str__(self) -> str:
        return f"{self.name} {self.version}"
