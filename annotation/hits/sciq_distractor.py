"""SciQ stage 2: another worker validates a question and builds its three distractors.

Why: papers/sciq-crowdsourcing-mcq.txt 3.2 asks whether the question could appear in a school science
exam (flags: ungrammatical, false answer, unrelated to science, too specific), shows the six best model
suggestions, lets the worker keep at most two and requires at least one distractor of their own so that
there are exactly three. The distractor rules live in :mod:`annotation.qc.sciq`.

Form fields (docs/reference/hit-forms.md): ``flag`` (repeatable), ``suggested`` (repeatable: ids of
the pair's model-suggestion ``Distractor`` rows, at most 2), ``own-0``, ``own-1``, ``own-2``.

Storage: one ``Validation`` per assignment, and *per-validation* ``Distractor`` rows (``selected=True``,
``validation=...``): a copy of each chosen suggestion (origin ``model``, score, rank and model version
kept) and one row per own distractor (origin ``worker``). The six offered suggestions (``validation``
null) are never changed, so several validators of one pair never overwrite each other's choices and the
offered list stays what every validator saw.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, ClassVar, Optional

from annotation.hits.base import BuiltFrom, Fields, FormCheck, HitHandler
from annotation.models import HIT, Assignment, Distractor, QAPair, Validation
from annotation.qc.common import ERROR, fold
from annotation.qc.sciq import SciQItem, SciQOptions, check_item
from annotation.tutorial import VALIDATIONS

logger = logging.getLogger(__name__)

OWN_FIELDS: tuple[str, ...] = ("own-0", "own-1", "own-2")
QC_OPTIONS = SciQOptions()
TOTAL = QC_OPTIONS.distractor_count
MAX_SUGGESTED = 2
"""A worker keeps at most two suggestions and writes at least one distractor (paper 3.2)."""

MAX_OWN_CHARS = 200
"""Distractors are short answers; the database column holds 500 characters."""

OWN_GROUP = "own"
"""Error key for messages about the own distractors as a whole (shown above the own-k inputs)."""


@dataclass(frozen=True)
class ValidationAnswers:
    """A valid stage-2 submission."""

    flags: tuple[str, ...]
    suggested: tuple[Distractor, ...]
    own: tuple[str, ...]


def suggestions_of(pair: QAPair) -> list[Distractor]:
    """The model suggestions offered for ``pair`` (not the per-validation copies), best first."""
    return list(
        pair.distractors.filter(origin=Distractor.Origin.MODEL, validation__isnull=True).order_by(
            "model_rank"
        )
    )


def _flag_choices() -> list[dict[str, str]]:
    descriptions = {f.code: f.description for f in SciQDistractorHandler().tutorial().flags}
    return [
        {"value": value, "label": label, "description": descriptions.get(value, "")}
        for value, label in Validation.Flag.choices
    ]


class SciQDistractorHandler(HitHandler):
    """The question and its answer, four exam-worthiness flags, six suggestions and own distractors."""

    template_name = "hits/sciq_distractor.html"
    tutorial_name = "sciq_distractor"
    tutorial_layout = VALIDATIONS
    built_from = BuiltFrom.QUESTIONS
    default_title = "Check a science exam question and choose wrong answer options"
    repeatable = frozenset({"flag", "suggested"})
    serves_gold = True
    options_only_check = True
    field_names: ClassVar[frozenset[str]] = frozenset({"flag", "suggested", *OWN_FIELDS})

    def accepts_field(self, name: str) -> bool:
        """``flag``, ``suggested`` and ``own-0`` .. ``own-2``."""
        return name in self.field_names

    def context(self, hit: HIT, assignment: Optional[Assignment], token: str) -> dict[str, Any]:
        """The pair, its passage, the six suggestions and the flag choices."""
        pair = hit.qa_pair
        suggestions = suggestions_of(pair) if pair is not None else []
        return {
            "pair": pair,
            "passage": pair.passage if pair is not None else None,
            "suggestions": [{"id": s.pk, "value": str(s.pk), "text": s.text} for s in suggestions],
            "suggester": suggestions[0].model_version if suggestions else "",
            "flag_choices": _flag_choices(),
            "own_fields": OWN_FIELDS,
            "total": TOTAL,
            "max_suggested": MAX_SUGGESTED,
        }

    def check(self, hit: HIT, assignment: Assignment, fields: Fields) -> FormCheck:
        """Check flags and suggestion ids, then the distractor rules of SciQ QC on all three."""
        result = FormCheck(fields=fields)
        pair = hit.qa_pair
        if pair is None:
            result.error("__all__", f"HIT({hit.pk}) has no question to validate; please return it.")
            return result
        flags = [str(f) for f in fields.get("flag", [])]
        unknown = [f for f in flags if f not in Validation.Flag.values]
        if unknown:
            result.error("flag", f"Unknown flag {unknown[0]!r}.")
        chosen = self._chosen(result, pair, fields)
        own = {name: str(fields.get(name, "")).strip() for name in OWN_FIELDS}
        own_texts = [text for text in own.values() if text]
        for name, text in own.items():
            if len(text) > MAX_OWN_CHARS:
                result.error(name, f"Keep a wrong answer short: at most {MAX_OWN_CHARS} characters.")
        qc = check_item(
            SciQItem(
                id=f"assignment-{assignment.pk}",
                question=pair.question,
                answer=pair.answer,
                distractors=tuple(s.text for s in chosen) + tuple(own_texts),
                worker_distractors=tuple(own_texts),
            ),
            QC_OPTIONS,
        )
        for issue in qc.issues:
            if issue.field != "distractors" or issue.severity != ERROR:
                continue  # the question and answer were checked in stage 1; here only distractors count
            self._place(result, issue.code, issue.message, pair.answer, chosen, own)
        if result.ok:
            result.cleaned = ValidationAnswers(
                flags=tuple(flags), suggested=tuple(chosen), own=tuple(own_texts)
            )
        return result

    @staticmethod
    def _chosen(result: FormCheck, pair: QAPair, fields: Fields) -> list[Distractor]:
        """The suggestions the worker kept, in the order picked; an error for one not offered or too many."""
        offered = {str(s.pk): s for s in suggestions_of(pair)}
        chosen_ids = list(dict.fromkeys(str(v) for v in fields.get("suggested", [])))
        foreign = [v for v in chosen_ids if v not in offered]
        if foreign:
            result.error("suggested", f"Suggestion {foreign[0]!r} is not one of this question's suggestions.")
        if len(chosen_ids) > MAX_SUGGESTED:
            result.error(
                "suggested",
                f"You picked {len(chosen_ids)} suggestions; keep at most {MAX_SUGGESTED} "
                "and write the rest yourself.",
            )
        return [offered[v] for v in chosen_ids if v in offered]

    @staticmethod
    def _place(
        result: FormCheck, code: str, message: str, answer: str, chosen: list[Distractor], own: dict[str, str]
    ) -> None:
        """Attach a distractor finding to the own-k field it concerns (or to the own group)."""
        needed = max(1, TOTAL - len(chosen))
        if code == "distractor_equals_answer":
            for name, text in own.items():
                if text and fold(text) == fold(answer):
                    result.error(
                        name, f"“{text}” is the correct answer; a wrong answer option must differ from it."
                    )
                    return
        elif code == "duplicate_distractor":
            seen = {fold(s.text) for s in chosen}
            for name, text in own.items():
                if not text:
                    continue
                if fold(text) in seen:
                    result.error(
                        name, f"“{text}” is already one of your wrong answers; write a different one."
                    )
                    return
                seen.add(fold(text))
        elif code in ("distractor_count", "no_worker_distractor"):
            have = sum(1 for t in own.values() if t)
            if len(chosen) > MAX_SUGGESTED:
                result.error(OWN_GROUP, f"Write at least 1 wrong answer yourself (you wrote {have}).")
                return
            answers = "wrong answer" if needed == 1 else "wrong answers"
            kept = "suggestion" if len(chosen) == 1 else "suggestions"
            result.error(
                OWN_GROUP,
                f"Write {needed} {answers} yourself so that there are {TOTAL} in total with the "
                f"{len(chosen)} {kept} you kept (you wrote {have}).",
            )
            return
        result.error(OWN_GROUP, message[:1].upper() + message[1:] + ".")

    def store(self, assignment: Assignment, check: FormCheck) -> None:
        """Store the validation and its three chosen distractors as per-validation rows."""
        cleaned: ValidationAnswers = check.cleaned
        pair = assignment.hit.qa_pair
        validation = Validation.objects.create(assignment=assignment, qa_pair=pair, flags=list(cleaned.flags))
        rows = [
            Distractor(
                qa_pair=pair,
                text=s.text,
                origin=Distractor.Origin.MODEL,
                position=i,
                model_version=s.model_version,
                model_score=s.model_score,
                model_rank=s.model_rank,
                selected=True,
                validation=validation,
            )
            for i, s in enumerate(cleaned.suggested)
        ]
        rows += [
            Distractor(
                qa_pair=pair,
                text=text,
                origin=Distractor.Origin.WORKER,
                position=len(cleaned.suggested) + k,
                selected=True,
                validation=validation,
            )
            for k, text in enumerate(cleaned.own)
        ]
        Distractor.objects.bulk_create(rows)
        logger.info(
            "Assignment(%s) validated QAPair(%s) as Validation(%s), flags %s",
            assignment.pk,
            pair.pk,
            validation.pk,
            list(cleaned.flags),
        )
