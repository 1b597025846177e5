"""``manage.py attach_gold``: gold and attention items for a SciQ validation batch, with its thresholds."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from django.core.management.base import CommandError, CommandParser

from annotation.batch_options import BatchOptionsError
from annotation.importers.errors import ImportDataError
from annotation.importers.mcq import read_sciq
from annotation.models import Batch, GoldItem
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
        "at the rates given, and set the gold accuracy under which a worker is flagged or blocked."
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
        specs = self._specs(opts)
        try:
            target = target_batch(batch)
        except GoldSetupError as exc:
            raise CommandError(str(exc)) from exc
        settings = {key: opts[name] for name, key in SETTINGS.items() if opts[name] is not None}
        if settings:
            target.options = {**target.options, **settings}
            try:
                target.save(update_fields=["options"])
            except BatchOptionsError as exc:
                raise CommandError(str(exc)) from exc
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
