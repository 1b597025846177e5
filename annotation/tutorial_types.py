"""What a tutorial is made of: the frozen dataclasses :mod:`annotation.tutorial` builds from its JSON.

They are made of attributes and tuples only, so Django templates loop over them directly. No Django
import.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Optional, Union


@dataclass(frozen=True)
class DocumentRef:
    """The example document a tutorial's examples are about (a demo corpus document).

    Attributes:
        name: the document name (for the demo syllabus, the file stem that ``load_demo`` stores).
        corpus: the corpus holding it (``demo-syllabi`` or ``demo-textbook``).
    """

    name: str
    corpus: str


@dataclass(frozen=True)
class Consent:
    """The consent text shown before the first HIT.

    Attributes:
        title: heading.
        paragraphs: the text, one paragraph each.
        agree_label: the label of the "I agree" checkbox or button.
        typical_minutes: how long the task usually takes, ``(low, high)`` minutes. The consent page and
            the instructions state it beside the batch's time limit, and a batch cannot be created with
            a limit shorter than ``high`` (:func:`annotation.services.batches.create_batch`).
    """

    title: str
    paragraphs: tuple[str, ...]
    agree_label: str
    typical_minutes: tuple[int, int]

    def __iter__(self) -> Iterator[str]:
        """Iterate over the paragraphs, so ``{% for p in tutorial.consent %}`` works in a template."""
        return iter(self.paragraphs)

    def __len__(self) -> int:
        """Number of paragraphs (Django's ``for`` tag asks for it)."""
        return len(self.paragraphs)


@dataclass(frozen=True)
class Instruction:
    """One step of the task, in the order the worker does them."""

    title: str
    text: str


@dataclass(frozen=True)
class SyllabusExample:
    """One worked SyllabusQA pair on the example syllabus.

    Attributes:
        question_type: one of :data:`annotation.question_types.SYLLABUS_TYPES`.
        question: the question.
        answer: the answer (``No/insufficient information`` for ``no answer``).
        answer_spans: text copied verbatim from the example syllabus.
        reasoning_steps: the worker-written reasoning steps.
        why: one sentence on what makes it a good example of its type.
        absent_terms: for ``no answer`` examples, the question's key term (first) and close synonyms,
            none of which the syllabus mentions (tests check this against the example document).
    """

    question_type: str
    question: str
    answer: str
    answer_spans: tuple[str, ...]
    reasoning_steps: tuple[str, ...]
    why: str
    absent_terms: tuple[str, ...] = ()


@dataclass(frozen=True)
class TypeGuide:
    """How to write one SyllabusQA question type, with its limits and its two examples.

    Attributes:
        question_type: the type name (the value of the ``qa-{i}-question_type`` form field).
        label: the display name.
        definition: the paper's definition, for a crowd worker.
        tips: what makes a good question of this type.
        evidence: what evidence to give (spans or steps).
        min_spans: fewest answer spans (from ``question_types.SPAN_COUNTS``).
        max_spans: most answer spans.
        min_steps: fewest reasoning steps (from ``question_types.STEP_COUNTS``).
        max_steps: most reasoning steps.
        examples: the worked examples of this type, in file order.
    """

    question_type: str
    label: str
    definition: str
    tips: tuple[str, ...]
    evidence: str
    min_spans: int
    max_spans: int
    min_steps: int
    max_steps: int
    examples: tuple[SyllabusExample, ...]

    @property
    def slug(self) -> str:
        """An HTML-id-safe name: ``yes/no`` -> ``yes-no``, ``single factual`` -> ``single-factual``."""
        return self.question_type.replace("/", "-").replace(" ", "-")


@dataclass(frozen=True)
class CounterExample:
    """A bad stage-1 question, with what is wrong and the QC flag it triggers (None if QC cannot see it)."""

    question: str
    answer: str
    problem: str
    flag: Optional[str]


@dataclass(frozen=True)
class SciQQuestionExample:
    """A worked stage-1 example: the chosen passage, a good question and answer, and bad variants."""

    passage: str
    question: str
    answer: str
    why: str
    counterexamples: tuple[CounterExample, ...]


@dataclass(frozen=True)
class Suggestion:
    """One of the ranker's suggested distractors in a stage-2 example, kept or not, and why."""

    text: str
    chosen: bool
    reason: str


@dataclass(frozen=True)
class SciQDistractorExample:
    """A worked stage-2 example: flags ticked, the six suggestions with verdicts, the worker's own.

    Attributes:
        question: the stage-1 question.
        answer: its correct answer.
        flags: validation flag codes ticked (empty when the question is fine).
        suggestions: the six suggestions shown, each with ``chosen`` and a reason.
        own: distractors the worker wrote.
        why: one sentence on what the example shows.
    """

    question: str
    answer: str
    flags: tuple[str, ...]
    suggestions: tuple[Suggestion, ...]
    own: tuple[str, ...]
    why: str

    @property
    def chosen(self) -> tuple[str, ...]:
        """The suggestions the worker kept."""
        return tuple(s.text for s in self.suggestions if s.chosen)

    @property
    def distractors(self) -> tuple[str, ...]:
        """The final three distractors: kept suggestions, then the worker's own."""
        return self.chosen + self.own


@dataclass(frozen=True)
class FlagGuide:
    """One stage-2 validation flag: its form value, label, explanation and an example question."""

    code: str
    label: str
    description: str
    example: str


Example = Union[SyllabusExample, SciQQuestionExample, SciQDistractorExample]


@dataclass(frozen=True)
class Tutorial:
    """Everything a HIT shows to teach its task, ready for a template.

    Attributes:
        name: the content file's name (without ``.json``), which the file declares as its ``kind``.
        title: page heading.
        intro: one paragraph on what the task is.
        document: the demo document the examples are about.
        consent: the consent text.
        instructions: the steps of the task, in order.
        rules: general rules, in order.
        type_guides: SyllabusQA question types in :data:`question_types.SYLLABUS_TYPES` order (empty
            for SciQ).
        flags: stage-2 validation flags in :data:`annotation.tutorial.VALIDATION_FLAGS` order (empty
            otherwise).
        examples: the worked examples, in file order (the dataclass depends on the layout).
        checklist: what to check before submitting.
        source: the content file name, for error messages and logs.
        examples_template: the template that shows this layout's worked examples.
    """

    name: str
    title: str
    intro: str
    document: DocumentRef
    consent: Consent
    instructions: tuple[Instruction, ...]
    rules: tuple[str, ...]
    type_guides: tuple[TypeGuide, ...]
    flags: tuple[FlagGuide, ...]
    examples: tuple[Example, ...]
    checklist: tuple[str, ...]
    source: str
    examples_template: str

    def guide_for(self, question_type: str) -> TypeGuide:
        """The guide of one SyllabusQA question type.

        Raises:
            KeyError: the type has no guide in this tutorial (names the type and the file).
        """
        for guide in self.type_guides:
            if guide.question_type == question_type:
                return guide
        raise KeyError(f"{self.source}: no type guide for question type {question_type!r}")
