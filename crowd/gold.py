"""Gold and attention items inside a SciQ stage-2 batch: what they are, how an answer is graded, and when
a worker is warned or blocked. No Django import.

Why: a validator who clicks "fine" on everything counts, one verdict at a time, like a careful one. Items
whose right verdict is known, served among the real ones in the same page, measure each worker directly:

* a **gold** item is a question whose verdict is known: a real SciQ question with its own answer is
  exam-worthy (``accept``); the same question with one of its distractors as the answer has a false
  answer (``reject``). A worker's answer counts as right when its label (:func:`crowd.aggregation.
  validation_label`: no flag is ``accept``) equals the known one.
* an **attention** item is an instructed-response item, as Prolific's attention-check rules ask
  (researcher-help.prolific.com, "Prolific's Attention and Comprehension Check Policy"): the question
  itself tells the worker, in plain words, exactly what to tick; it tests reading, not memory or
  knowledge, and one failure alone never blocks anyone (Prolific allows rejecting only on two failed
  checks, which is the default here). It is passed when the ticked flags are exactly those asked for.

The decision (:func:`standing`) acts only after ``min_answers`` gold answers, so one unlucky answer never
blocks a worker; a batch without thresholds only records.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from crowd.aggregation_terms import ACCEPT, REJECT, validation_label
from crowd.providers.traits import named, platform_traits

GOLD = "gold"
ATTENTION = "attention"
KINDS = (GOLD, ATTENTION)

OK = "ok"
WARNED = "warned"
BLOCKED = "blocked"

DEFAULT_MIN_ANSWERS = 5
"""Gold answers a worker gives before a gold threshold acts on them (``gold_min_answers``)."""
DEFAULT_ATTENTION_FAILURES = 2
"""Failed attention items that block a worker (``attention_block_failures``): Prolific's rule."""


def attention_default_rule() -> str:
    """Whose policy :data:`DEFAULT_ATTENTION_FAILURES` follows, for help texts ("Prolific's rule"), read
    from the platforms' ``attention_failures_to_reject``; "" when no platform's policy matches it."""
    following = named(
        (t for t in platform_traits() if t.attention_failures_to_reject == DEFAULT_ATTENTION_FAILURES),
        "and",
    )
    return f"{following}'s rule" if following else ""


ATTENTION_FLAG = "unrelated"
ATTENTION_FLAG_LABEL = "Unrelated to science"
"""An attention item asks for this one flag (its label as the page shows it), and nothing else."""


class GoldError(ValueError):
    """A gold file line or SciQ record that cannot be a gold item (names the file, line and field)."""


@dataclass(frozen=True)
class GoldSpec:
    """One item to serve: the question and answer the page shows, its passage and what a right answer is.

    Attributes:
        kind: :data:`GOLD` or :data:`ATTENTION`.
        question, answer, passage: what the page shows, exactly as for a real question.
        expected: ``{"label": "accept"|"reject"}`` for gold, ``{"flags": [...]}`` for attention.
        source: where it came from (``sciq:valid.json:17``, ``file:gold.jsonl:3``), for the researcher.
    """

    kind: str
    question: str
    answer: str
    passage: str
    expected: dict[str, Any]
    source: str


@dataclass(frozen=True)
class Grade:
    """One answer to a gold or attention item: right or not, and what was given, in words."""

    passed: bool
    given: str


def grade(kind: str, expected: dict[str, Any], flags: Sequence[str]) -> Grade:
    """Grade a stage-2 answer (its ticked ``flags``) to an item of ``kind`` expecting ``expected``.

    Raises:
        GoldError: an unknown kind.
    """
    if kind == GOLD:
        label = validation_label(flags)
        return Grade(label == expected.get("label"), label)
    if kind == ATTENTION:
        ticked = sorted(set(flags))
        return Grade(ticked == sorted(set(expected.get("flags", []))), ",".join(ticked) or "none")
    raise GoldError(f"unknown item kind {kind!r}; expected one of {', '.join(KINDS)}")


