"""``manage.py create_expert_batch``: an expert answers a sample of a release split (SyllabusQA 2.3).

The JSON last line names the batch id and its HIT count.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.question_types import SPLITS
from config.commands import JsonCommand
from evaluation.services.expert import ExpertBatchError, create_expert_batch
from exports.release_files import ReleaseError
from exports.services.releases import register_shared


class Command(JsonCommand):
    help = (
        "Create a local-crowd batch of expert_answer HITs, one per sampled question of a release split; "
        "then give the expert a link with invite_workers --batch ID --count 1 --expert."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--release", required=True, help="The release directory (holds manifest.json).")
        parser.add_argument("--sample", type=int, default=100, help="How many questions (default 100).")
        parser.add_argument("--seed", type=int, default=0, help="Sampling seed (default 0).")
        parser.add_argument("--split", choices=SPLITS, default="test", help="Split to sample (default test).")
        parser.add_argument("--name", default="", help="Batch name (default: release, version and split).")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            release = register_shared(opts["release"])
            batch = create_expert_batch(
                release, opts["sample"], seed=opts["seed"], split=opts["split"], name=opts["name"]
            )
        except (ReleaseError, ExpertBatchError) as exc:
            raise CommandError(str(exc)) from exc
        hits = batch.hits.count()
        self.emit(
            {
                "batch": batch.pk,
                "hits": hits,
                "release": release.pk,
                "split": opts["split"],
                "seed": opts["seed"],
            },
            [
                f"Batch({batch.pk}) {batch.name}: {hits} HITs, open on the local crowd.",
                f"Invite the expert: manage.py invite_workers --batch {batch.pk} --count 1 --expert",
            ],
        )
