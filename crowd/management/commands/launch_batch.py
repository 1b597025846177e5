"""``manage.py launch_batch``: create a batch, check its cost against the budget, publish it."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any, Optional

from django.core.management.base import CommandError, CommandParser

from annotation.hits import BuiltFrom, kinds_where
from annotation.platforms import Platform
from annotation.services.batches import BatchSpec, BatchSpecError
from config.commands import JsonCommand
from crowd.providers import retries
from crowd.providers.base import PublishedUnit, PublishListener
from crowd.providers.costs import format_money
from crowd.providers.traits import arriving, named, platform_traits
from crowd.services.launching import (
    QualificationChoiceError,
    dry_run,
    launch,
    qualification_options,
    unfinished_launch,
)
from crowd.services.lifecycle import LifecycleError


class _Progress(PublishListener):
    """Moves the command's progress bar one HIT at a time."""

    def __init__(self, command: JsonCommand, total: Optional[int]) -> None:
        self.command = command
        self.total = total
        self.done = 0

    def unit(self, unit: PublishedUnit, adopted: bool) -> None:
        self.done += 1
        self.command.progress("publishing", self.done, self.total)


def cents(value: Optional[str], option: str) -> Optional[int]:
    """Dollars as typed ("0.50") -> integer cents; None stays None.

    Raises:
        CommandError: not a non-negative amount.
    """
    if value is None:
        return None
    try:
        amount = Decimal(value)
    except InvalidOperation as exc:
        raise CommandError(f"{option} must be an amount in USD such as 0.50, got {value!r}") from exc
    if amount < 0:
        raise CommandError(f"{option} must not be negative, got {value}")
    return int((amount * 100).to_integral_value())


GOLD_FLAGS: dict[str, tuple[str, str, str]] = {
    "--gold-rate": ("PCT", "Gold items (attach_gold) served per 100 real validation HITs.", "gold_rate"),
    "--attention-rate": ("PCT", "Attention items served per 100 real validation HITs.", "attention_rate"),
    "--gold-warn-below": (
        "PCT",
        "Flag a validator whose gold accuracy falls under this percent.",
        "gold_warn_below",
    ),
    "--gold-block-below": (
        "PCT",
        "Block a validator whose gold accuracy falls under this percent.",
        "gold_block_below",
    ),
    "--gold-min-answers": (
        "N",
        "Gold answers a validator gives before the thresholds act (default 5).",
        "gold_min_answers",
    ),
    "--attention-block": (
        "N",
        "Failed attention items that block a validator (default 2; 0: never).",
        "attention_block_failures",
    ),
}
"""The gold and attention settings: flag -> (metavar, help, ``Batch.options`` key)."""


def _number(flag: str) -> Any:
    """The argparse type of a gold flag: a percent from 0 to 100, or a whole number >= 0."""

    def parse(value: str) -> Any:
        try:
            number = float(value) if GOLD_FLAGS[flag][0] == "PCT" else int(value)
        except ValueError as exc:
            raise CommandError(f"{flag} must be a number, got {value!r}") from exc
        if number < 0 or (GOLD_FLAGS[flag][0] == "PCT" and number > 100):
            raise CommandError(
                f"{flag} must be {'0 to 100' if GOLD_FLAGS[flag][0] == 'PCT' else '>= 0'}, got {value}"
            )
        return number

    return parse


def gold_options(opts: dict[str, Any]) -> dict[str, Any]:
    """The ``Batch.options`` of the gold flags given; they need a kind whose validation serves items.

    Raises:
        CommandError: a gold flag on a kind without a validation page.
    """
    from annotation.hits import handler_for

    given = {key: opts[flag[2:].replace("-", "_")] for flag, (_, _, key) in GOLD_FLAGS.items()}
    given = {key: value for key, value in given.items() if value is not None}
    if given:
        handler = handler_for(opts["kind"])
        stage2 = handler.stage2_kind
        if handler.gold_quiz:
            items = [
                flag
                for flag, (_, _, key) in GOLD_FLAGS.items()
                if key in given and key in ("gold_rate", "attention_rate", "attention_block_failures")
            ]
            if items:
                raise CommandError(
                    f"{', '.join(items)}: a {opts['kind']} batch's gold is known-answer questions on "
                    "its syllabus (--quiz N), not items served at a rate"
                )
        elif not (handler.serves_gold or (stage2 is not None and handler_for(stage2).serves_gold)):
            raise CommandError(
                f"--gold-*/--attention-*: a {opts['kind']} batch serves no gold or attention items "
                "(SciQ question batches do, in their validation stage; syllabus QA batches take "
                "known-answer questions, --quiz N)"
            )
    return given


