"""Models of the `evaluation` app: benchmark runs of a system on a release and what they measured.

The heavy lifting (generation, fine-tuning, metrics) lives in plain modules and runs as jobs on the
``gpu`` queue; a run row records what was asked (system, model, prompts, parameters), where the job is,
and the figures it produced, so the leaderboard page and the dataset card read one table. Per-item
predictions and scores go to the run's JSON file, not to rows: thousands of items per run.
"""

from __future__ import annotations

from django.db import models


class BenchmarkRun(models.Model):
    """One system evaluated on one split of one release (``run_benchmark``, or the expert "human" row)."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    release = models.ForeignKey("exports.Release", on_delete=models.CASCADE, related_name="benchmark_runs")
    split = models.CharField(max_length=10, default="test")
    system = models.CharField(
        max_length=30, help_text="search, zero-shot, rag, cot, sft, or human (expert agreement)."
    )
    model_name = models.CharField(
        max_length=300, blank=True, help_text="Model directory, endpoint model or ''."
    )
    params = models.JSONField(default=dict, blank=True, help_text="Every parameter that shapes the run.")
    prompts = models.JSONField(default=dict, blank=True, help_text="Prompt templates used, by name.")
    metrics_requested = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    task_id = models.CharField(max_length=64, blank=True)
    progress = models.JSONField(default=dict, blank=True, help_text="{'done': n, 'total': m, 'stage': ...}")
    n_items = models.PositiveIntegerField(default=0)
    metrics = models.JSONField(default=dict, blank=True, help_text="Overall figures, e.g. rougeL_f1.")
    stratified = models.JSONField(
        default=dict, blank=True, help_text="{'question_type': {type: {metric: value}}, 'answer_source': ...}"
    )
    timings = models.JSONField(default=dict, blank=True, help_text="Seconds per stage.")
    results_path = models.CharField(max_length=500, blank=True, help_text="JSON file with per-item results.")
    error = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        indexes = [models.Index(fields=["release", "split", "system"])]

    def __str__(self) -> str:
        return f"{self.system} on {self.release} ({self.split})"
