"""``manage.py train_distractor_ranker``: train and evaluate the SciQ random-forest distractor ranker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from annotation.models import Job
from config.commands import JsonCommand
from config.shared_data import dataset_dir
from distractors.tasks import model_dir, train_ranker


class Command(JsonCommand):
    help = (
        "Train the distractor ranker (500-tree random forest over the SciQ paper's features) on ARC and "
        "SciQ train, evaluate it, and save it to CROWDQA_MODEL_DIR/distractors. Prints the metrics as JSON."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--arc", type=Path, default=dataset_dir("arc"), help="ARC folder (default: shared data)."
        )
        parser.add_argument(
            "--sciq", type=Path, default=dataset_dir("sciq"), help="SciQ folder (default: shared data)."
        )
        parser.add_argument(
            "--trees", type=int, default=500, help="Number of trees (default 500, as the paper)."
        )
        parser.add_argument(
            "--max-questions", type=int, help="Train on at most this many questions (quick runs)."
        )
        parser.add_argument(
            "--out", type=Path, help="Model directory (default CROWDQA_MODEL_DIR/distractors)."
        )
        parser.add_argument(
            "--deterministic",
            action="store_true",
            help="Train the embeddings on one thread: the same data and seed give the same model, "
            "bit for bit (slower).",
        )
        parser.add_argument("--sync", action="store_true", help="Run in this process instead of on a worker.")

    def handle(self, *args: Any, **options: Any) -> None:
        for name in ("arc", "sciq"):
            path = options[name]
            if path is not None and not path.is_dir():
                raise CommandError(f"--{name} {path}: no such folder")
        if options["arc"] is None and options["sciq"] is None:
            raise CommandError("no training data: pass --arc and/or --sciq")
        if options["trees"] < 1:
            raise CommandError("--trees must be at least 1")
        job = Job.objects.create(
            kind="train_distractor_ranker",
            params={
                "arc_dir": str(options["arc"]) if options["arc"] else None,
                "sciq_dir": str(options["sciq"]) if options["sciq"] else None,
                "n_trees": options["trees"],
                "max_questions": options["max_questions"],
                # no --out: the worker's own CROWDQA_MODEL_DIR, published to the shared storage
                "out_dir": str(options["out"]) if options["out"] else None,
                "deterministic": options["deterministic"],
            },
        )
        if not options["sync"]:
            task = train_ranker.delay(job.pk)
            job.celery_task_id = task.id
            job.save(update_fields=["celery_task_id"])
            self.emit({"job": job.pk, "status": job.status, "task": task.id}, [f"Job({job.pk}) queued."])
            return
        train_ranker(job.pk)
        job.refresh_from_db()
        self.emit(
            {"job": job.pk, "status": job.status, **job.result},
            [f"Model saved to {job.params['out_dir'] or model_dir()}."],
        )