#: the platforms that approve unreviewed work on their own, so they are told a batch's own delay.
SELF_APPROVING = named(t for t in platform_traits() if t.platform_auto_approval_seconds)


class Command(JsonCommand):
    help = f"Create a batch of HITs and publish it on the local crowd, {named(arriving())}."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--kind",
            required=True,
            # Expert batches answer a release's questions on the local crowd: create_expert_batch.
            choices=kinds_where(lambda h: h.built_from not in (BuiltFrom.RELEASE, BuiltFrom.FOOLED)),
            help="What workers do.",
        )
        parser.add_argument("--provider", default=Platform.LOCAL, choices=Platform.values(), help="Where.")
        parser.add_argument("--corpus", required=True, help="Corpus name.")
        parser.add_argument("--limit", type=int, help="At most this many HITs.")
        parser.add_argument("--assignments", type=int, default=1, help="Workers per HIT.")
        parser.add_argument("--reward", default="0", help="Reward per assignment in USD (0.50).")
        parser.add_argument("--budget", help="Budget cap in USD, fees included; the batch stops there.")
        parser.add_argument(
            "--time-limit",
            type=int,
            default=None,
            help="Minutes a worker has per HIT (default: the task's typical time plus 30, at least 60; "
            "never less than the typical time the consent page states).",
        )
        parser.add_argument("--max-pairs-per-worker", type=int, help="SyllabusQA cap over the batch.")
        parser.add_argument("--max-pairs-per-document", type=int, help="SyllabusQA cap per syllabus.")
        parser.add_argument("--document", action="append", default=[], help="Document name (repeatable).")
        parser.add_argument(
            "--require-qualification",
            type=int,
            metavar="SCREENING_BATCH_ID",
            help="Only workers approved in this screening batch may work.",
        )
        parser.add_argument(
            "--exclude-batch",
            type=int,
            action="append",
            default=[],
            metavar="BATCH_ID",
            help="Keep out workers who did this (screening) batch (repeatable).",
        )
        parser.add_argument(
            "--quiz",
            type=int,
            metavar="N",
            help="N questions with known answers (imported reference pairs of the syllabus) above the 14 "
            "cards, graded automatically after submission. Screening: advice (default 3; 0: no quiz). "
            "Syllabus QA: gold answers that --gold-warn-below/--gold-block-below act on (default none).",
        )
        parser.add_argument("--quiz-seed", type=int, default=0, help="Seed of the quiz questions' choice.")
        parser.add_argument("--title", default="", help="Title shown to workers.")
        parser.add_argument("--description", default="", help="Description shown to workers.")
        parser.add_argument(
            "--validators",
            type=int,
            metavar="K",
            help="SciQ question batches: validators per question in stage 2 (their verdicts are aggregated; "
            "default 1).",
        )
        parser.add_argument(
            "--floor-wage",
            metavar="USD_PER_HOUR",
            help="Least pay per hour of active time: approving tops the reward up with a bonus (e.g. 12.00).",
        )
        for flag, meaning in GOLD_FLAGS.items():
            parser.add_argument(flag, type=_number(flag), metavar=meaning[0], help=meaning[1])
        parser.add_argument(
            "--model-in-the-loop",
            choices=("off", "show", "ask"),
            default="off",
            help="Syllabus QA: the chosen system answers each card as it is written (show), and the "
            "card asks for a question the model gets wrong (ask).",
        )
        parser.add_argument(
            "--model-system",
            choices=("search", "rag"),
            default="search",
            help="Who answers (with --model-in-the-loop): the search baseline (default) or RAG, an LLM "
            "run by a gpu-queue worker.",
        )
        parser.add_argument(
            "--model-judge",
            choices=("lexical", "rouge_l", "fact_qa"),
            default="lexical",
            help="How the model's answer is compared with the worker's (with --model-in-the-loop).",
        )
        parser.add_argument(
            "--validate-verdicts",
            action="store_true",
            help="With --model-in-the-loop: send each submission's 'fooled' pairs to a second worker, who "
            "confirms or disputes that the model was wrong (a model verdict validation batch).",
        )
        parser.add_argument(
            "--auto-approve-hours",
            type=int,
            metavar="H",
            help="Approve (and pay) submitted work nobody reviewed within H hours of its submission "
            f"(1 to 720{f'; {SELF_APPROVING} is told the same delay' if SELF_APPROVING else ''}). "
            "Default: work waits for a review.",
        )
        parser.add_argument("--dry-run", action="store_true", help="Print the cost estimate; create nothing.")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            options = qualification_options(
                opts["provider"], opts["require_qualification"], opts["exclude_batch"]
            )
        except QualificationChoiceError as exc:
            if exc.contradiction is not None:
                pk = exc.contradiction
                raise CommandError(f"--require-qualification {pk} and --exclude-batch {pk}: {exc}") from exc
            raise CommandError(f"--{exc.field.replace('_', '-')}: {exc}") from exc
        if opts["validators"] is not None:
            from annotation.hits import handler_for

            if handler_for(opts["kind"]).stage2_kind is None:
                raise CommandError(f"--validators: a {opts['kind']} batch has no stage 2 to validate it")
            if opts["validators"] < 1:
                raise CommandError(
                    f"--validators: at least 1 validator per question, not {opts['validators']}"
                )
            options["stage2_assignments"] = opts["validators"]
        options.update(gold_options(opts))
        if opts["model_in_the_loop"] != "off":
            from annotation.hits import handler_for

            if not handler_for(opts["kind"]).model_in_the_loop:
                raise CommandError(f"--model-in-the-loop: a {opts['kind']} batch has no model in the loop")
            options["model_in_the_loop"] = {
                "mode": opts["model_in_the_loop"],
                "system": opts["model_system"],
                "judge": opts["model_judge"],
                "validation": bool(opts["validate_verdicts"]),
            }
        elif opts["validate_verdicts"]:
            raise CommandError("--validate-verdicts: turn the model in the loop on (--model-in-the-loop)")
        if opts["floor_wage"] is not None:
            options["floor_wage_cents_per_hour"] = cents(opts["floor_wage"], "--floor-wage") or 0
        if opts["auto_approve_hours"] is not None:
            if not 1 <= opts["auto_approve_hours"] <= 720:
                raise CommandError(
                    f"--auto-approve-hours: from 1 to 720 hours (30 days), not {opts['auto_approve_hours']}"
                )
            options["auto_approve_seconds"] = opts["auto_approve_hours"] * 3600
        spec = BatchSpec(
            kind=opts["kind"],
            corpus=opts["corpus"],
            provider=opts["provider"],
            title=opts["title"],
            description=opts["description"],
            limit=opts["limit"],
            assignments=opts["assignments"],
            reward_cents=cents(opts["reward"], "--reward") or 0,
            time_limit_minutes=opts["time_limit"],
            max_pairs_per_worker=opts["max_pairs_per_worker"],
            max_pairs_per_worker_per_document=opts["max_pairs_per_document"],
            budget_cap_cents=cents(opts["budget"], "--budget"),
            documents=tuple(opts["document"]),
            options=options,
            quiz=opts["quiz"],
            quiz_seed=opts["quiz_seed"],
        )
        before = retries.mark()
        try:
            if opts["dry_run"]:
                hits, estimate, currency = dry_run(spec)
                self.emit(
                    {"dry_run": True, "hits": hits, "estimate": estimate.to_dict(), "currency": currency},
                    [f"{hits} HITs would cost {format_money(estimate.total_cents, currency)}"],
                )
                return
            resumed = unfinished_launch(spec)
            if resumed is not None:
                self.stderr.write(
                    f"Batch({resumed.pk}) was created by this same launch and not fully published: "
                    "resuming it (HITs already on the platform are adopted, none is made twice)"
                )
            total = resumed.hits.count() if resumed is not None else spec.limit
            batch, estimate = launch(spec, listener=_Progress(self, total))
        except (BatchSpecError, LifecycleError) as exc:
            self.close_bars()
            retried = retries.describe(retries.since(before))
            raise CommandError(f"{exc}" + (f" ({retried})" if retried else "")) from exc
        retried_calls = retries.since(before)
        hits = batch.hits.count()
        quiz = batch.options.get("quiz") or {}
        self.emit(
            {
                "batch": batch.pk,
                "hits": hits,
                **({"quiz_documents": len(quiz.get("by_document") or {})} if quiz else {}),
                "provider": batch.provider,
                "status": batch.status,
                "platform_ref": batch.platform_ref,
                "estimate": estimate.to_dict(),
                "currency": batch.currency,
                "resumed": resumed is not None,
                "retried": retried_calls,
            },
            [
                f"Batch({batch.pk}) {'resumed and ' if resumed is not None else ''}published on "
                f"{batch.provider} with {hits} HITs "
                f"(estimate {format_money(estimate.total_cents, batch.currency)})",
                *([retries.describe(retried_calls)] if retried_calls else []),
            ],
        )
