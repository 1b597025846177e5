"""Celery tasks of the distractors app: training and bulk suggestion, recorded as Jobs.

Training's libraries (torch, spaCy, scikit-learn) are imported by the task that trains, not by this
module: every default-queue worker imports it at start, and most never train.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from annotation.models import Job
from config.jobs import shared_task
from distractors.model_store import local_model_dir, publish_model


def model_dir() -> Path:
    """Where this host trains the ranker (``CROWDQA_MODEL_DIR/distractors``)."""
    return local_model_dir()


#: TrainConfig fields a job may also set (a small model trains in seconds: tests, trials).
SMALL_MODEL_KNOBS = (
    "wordfreq_top_n",
    "include_wordnet_nouns",
    "include_wordnet_glosses",
    "tag_all_candidates",
    "n_jobs",
)


@shared_task(name="distractors.tasks.train_ranker", acks_late=True)
def train_ranker(job_id: int) -> dict[str, Any]:
    """Train the random-forest ranker (params: arc_dir, sciq_dir, n_trees, max_questions, out_dir,
    deterministic, and optionally :data:`SMALL_MODEL_KNOBS` for a quick small model).

    Without ``out_dir`` the ranker goes to this host's ``CROWDQA_MODEL_DIR/distractors`` and, with a
    shared storage, is published there as the version every host serves (distractors/model_store.py).

    Training writes a fresh model directory, so running it twice gives a second, equivalent model. Any
    error marks the Job failed with the message.
    """

    from distractors import training

    def work(job: Job) -> dict[str, Any]:
        params = job.params
        config = training.TrainConfig(
            arc_dir=Path(params["arc_dir"]) if params.get("arc_dir") else None,
            sciq_dir=Path(params["sciq_dir"]) if params.get("sciq_dir") else None,
            n_trees=int(params.get("n_trees", 500)),
            max_questions=params.get("max_questions"),
            deterministic=bool(params.get("deterministic", False)),
            **{key: params[key] for key in SMALL_MODEL_KNOBS if key in params},
        )

        def progress(stage: str, fraction: float) -> None:
            job.report(int(fraction * 100))

        if params.get("out_dir"):  # a folder named by the caller: trained there, not served
            return training.train(config, Path(params["out_dir"]), progress=progress)
        result = training.train(config, model_dir(), progress=progress)
        version = publish_model(model_dir())
        return {**result, **({"published_version": version} if version else {})}

    return Job.objects.get(pk=job_id).run(work, total=100)
