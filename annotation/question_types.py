"""The QA-pair vocabulary shared by models, forms, QC and exports (no Django import).

SyllabusQA (papers/syllabusqa.txt 2.3) defines seven question types; SciQ questions are one more kind.
The answer source follows from the type (SyllabusQA section 3): explicit for yes/no, single and multi
factual; implicit for single and multi reasoning and summarization; insufficient for no answer.
"""

from __future__ import annotations

from typing import Final

YES_NO: Final = "yes/no"
SINGLE_FACTUAL: Final = "single factual"
MULTI_FACTUAL: Final = "multi factual"
SINGLE_REASONING: Final = "single reasoning"
MULTI_REASONING: Final = "multi reasoning"
SUMMARIZATION: Final = "summarization"
NO_ANSWER: Final = "no answer"
SCIQ: Final = "sciq"

SYLLABUS_TYPES: Final[tuple[str, ...]] = (
    YES_NO,
    SINGLE_FACTUAL,
    MULTI_FACTUAL,
    SINGLE_REASONING,
    MULTI_REASONING,
    SUMMARIZATION,
    NO_ANSWER,
)
ALL_TYPES: Final[tuple[str, ...]] = SYLLABUS_TYPES + (SCIQ,)

EXPLICIT: Final = "explicit"
IMPLICIT: Final = "implicit"
INSUFFICIENT: Final = "insufficient"

ANSWER_SOURCE: Final[dict[str, str]] = {
    YES_NO: EXPLICIT,
    SINGLE_FACTUAL: EXPLICIT,
    MULTI_FACTUAL: EXPLICIT,
    SINGLE_REASONING: IMPLICIT,
    MULTI_REASONING: IMPLICIT,
    SUMMARIZATION: IMPLICIT,
    NO_ANSWER: INSUFFICIENT,
    SCIQ: EXPLICIT,
}

#: Allowed (min, max) answer spans per type (docs/reference/codes.md, "Span and step counts").
SPAN_COUNTS: Final[dict[str, tuple[int, int]]] = {
    YES_NO: (1, 1),
    SINGLE_FACTUAL: (1, 1),
    MULTI_FACTUAL: (1, 5),
    SUMMARIZATION: (1, 5),
    SINGLE_REASONING: (0, 0),
    MULTI_REASONING: (0, 0),
    NO_ANSWER: (0, 0),
    SCIQ: (0, 0),
}
#: Allowed (min, max) reasoning steps per type (docs/reference/codes.md, "Span and step counts").
STEP_COUNTS: Final[dict[str, tuple[int, int]]] = {
    SINGLE_REASONING: (1, 1),
    MULTI_REASONING: (2, 5),
}
MAX_SPANS: Final = 5
MAX_STEPS: Final = 5
#: The release splits, in the order releases list them.
SPLITS: Final[tuple[str, ...]] = ("train", "val", "test")
NO_ANSWER_TEXT: Final = "No/insufficient information"
#: 14 QA pairs per syllabus HIT: two of each type.
PAIRS_PER_TYPE: Final = 2
PAIRS_PER_SYLLABUS_HIT: Final = PAIRS_PER_TYPE * len(SYLLABUS_TYPES)


def answer_source(question_type: str) -> str:
    """Return the answer source of a question type.

    Raises:
        KeyError: for an unknown type, so that a typo never silently becomes "explicit".
    """
    return ANSWER_SOURCE[question_type]


def step_counts(question_type: str) -> tuple[int, int]:
    """Allowed (min, max) reasoning steps; (0, 0) for types that take none."""
    return STEP_COUNTS.get(question_type, (0, 0))
