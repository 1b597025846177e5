"""The worker-facing tutorials of the three HITs, loaded and checked from JSON (no Django import).

Why: SyllabusQA (section 2.3, appendix K) walks every annotator through a tutorial of 14 worked QA
pairs, 2 per question type, on one example syllabus; SciQ (sections 3.1-3.2) gives instructions with
good and bad examples for both stages. The text lives in ``annotation/tutorial_content/<name>.json`` so
it can be edited without touching code; this module validates it (types, the span and step counts of
docs/reference/codes.md, flag codes) and returns frozen dataclasses made of attributes and tuples, which
Django templates can loop over directly. A malformed file raises ValueError naming the file and the
example index.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import logging
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, Optional

from annotation import question_types as qt
from annotation.qc.common import SEVERITY
from annotation.tutorial_types import (
    Consent,
    CounterExample,
    DocumentRef,
    Example,
    FlagGuide,
    Instruction,
    SciQDistractorExample,
    SciQQuestionExample,
    Suggestion,
    SyllabusExample,
    Tutorial,
    TypeGuide,
)

logger = logging.getLogger(__name__)

#: Stage-2 validation flags (docs/reference/hit-forms.md, field ``flag``), in display order.
VALIDATION_FLAGS: tuple[str, ...] = ("ungrammatical", "false_answer", "unrelated", "too_specific")
#: Stage 2 shows this many ranker suggestions; the worker keeps at most SUGGESTED_MAX of them.
SUGGESTIONS_SHOWN = 6
SUGGESTED_MAX = 2
DISTRACTORS_PER_ITEM = 3

_CONTENT_PACKAGE = "annotation"
_CONTENT_DIR = "tutorial_content"


class _Reader:
    """Typed access to one JSON object, with errors naming the file and the path inside it."""

    def __init__(self, data: Any, source: str, where: str) -> None:
        self.source = source
        self.where = where
        if not isinstance(data, Mapping):
            self.fail(f"expected an object, got {type(data).__name__}")
        self.data: Mapping[str, Any] = data

    def fail(self, message: str) -> NoReturn:
        location = f"{self.where}: " if self.where else ""
        raise ValueError(f"{self.source}: {location}{message}")

    def only(self, *keys: str) -> None:
        unknown = sorted(set(self.data) - set(keys))
        if unknown:
            self.fail(f"unknown key(s) {unknown}; expected {list(keys)}")

    def _get(self, key: str, optional: bool) -> Any:
        if key not in self.data:
            if optional:
                return None
            self.fail(f"missing key {key!r}")
        return self.data[key]

    def text(self, key: str) -> str:
        value = self._get(key, False)
        if not isinstance(value, str) or not value.strip():
            self.fail(f"{key} must be a non-empty string, got {value!r}")
        return value

    def optional_text(self, key: str) -> Optional[str]:
        value = self._get(key, True)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            self.fail(f"{key} must be a non-empty string or null, got {value!r}")
        return value

    def boolean(self, key: str) -> bool:
        value = self._get(key, False)
        if not isinstance(value, bool):
            self.fail(f"{key} must be true or false, got {value!r}")
        return value

    def texts(self, key: str, optional: bool = False) -> tuple[str, ...]:
        value = self._get(key, optional)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            self.fail(f"{key} must be a list of non-empty strings, got {value!r}")
        return tuple(value)

    def objects(self, key: str) -> list[_Reader]:
        value = self._get(key, False)
        if not isinstance(value, list):
            self.fail(f"{key} must be a list, got {type(value).__name__}")
        return [_Reader(v, self.source, f"{self._path(key)}[{i}]") for i, v in enumerate(value)]

    def child(self, key: str) -> _Reader:
        return _Reader(self._get(key, False), self.source, self._path(key))

    def _path(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key


_TOP_KEYS = (
    "kind",
    "title",
    "intro",
    "document",
    "consent",
    "instructions",
    "rules",
    "type_guides",
    "flags",
    "examples",
    "checklist",
)


def _count_error(what: str, count: int, limits: tuple[int, int]) -> Optional[str]:
    """A message when ``count`` is outside ``limits`` (span/step counts, docs/reference/codes.md), or None."""
    low, high = limits
    if low <= count <= high:
        return None
    expected = str(low) if low == high else f"{low}-{high}"
    return f"{count} {what}, expected {expected}"


def _syllabus_example(r: _Reader) -> SyllabusExample:
    """One SyllabusQA example, checked against the span/step counts and answer rules of its type."""
    r.only("question_type", "question", "answer", "answer_spans", "reasoning_steps", "why", "absent_terms")
    qtype = r.text("question_type")
    if qtype not in qt.SYLLABUS_TYPES:
        r.fail(f"question_type {qtype!r} is not one of {qt.SYLLABUS_TYPES}")
    example = SyllabusExample(
        question_type=qtype,
        question=r.text("question"),
        answer=r.text("answer"),
        answer_spans=r.texts("answer_spans"),
        reasoning_steps=r.texts("reasoning_steps"),
        why=r.text("why"),
        absent_terms=r.texts("absent_terms", optional=True),
    )
    for message in (
        _count_error("answer spans", len(example.answer_spans), qt.SPAN_COUNTS[qtype]),
        _count_error("reasoning steps", len(example.reasoning_steps), qt.step_counts(qtype)),
    ):
        if message:
            r.fail(f"{qtype!r} example has {message}")
    first_word = example.answer.split()[0].strip(",.;:!").lower()
    if qtype == qt.YES_NO and first_word not in ("yes", "no"):
        r.fail(f"yes/no answer must start with Yes or No, got {example.answer!r}")
    if qtype == qt.NO_ANSWER:
        if example.answer != qt.NO_ANSWER_TEXT:
            r.fail(f"no answer example must answer {qt.NO_ANSWER_TEXT!r}, got {example.answer!r}")
        if not example.absent_terms:
            r.fail("no answer example must list absent_terms (what the syllabus never mentions)")
    elif example.absent_terms:
        r.fail(f"absent_terms is only for 'no answer' examples, not {qtype!r}")
    return example


def _type_guides(root: _Reader, examples: tuple[SyllabusExample, ...]) -> tuple[TypeGuide, ...]:
    """One guide per SyllabusQA type, in SYLLABUS_TYPES order, with limits and examples attached."""
    guides: dict[str, TypeGuide] = {}
    for r in root.objects("type_guides"):
        r.only("question_type", "label", "definition", "tips", "evidence")
        qtype = r.text("question_type")
        if qtype not in qt.SYLLABUS_TYPES:
            r.fail(f"question_type {qtype!r} is not one of {qt.SYLLABUS_TYPES}")
        if qtype in guides:
            r.fail(f"second guide for question type {qtype!r}")
        spans, steps = qt.SPAN_COUNTS[qtype], qt.step_counts(qtype)
        guides[qtype] = TypeGuide(
            question_type=qtype,
            label=r.text("label"),
            definition=r.text("definition"),
            tips=r.texts("tips"),
            evidence=r.text("evidence"),
            min_spans=spans[0],
            max_spans=spans[1],
            min_steps=steps[0],
            max_steps=steps[1],
            examples=tuple(e for e in examples if e.question_type == qtype),
        )
    missing = [t for t in qt.SYLLABUS_TYPES if t not in guides]
    if missing:
        root.fail(f"type_guides: no guide for {missing}")
    return tuple(guides[t] for t in qt.SYLLABUS_TYPES)


def _sciq_question_example(r: _Reader) -> SciQQuestionExample:
    """One stage-1 example; counterexample flags must be QC codes."""
    r.only("passage", "question", "answer", "why", "counterexamples")
    counterexamples = []
    for c in r.objects("counterexamples"):
        c.only("question", "answer", "problem", "flag")
        flag = c.optional_text("flag")
        if flag is not None and flag not in SEVERITY:
            c.fail(f"flag {flag!r} is not a QC code")
        counterexamples.append(CounterExample(c.text("question"), c.text("answer"), c.text("problem"), flag))
    return SciQQuestionExample(
        passage=r.text("passage"),
        question=r.text("question"),
        answer=r.text("answer"),
        why=r.text("why"),
        counterexamples=tuple(counterexamples),
    )


def _sciq_distractor_example(r: _Reader) -> SciQDistractorExample:
    """One stage-2 example: 6 suggestions, at most 2 kept, at least 1 own, 3 distractors in all."""
    r.only("question", "answer", "flags", "suggestions", "own", "why")
    suggestions = []
    for s in r.objects("suggestions"):
        s.only("text", "chosen", "reason")
        suggestions.append(Suggestion(s.text("text"), s.boolean("chosen"), s.text("reason")))
    example = SciQDistractorExample(
        question=r.text("question"),
        answer=r.text("answer"),
        flags=r.texts("flags"),
        suggestions=tuple(suggestions),
        own=r.texts("own"),
        why=r.text("why"),
    )
    bad_flags = [f for f in example.flags if f not in VALIDATION_FLAGS]
    if bad_flags:
        r.fail(f"flags {bad_flags} are not among {VALIDATION_FLAGS}")
    if len(example.suggestions) != SUGGESTIONS_SHOWN:
        r.fail(f"{len(example.suggestions)} suggestions, expected {SUGGESTIONS_SHOWN}")
    if len(example.chosen) > SUGGESTED_MAX:
        r.fail(f"{len(example.chosen)} suggestions chosen, at most {SUGGESTED_MAX}")
    if not example.own:
        r.fail("own must hold at least 1 distractor written by the worker")
    if len(example.distractors) != DISTRACTORS_PER_ITEM:
        r.fail(f"{len(example.distractors)} distractors (chosen + own), expected {DISTRACTORS_PER_ITEM}")
    return example


def _flag_guides(root: _Reader) -> tuple[FlagGuide, ...]:
    """The stage-2 flags, which must be exactly the HIT form's codes in order."""
    flags = []
    for r in root.objects("flags"):
        r.only("code", "label", "description", "example")
        flags.append(FlagGuide(r.text("code"), r.text("label"), r.text("description"), r.text("example")))
    codes = tuple(f.code for f in flags)
    if codes != VALIDATION_FLAGS:
        root.fail(f"flags must be {VALIDATION_FLAGS} in this order, got {codes}")
    return tuple(flags)


