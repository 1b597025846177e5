"""``manage.py attach_gold``: gold and attention items for a SciQ validation batch, or known-answer
questions for a syllabus QA batch, with the batch's thresholds."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from django.core.management.base import CommandError, CommandParser

from annotation.batch_options import BatchOptionsError
from annotation.hits import handler_for
from annotation.importers.errors import ImportDataError
from annotation.importers.mcq import read_sciq
from annotation.models import Batch, GoldItem
from annotation.screening.quiz import MAX_QUIZ_QUESTIONS
from annotation.services.batches import QUIZ_OPTION, add_quiz
from config.commands import JsonCommand
from crowd.gold import (
    DEFAULT_ATTENTION_FAILURES,
    GoldError,
    GoldSpec,
    attention_default_rule,
    attention_items,
    read_gold_file,
    sciq_gold,
)
from crowd.services.gold import GoldSetupError, attach_items, target_batch

SETTINGS = {
    "gold_rate": "gold_rate",
    "attention_rate": "attention_rate",
    "warn_below": "gold_warn_below",
    "block_below": "gold_block_below",
    "min_answers": "gold_min_answers",
    "attention_block": "attention_block_failures",
}
"""Command option -> ``Batch.options`` key."""


def _percent(value: str) -> float:
    number = float(value)
    if not 0 <= number <= 100:
        raise ValueError(value)
    return number


class Command(JsonCommand):
    help = (
        "Attach gold items (known verdicts) and attention items (instructed responses) to a SciQ "
        "validation batch (or the validation batch of a SciQ question batch), served among its real HITs "
        "at the rates given, or known-answer questions on the syllabus to every HIT of a syllabus QA "
        "batch (--questions N), and set the gold accuracy under which a worker is flagged or blocked."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch", type=int, required=True, metavar="ID", help="The batch.")
        parser.add_argument(
            "--file",
            metavar="FILE.jsonl",
            help='Items, one a line: {"question", "answer", "passage", "label": "accept"|"reject"} for a '
            'gold item, or {..., "flags": [...]} for an attention item asking to tick exactly those flags.',
        )
        parser.add_argument(
            "--sciq", metavar="DIR", help="SciQ's folder (train.json, valid.json, test.json)."
        )
        parser.add_argument(
            "--sciq-split", default="test", choices=("train", "val", "test"), help="Default test."
        )
        parser.add_argument("--gold-n", type=int, default=0, help="Gold items drawn from SciQ.")
        parser.add_argument(
            "--bad-share",
            type=float,
            default=0.3,
            help="Share of SciQ gold items shown with one of their distractors as the answer (known "
            "reject; default 0.3).",
        )
        parser.add_argument("--attention-n", type=int, default=0, help="Attention items drawn from SciQ.")
        parser.add_argument("--seed", type=int, default=0, help="Seed of the SciQ draws.")
        parser.add_argument(
            "--questions",
            type=int,
            metavar="N",
            help="Syllabus QA batches: known-answer questions per HIT from each syllabus's reference "
            f"pairs, shown on every HIT and counted as gold (1 to {MAX_QUIZ_QUESTIONS}; 0 removes them).",
        )
        parser.add_argument(
            "--questions-seed", type=int, default=0, help="Seed of the known-answer questions' choice."
        )
        parser.add_argument("--gold-rate", type=_percent, help="Gold items served per 100 real HITs.")
        parser.add_argument(
            "--attention-rate", type=_percent, help="Attention items served per 100 real HITs."
        )
        parser.add_argument(
            "--warn-below", type=_percent, help="Flag a worker under this gold accuracy (%%)."
        )
        parser.add_argument(
            "--block-below", type=_percent, help="Block a worker under this gold accuracy (%%)."
        )
        parser.add_argument(
            "--min-answers",
            type=int,
            help="Gold answers a worker gives before the thresholds act (default 5).",
        )
        parser.add_argument(
            "--attention-block",
            type=int,
            help="Failed attention items that block a worker (default "
            + ", ".join(filter(None, (str(DEFAULT_ATTENTION_FAILURES), attention_default_rule())))
            + "; 0: never).",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        batch = Batch.objects.filter(pk=opts["batch"]).first()
        if batch is None:
            raise CommandError(f"--batch: no Batch({opts['batch']})")
        for name in ("gold_n", "attention_n", "min_answers", "attention_block"):
            if (opts[name] or 0) < 0:
                raise CommandError(f"--{name.replace('_', '-')} must not be negative, got {opts[name]}")
        if not 0 <= opts["bad_share"] <= 1:
            raise CommandError(f"--bad-share must be between 0 and 1, got {opts['bad_share']}")
        if (opts["gold_n"] or opts["attention_n"]) and not opts["sciq"]:
            raise CommandError("--gold-n and --attention-n draw from SciQ: give --sciq DIR")
        if handler_for(batch.kind).gold_quiz:
            self._syllabus(batch, opts)
            return
        if opts["questions"] is not None:
            raise CommandError(f"--questions is for syllabus QA batches; Batch({batch.pk}) is {batch.kind}")
        specs = self._specs(opts)
        try:
            target = target_batch(batch)
        except GoldSetupError as exc:
            raise CommandError(str(exc)) from exc
        self._save_settings(target, opts)
        try:
            result = attach_items(target, specs)
        except GoldSetupError as exc:
            raise CommandError(str(exc)) from exc
        items = GoldItem.objects.filter(batch=target)
        summary = {
            **result,
            "items": {kind: items.filter(kind=kind).count() for kind in GoldItem.Kind.values},
            "unserved": items.unserved().count(),
            "options": {key: target.options[key] for key in SETTINGS.values() if key in target.options},
        }
        self.emit(
            summary,
            [
                f"Batch({target.pk}): {result['attached']} item(s) attached "
                f"({result['skipped']} already there), {result['served']} served now, "
                f"{summary['unserved']} waiting for real HITs"
            ],
        )

    def _save_settings(self, target: Batch, opts: dict[str, Any], names: tuple[str, ...] = ()) -> None:
        settings = {
            key: opts[name]
            for name, key in SETTINGS.items()
            if opts[name] is not None and (not names or name in names)
        }
        if settings:
            target.options = {**target.options, **settings}
            try:
                target.save(update_fields=["options"])
            except BatchOptionsError as exc:
                raise CommandError(str(exc)) from exc

    def _syllabus(self, batch: Batch, opts: dict[str, Any]) -> None:
        """Known-answer questions on each HIT's syllabus (the screening quiz's draw), and the thresholds."""
        item_options = [
            f"--{name.replace('_', '-')}"
            for name in ("file", "sciq", "gold_n", "attention_n", "gold_rate", "attention_rate")
            if opts[name]
        ]
        if item_options:
            raise CommandError(
                f"Batch({batch.pk}) is a syllabus QA batch: its gold is known-answer questions on each "
                f"HIT's syllabus (--questions N); {', '.join(item_options)} are for SciQ validation batches"
            )
        if opts["attention_block"] is not None:
            raise CommandError("--attention-block: a syllabus QA batch has no attention items")
        questions = opts["questions"]
        if questions is not None and not 0 <= questions <= MAX_QUIZ_QUESTIONS:
            raise CommandError(f"--questions must be between 0 and {MAX_QUIZ_QUESTIONS}, got {questions}")
        if questions is None and not (batch.options.get(QUIZ_OPTION) or {}).get("n"):
            raise CommandError(f"Batch({batch.pk}) has no known-answer questions yet: give --questions N")
        self._save_settings(batch, opts, ("warn_below", "block_below", "min_answers"))
        if questions is not None:
            add_quiz(batch, questions, opts["questions_seed"])
        quiz = batch.options.get(QUIZ_OPTION) or {}
        by_document = quiz.get("by_document") or {}
        documents = batch.hits.values("document").distinct().count()
        summary = {
            "batch": batch.pk,
            "questions": quiz.get("n", 0),
            "documents": documents,
            "documents_with_questions": len(by_document),
            "documents_without": documents - len(by_document),
            "options": {key: batch.options[key] for key in SETTINGS.values() if key in batch.options},
        }
        self.emit(
            summary,
            [
                f"Batch({batch.pk}): {quiz.get('n', 0)} known-answer question(s) per HIT on "
                f"{len(by_document)} of {documents} syllabi (the others have no usable reference pair)"
            ],
        )

    def _specs(self, opts: dict[str, Any]) -> list[GoldSpec]:
        specs: list[GoldSpec] = []
        if opts["file"]:
            path = Path(opts["file"])
            if not path.is_file():
                raise CommandError(f"--file {path}: no such file")
            try:
                specs += read_gold_file(path)
            except GoldError as exc:
                raise CommandError(str(exc)) from exc
        if opts["sciq"]:
            specs += self._sciq(Path(opts["sciq"]), opts)
        return specs

    def _sciq(self, root: Path, opts: dict[str, Any]) -> list[GoldSpec]:
        try:
            records = read_sciq(root, splits=(opts["sciq_split"],))
        except ImportDataError as exc:
            raise CommandError(f"--sciq: {exc}") from exc
        gold = sciq_gold(records, opts["gold_n"], opts["bad_share"], opts["seed"])
        used: set[Optional[str]] = {spec.source.removeprefix("sciq:") for spec in gold}
        attention = attention_items(
            [r for r in records if r.id not in used], opts["attention_n"], opts["seed"]
        )
        return gold + attention