@dataclass(frozen=True)
class Thresholds:
    """A batch's settings (``Batch.options``): gold accuracy in percent, counts as whole numbers."""

    warn_below: Optional[float] = None
    block_below: Optional[float] = None
    min_answers: int = DEFAULT_MIN_ANSWERS
    attention_block: int = DEFAULT_ATTENTION_FAILURES

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> Thresholds:
        """Read ``gold_warn_below``, ``gold_block_below``, ``gold_min_answers`` and
        ``attention_block_failures`` (absent keys take the defaults)."""
        return cls(
            warn_below=options.get("gold_warn_below"),
            block_below=options.get("gold_block_below"),
            min_answers=int(options.get("gold_min_answers", DEFAULT_MIN_ANSWERS)),
            attention_block=int(options.get("attention_block_failures", DEFAULT_ATTENTION_FAILURES)),
        )


@dataclass(frozen=True)
class Standing:
    """A worker's record on a batch's gold and attention items, and what it calls for."""

    gold_n: int
    gold_correct: int
    attention_n: int
    attention_failed: int
    state: str
    reason: str

    @property
    def gold_accuracy(self) -> Optional[float]:
        """Share of gold answers that were right (None before the first)."""
        return self.gold_correct / self.gold_n if self.gold_n else None


def standing(
    gold_n: int, gold_correct: int, attention_n: int, attention_failed: int, limits: Thresholds
) -> Standing:
    """Decide ``ok`` / ``warned`` / ``blocked`` from the counts and the batch's thresholds.

    Gold accuracy acts once the worker gave at least ``min_answers`` gold answers: under ``block_below``
    percent blocks, under ``warn_below`` warns. ``attention_block`` failed attention items block (0
    turns that off); a single failure short of it warns.
    """
    reasons: list[str] = []
    state = OK
    accuracy = 100.0 * gold_correct / gold_n if gold_n else None
    if accuracy is not None and gold_n >= limits.min_answers:
        shown = f"gold accuracy {accuracy:.0f}% ({gold_correct}/{gold_n})"
        if limits.block_below is not None and accuracy < limits.block_below:
            state = BLOCKED
            reasons.append(f"{shown} is below the batch's block threshold {limits.block_below:g}%")
        elif limits.warn_below is not None and accuracy < limits.warn_below:
            state = WARNED
            reasons.append(f"{shown} is below the batch's warning threshold {limits.warn_below:g}%")
    if attention_failed:
        shown = f"{attention_failed} of {attention_n} attention item(s) failed"
        if limits.attention_block and attention_failed >= limits.attention_block:
            state = BLOCKED
            reasons.append(f"{shown} (the batch blocks at {limits.attention_block})")
        else:
            state = WARNED if state == OK else state
            reasons.append(shown)
    return Standing(gold_n, gold_correct, attention_n, attention_failed, state, "; ".join(reasons))


def failures(gold_n: int, gold_correct: int, attention_failed: int) -> int:
    """Wrong gold answers plus failed attention items: what a re-block after a manual unblock waits for
    more of (:func:`needs_block`)."""
    return (gold_n - gold_correct) + attention_failed


def needs_block(
    state: str, was_state: str, worker_blocked: bool, failures_now: int, failures_at_block: Optional[int]
) -> bool:
    """Whether a recount must block the worker.

    On the move into ``blocked``, yes. A worker whose standing was already blocked but who is no longer
    blocked was unblocked by a researcher: that decision stands until a new failure arrives (more wrong
    gold answers or failed attention items than when the standing last blocked them); a right answer,
    or the same answers recounted (a retried job, a confirmed session), never undoes it.
    """
    if state != BLOCKED or worker_blocked:
        return False
    if was_state != BLOCKED:
        return True
    return failures_at_block is None or failures_now > failures_at_block


def warning_message(title: str, gold_n: int, gold_correct: int, attention_failed: int) -> tuple[str, str]:
    """The subject and text of the one message a flagged worker gets: what was seen, in the worker's
    terms (never which questions were the checks), and what happens if it goes on."""
    parts = []
    if gold_n and gold_correct < gold_n:
        parts.append(
            f"Some questions in this task have known answers; {gold_correct} of your {gold_n} answers to "
            "them were right."
        )
    if attention_failed:
        parts.append(
            "A question asked for a particular answer to show that it was read, and the answer given did "
            "not follow it."
        )
    parts.append(
        "Please read each question and the instructions carefully before you answer. If this goes on, "
        "you may no longer be able to work on this task."
    )
    return f"About your answers in “{title}”"[:200], " ".join(parts)