def _syllabus_examples(root: _Reader) -> tuple[SyllabusExample, ...]:
    """All SyllabusQA examples: exactly PAIRS_PER_TYPE of each type, like the HIT itself."""
    examples = tuple(_syllabus_example(r) for r in root.objects("examples"))
    counts = Counter(e.question_type for e in examples)
    wrong = {t: counts.get(t, 0) for t in qt.SYLLABUS_TYPES if counts.get(t, 0) != qt.PAIRS_PER_TYPE}
    if wrong:
        root.fail(f"examples: expected {qt.PAIRS_PER_TYPE} examples of each type, got {wrong}")
    return examples


def _examples_of(parse: Callable[[_Reader], Example]) -> Callable[[_Reader], tuple[Example, ...]]:
    return lambda root: tuple(parse(r) for r in root.objects("examples"))


@dataclass(frozen=True)
class Layout:
    """What a tutorial file holds beyond the parts every tutorial has, and how its examples are shown.

    Attributes:
        examples: reads and checks the file's ``examples`` list.
        type_guides: the file has one guide per question type (which the examples are grouped under).
        flags: the file explains the validation flags.
        examples_template: the template that shows the worked examples in the Instructions dialog.
    """

    examples: Callable[[_Reader], tuple[Example, ...]]
    type_guides: bool
    flags: bool
    examples_template: str


