"""``manage.py aggregate_judgements``: one verdict per item and one skill per worker from repeated labels."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.models import Batch
from config.commands import JsonCommand
from crowd.aggregation import (
    DEFAULT_METHOD,
    METHODS,
    AggregationError,
    aggregate,
    parse_gold,
    parse_judgements,
)


class Command(JsonCommand):
    help = (
        "Aggregate repeated judgements (a batch's SciQ stage-2 validations, or a JSON-lines file of "
        '{"item", "worker", "label"}) with majority vote, Dawid-Skene or MACE (crowd-kit); the last line '
        'is {"method", "items": {ITEM: {"label", "confidence"}}, "workers": {WORKER: {"skill", "n"}}}.'
    )

    def add_arguments(self, parser: CommandParser) -> None:
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument(
            "--batch",
            type=int,
            metavar="ID",
            help="A SciQ batch: its stage-2 validations (items are QA pair ids, labels accept/reject); the "
            "gold items served in it (attach_gold) are gold.",
        )
        source.add_argument(
            "--input",
            metavar="FILE.jsonl",
            help='Judgements, one JSON object a line: {"item": ..., "worker": ..., "label": ...}.',
        )
        parser.add_argument(
            "--method",
            choices=METHODS,
            default=DEFAULT_METHOD,
            help=f"Aggregation method (default {DEFAULT_METHOD}).",
        )
        parser.add_argument(
            "--gold",
            metavar="FILE.jsonl",
            help='Known labels of gold items, one {"item": ..., "label": ...} a line: each worker\'s '
            "accuracy on them is reported, and Dawid-Skene fits with them fixed.",
        )
        parser.add_argument(
            "--json", action="store_true", help="Print only the JSON object (no summary lines)."
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        gold: dict[str, str] = {}
        if opts["batch"] is not None:
            from crowd.services.judgements import batch_gold, batch_judgements

            batch = Batch.objects.filter(pk=opts["batch"]).first()
            if batch is None:
                raise CommandError(f"no Batch({opts['batch']})")
            judgements = batch_judgements(batch)
            gold = batch_gold(batch)
        else:
            path = Path(opts["input"])
            if not path.is_file():
                raise CommandError(f"--input {path}: no such file")
            try:
                with path.open(encoding="utf-8") as handle:
                    judgements = parse_judgements(handle, where=str(path))
            except UnicodeDecodeError as exc:
                raise CommandError(f"--input {path}: not UTF-8 text ({exc.reason})") from exc
            except AggregationError as exc:
                raise CommandError(str(exc)) from exc
        if opts["gold"]:
            path = Path(opts["gold"])
            if not path.is_file():
                raise CommandError(f"--gold {path}: no such file")
            try:
                with path.open(encoding="utf-8") as handle:
                    gold.update(parse_gold(handle, where=str(path)))
            except UnicodeDecodeError as exc:
                raise CommandError(f"--gold {path}: not UTF-8 text ({exc.reason})") from exc
            except AggregationError as exc:
                raise CommandError(str(exc)) from exc
        try:
            result = aggregate(judgements, opts["method"], gold=gold)
        except AggregationError as exc:
            raise CommandError(str(exc)) from exc
        summary = result.to_dict()
        lines: list[str] = []
        if not opts["json"]:
            alpha = "undefined" if result.alpha is None else f"{result.alpha:.3f}"
            lines.append(
                f"{result.labels} labels, {len(result.items)} items, {len(result.workers)} workers: "
                f"{result.method} in {result.seconds:.2f} s; Krippendorff's alpha {alpha}"
            )
        self.emit(summary, lines)
