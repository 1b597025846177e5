"""Release checks made on a split before anything is written: empty splits, short splits, leakage.

A release whose val or test split is empty, much smaller than asked, or shares a document or a question
with another split still builds (the splitter does what it is told), but it is rarely what a researcher
meant: SyllabusQA evaluates on unseen syllabi and SciQ on 1,000 unseen questions. Exporting refuses such
a release unless each problem is explicitly allowed (``export_release --allow-empty-split``, the "export
anyway" confirmation of the New release page).

Problem codes (stable; the command's ``--allow-*`` flags and the page use them):

* ``empty_split``: a split asked for (positive ratio, positive SciQ size, or a split of the source's
  original assignment) holds no item.
* ``short_split``: a split holds fewer items than asked: in SciQ mode fewer than its fixed size; with
  ratios less than half of ``ratio * items`` (group-aware splits cannot hit ratios exactly, so smaller
  shortfalls are normal).
* ``leakage``: a source document (syllabus, passage) has items in two splits (only possible when
  original splits are kept), or the same multiple-choice question with the same answer (case and
  spacing ignored) is in two splits (the real SciQ has 12 such pairs across its own splits). Syllabus
  questions are about their own syllabus, so "Are there any prerequisites?" asked of two syllabi is not
  leakage.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, Optional, Protocol

from exports.splits import SPLITS, SplitAssignment, question_key

EMPTY_SPLIT = "empty_split"
SHORT_SPLIT = "short_split"
LEAKAGE = "leakage"
PROBLEM_CODES: tuple[str, ...] = (EMPTY_SPLIT, SHORT_SPLIT, LEAKAGE)
SHORT_SHARE = 0.5
"""With ratios, a split is short when it holds less than this share of its target item count."""
LEAK_EXAMPLES = 3


class CheckedRecord(Protocol):
    """What the checks read of a release record (QA pairs and multiple-choice questions alike)."""

    id: str
    document_id: str
    question: str


def _mcq_answer(record: CheckedRecord) -> Optional[str]:
    """A multiple-choice question's ``correct_answer``; None for document-grounded QA pairs."""
    answer = getattr(record, "correct_answer", None)
    return None if answer is None else str(answer)


@dataclass(frozen=True)
class SplitProblem:
    """One reason to stop before writing a release.

    Attributes:
        code: one of :data:`PROBLEM_CODES`.
        split: the split concerned (None for leakage between splits).
        message: a sentence for the command output and the page.
    """

    code: str
    split: Optional[str]
    message: str

    def to_dict(self) -> dict[str, Any]:
        """JSON form for job results and command summaries."""
        return asdict(self)


def _leaks(
    records: Iterable[CheckedRecord], assignment: SplitAssignment, exempt: Iterable[str] = ()
) -> list[SplitProblem]:
    """Documents and question/answer pairs in two splits; ``exempt`` documents are reported elsewhere.

    Memory grows with the documents and the distinct multiple-choice questions, not with QA pairs.
    """
    exempt_documents = set(exempt)
    documents: dict[str, set[str]] = defaultdict(set)
    questions: dict[str, set[str]] = defaultdict(set)
    for record in records:
        try:
            split = assignment.split_for(record.id, record.document_id)
        except KeyError:  # not split
            continue
        if record.document_id and record.document_id not in exempt_documents:
            documents[record.document_id].add(split)
        answer = _mcq_answer(record)
        if answer is not None and record.question.strip():
            questions[question_key(record.question, answer)].add(split)
    problems: list[SplitProblem] = []
    shared_docs = sorted(doc for doc, splits in documents.items() if len(splits) > 1)
    if shared_docs:
        examples = ", ".join(f"{d!r} ({'/'.join(sorted(documents[d]))})" for d in shared_docs[:LEAK_EXAMPLES])
        problems.append(
            SplitProblem(
                LEAKAGE,
                None,
                f"{len(shared_docs)} source document(s) have items in two splits, e.g. {examples}",
            )
        )
    shared_questions = sorted(q for q, splits in questions.items() if len(splits) > 1)
    if shared_questions:
        examples = "; ".join(repr(q.split("\n")[0][:80]) for q in shared_questions[:LEAK_EXAMPLES])
        problems.append(
            SplitProblem(
                LEAKAGE,
                None,
                f"{len(shared_questions)} question(s) with the same answer appear in two splits, "
                f"e.g. {examples}",
            )
        )
    return problems


def split_problems(
    records: Iterable[CheckedRecord], assignment: SplitAssignment, *, original_splits: bool = False
) -> list[SplitProblem]:
    """Return every problem of a split, in split order, then leakage.

    Args:
        records: the records that were split.
        assignment: their split.
        original_splits: the split kept the source's own assignment; then every split is expected to
            hold items whatever the ratios say, and its size is the source's (never short), and the
            documents the source itself shares between splits (``assignment.shared_documents``, e.g.
            SciQ passages) are not leakage: the card lists them.
    """
    problems: list[SplitProblem] = []
    total = sum(assignment.counts.values())
    ratios = assignment.target_ratios or {}
    sizes = assignment.target_sizes or {}
    for split in SPLITS:
        count = assignment.counts.get(split, 0)
        documents = assignment.document_counts.get(split, 0)
        if assignment.mode == "sciq" and split in sizes:
            asked = int(sizes[split])
            wanted = asked > 0
            short = count < asked
        else:
            ratio = float(ratios.get(split, 0.0))
            asked = round(ratio * total)
            wanted = ratio > 0  # a positive share asks for items even when it rounds to none
            short = count < SHORT_SHARE * asked
        short = short and not original_splits  # the source's own split sizes are what was asked
        if count == 0 and (wanted or split == "train" or original_splits):
            problems.append(SplitProblem(EMPTY_SPLIT, split, f"the {split} split is empty (0 items)"))
        elif short:
            problems.append(
                SplitProblem(
                    SHORT_SPLIT,
                    split,
                    f"the {split} split has {count} item(s) from {documents} document(s); "
                    f"{asked} were asked for",
                )
            )
    exempt = assignment.shared_documents if original_splits else {}
    return problems + _leaks(records, assignment, exempt)


def refused(problems: Iterable[SplitProblem], allowed: Iterable[str]) -> list[SplitProblem]:
    """The problems whose code is not in ``allowed``."""
    allow = set(allowed)
    return [p for p in problems if p.code not in allow]