TYPED_PAIRS = Layout(_syllabus_examples, True, False, "hits/tutorial/typed_pairs.html")
"""Two QA pairs of each SyllabusQA question type about one example syllabus, with a guide per type."""
PASSAGE_QUESTIONS = Layout(
    _examples_of(_sciq_question_example), False, False, "hits/tutorial/passage_questions.html"
)
"""Questions about a passage, each with counterexamples."""
VALIDATIONS = Layout(_examples_of(_sciq_distractor_example), False, True, "hits/tutorial/validations.html")
"""Validated questions: flags, suggestions kept or dropped, the worker's own distractors."""


def parse_tutorial(data: Any, source: str, layout: Layout, name: Optional[str] = None) -> Tutorial:
    """Validate parsed tutorial JSON and build the :class:`Tutorial`.

    Args:
        data: the parsed JSON object.
        source: its file name, used in error messages.
        layout: what the file must hold beyond the common parts.
        name: the name the file must declare as its ``kind`` (None: accept the declared one).

    Returns:
        The tutorial.

    Raises:
        ValueError: on any malformed content; the message names the file and where (``examples[3]``).
    """
    root = _Reader(data, source, "")
    root.only(*_TOP_KEYS)
    declared = root.text("kind")
    if name is not None and declared != name:
        root.fail(f"kind is {declared!r}, expected {name!r}")
    document = root.child("document")
    document.only("name", "corpus")
    consent = root.child("consent")
    consent.only("title", "paragraphs", "agree_label", "typical_minutes")
    typical = consent._get("typical_minutes", False)
    if not (
        isinstance(typical, list)
        and len(typical) == 2
        and all(isinstance(m, int) and not isinstance(m, bool) for m in typical)
        and 0 < typical[0] <= typical[1]
    ):
        consent.fail(f"typical_minutes must be [low, high] minutes with 0 < low <= high, got {typical!r}")
    instructions = []
    for r in root.objects("instructions"):
        r.only("title", "text")
        instructions.append(Instruction(r.text("title"), r.text("text")))
    examples = layout.examples(root)
    type_guides: tuple[TypeGuide, ...] = ()
    if layout.type_guides:
        type_guides = _type_guides(root, examples)  # type: ignore[arg-type]
    elif root.objects("type_guides"):
        root.fail("type_guides is only for tutorials of typed QA pairs")
    if not examples:
        root.fail("examples: at least one example is required")
    flags: tuple[FlagGuide, ...] = ()
    if layout.flags:
        flags = _flag_guides(root)
    elif root.objects("flags"):
        root.fail("flags is only for tutorials of validations")
    return Tutorial(
        name=declared,
        title=root.text("title"),
        intro=root.text("intro"),
        document=DocumentRef(document.text("name"), document.text("corpus")),
        consent=Consent(
            consent.text("title"),
            consent.texts("paragraphs"),
            consent.text("agree_label"),
            (typical[0], typical[1]),
        ),
        instructions=tuple(instructions),
        rules=root.texts("rules"),
        type_guides=type_guides,
        flags=flags,
        examples=examples,
        checklist=root.texts("checklist"),
        source=source,
        examples_template=layout.examples_template,
    )