def sciq_gold(
    records: Iterable[Any], n: int, bad_share: float = 0.3, seed: int = 0, where: str = "sciq"
) -> list[GoldSpec]:
    """``n`` gold items from SciQ records (``annotation.importers.mcq.MCQRow``: ``id``, ``question``,
    ``answer``, ``distractors``, ``passage``), drawn with ``seed``.

    A ``bad_share`` of them show one of the question's own distractors as the answer (known ``reject``:
    a false answer a careful validator flags); the rest keep the real answer (known ``accept``). Records
    without a passage are skipped, since every real stage-2 question shows one.
    """
    usable = [r for r in records if (r.passage or "").strip() and r.distractors]
    rng = random.Random(seed)
    chosen = rng.sample(usable, min(n, len(usable)))
    specs = []
    for record in chosen:
        bad = rng.random() < bad_share
        answer = rng.choice(list(record.distractors)) if bad else record.answer
        specs.append(
            GoldSpec(
                kind=GOLD,
                question=record.question,
                answer=answer,
                passage=record.passage,
                expected={"label": REJECT if bad else ACCEPT},
                source=f"{where}:{record.id}",
            )
        )
    return specs


def attention_items(records: Iterable[Any], n: int, seed: int = 0, where: str = "sciq") -> list[GoldSpec]:
    """``n`` instructed-response attention items on real SciQ questions: the question keeps its text and
    adds a plain instruction to tick only :data:`ATTENTION_FLAG_LABEL` (Prolific's rules: explicit,
    visible, not a test of memory or knowledge)."""
    usable = [r for r in records if (r.passage or "").strip()]
    rng = random.Random(seed + 1)
    chosen = rng.sample(usable, min(n, len(usable)))
    return [
        GoldSpec(
            kind=ATTENTION,
            question=(
                f"{record.question} To show that you read each question, tick only the box "
                f"“{ATTENTION_FLAG_LABEL}” for this one, whatever you think of it."
            ),
            answer=record.answer,
            passage=record.passage,
            expected={"flags": [ATTENTION_FLAG]},
            source=f"{where}:{record.id}:attention",
        )
        for record in chosen
    ]


def read_gold_file(path: Path) -> list[GoldSpec]:
    """Gold items from a JSON Lines file, one object a line: ``question``, ``answer``, ``passage`` and
    either ``label`` (``accept``/``reject``: a gold item) or ``flags`` (a list: an attention item whose
    question tells the worker to tick exactly these). Blank lines are skipped.

    Raises:
        GoldError: names the file, line and field of the first bad line.
    """
    specs = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise GoldError(f"{path}: cannot read it as UTF-8 text ({exc})") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path.name} line {number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise GoldError(f"{where}: not JSON ({exc.msg})") from exc
        if not isinstance(row, dict):
            raise GoldError(f"{where}: expected an object, got {type(row).__name__}")
        for name in ("question", "answer", "passage"):
            if not isinstance(row.get(name), str) or not row[name].strip():
                raise GoldError(f"{where}: {name!r} must be a non-empty string")
        if "flags" in row:
            flags = row["flags"]
            if not isinstance(flags, list) or not flags or not all(isinstance(f, str) for f in flags):
                raise GoldError(f"{where}: 'flags' must be a non-empty list of flag codes")
            kind, expected = ATTENTION, {"flags": sorted(set(flags))}
        elif row.get("label") in (ACCEPT, REJECT):
            kind, expected = GOLD, {"label": row["label"]}
        else:
            raise GoldError(f"{where}: 'label' must be {ACCEPT!r} or {REJECT!r} (or give 'flags')")
        specs.append(
            GoldSpec(
                kind=kind,
                question=row["question"].strip(),
                answer=row["answer"].strip(),
                passage=row["passage"].strip(),
                expected=expected,
                source=f"file:{where}",
            )
        )
    return specs


def due(real_hits: int, served: int, rate: float) -> int:
    """How many more items of a kind to serve so that they are ``rate`` percent of the real HITs
    (rounded up, so the first real HIT already brings one at any positive rate)."""
    if rate <= 0 or real_hits <= 0:
        return 0
    wanted = -(-real_hits * rate // 100)
    return max(0, int(wanted) - served)