def load_tutorial_file(path: Path, layout: Layout, name: Optional[str] = None) -> Tutorial:
    """Load and validate one tutorial file (uncached; for custom tutorials and tests).

    Raises:
        ValueError: the file is not valid JSON or its content is malformed (names the file).
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path.name}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from e
    return parse_tutorial(data, path.name, layout, name)


@functools.lru_cache(maxsize=16)
def load_tutorial(name: str, layout: Layout) -> Tutorial:
    """A HIT's tutorial, from ``annotation/tutorial_content/<name>.json`` (cached).

    Args:
        name: the content file's name, which the file declares as its ``kind``.
        layout: what the file holds beyond the common parts.

    Returns:
        The validated tutorial (the same object on every call in a process).

    Raises:
        ValueError: no such file, or malformed content (the message names the file and example index).
    """
    resource = importlib.resources.files(_CONTENT_PACKAGE) / _CONTENT_DIR / f"{name}.json"
    source = f"{_CONTENT_DIR}/{name}.json"
    if not name.replace("_", "").isalnum() or not resource.is_file():
        raise ValueError(f"no tutorial {source}")
    try:
        data = json.loads(resource.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"{source}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from e
    tutorial = parse_tutorial(data, source, layout, name)
    logger.debug("Loaded tutorial %s with %d examples", source, len(tutorial.examples))
    return tutorial
