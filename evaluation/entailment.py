"""Entailment-based answer evaluation with an answer hierarchy and partial marks (Yao & Barbosa, ACL 2024).

Pipeline: (question, answer) -> declarative statement (rule-based :func:`qa_to_statement` or the paper's
2-shot LLM prompt :class:`LLMStatementConverter`); entailment tested both ways between the gold and the
system statement by an :class:`NLIBackend`; the system answer falls into one of four sets:

- ``more_informative``: the system statement entails the gold one, not the reverse;
- ``equivalent``: both directions;
- ``less_informative``: the gold statement entails the system one, not the reverse;
- ``incorrect``: neither.

The first three count as correct (the paper's choice, following EVOUNA's annotation guideline). With
several gold answers the best set over the golds wins. Partial marks quantify the inference gap for the
non-equivalent sets.

As a benchmark metric (``run_benchmark --metrics entailment``), :func:`entailment_item_scores` reports
per item whether the answer is judged correct (its mean is the paper's accuracy, the fraction judged
correct) and the partial mark scaled to [0, 1]; an :class:`EntailmentJudge` bundles the backends, and
every LLM call goes through the judge cache.

NLI backends. No NLI model can be downloaded here, so two backends are offered:

- :class:`LLMNLIBackend` sends the paper's zero-shot entailment prompt (table 14) to any
  :class:`~evaluation.llm.LLMBackend` (the paper's method with GPT-3.5; an OpenAI-compatible endpoint
  reproduces it);
- :class:`LexicalNLIBackend`, an offline approximation (lexical entailment in the style of RTE token
  coverage baselines): the premise entails the hypothesis when it covers at least ``threshold`` of the
  hypothesis's content-term occurrences (stemmed, stop words removed, counted with multiplicity so that
  an answer repeating question words is not entailed by the question alone). It is
  NOT a real NLI model; it cannot see paraphrases, synonyms or world knowledge, and the benchmark reports
  it as such.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Optional, Protocol

from evaluation.factqa import JudgeCache
from evaluation.lfqa_llm import cached_chat
from evaluation.llm import ChatMessage, LLMBackend
from evaluation.prompting import render
from evaluation.retrieval import analyze
from evaluation.schema import ProgressCallback

logger = logging.getLogger(__name__)

NLILabel = Literal["entailment", "neutral", "contradiction"]
AnswerSet = Literal["more_informative", "equivalent", "less_informative", "incorrect"]
SET_RANK: dict[str, int] = {"more_informative": 3, "equivalent": 3, "less_informative": 2, "incorrect": 0}
CORRECT_SETS = frozenset({"more_informative", "equivalent", "less_informative"})
#: Per-item score keys of the benchmark metric: judged correct (1.0 / 0.0) and the partial mark in [0, 1].
ENTAILMENT_KEYS: tuple[str, ...] = ("entailment", "entailment_mark")
#: Prompt templates (``evaluation/prompts``) an LLM entailment judge sends.
ENTAILMENT_PROMPTS: tuple[str, ...] = ("qa2d", "nli", "inference_steps")
# Generation budgets: a statement is one line (only the first is kept), an NLI reply one label (the
# prompt forbids explanations); an inference explanation lists steps.
QA2D_MAX_NEW_TOKENS = 60
NLI_MAX_NEW_TOKENS = 20
INFERENCE_MAX_NEW_TOKENS = 300

_WH = re.compile(
    r"^(who|whom|whose|what|which|when|where|why|how(?:\s+(?:many|much|long|old|far|often))?)\b\s*", re.I
)
_AUX = {
    "is",
    "are",
    "was",
    "were",
    "do",
    "does",
    "did",
    "has",
    "have",
    "had",
    "can",
    "could",
    "will",
    "would",
}


def qa_to_statement(question: str, answer: str) -> str:
    """Rule-based QA2D: turn a question and its answer into one declarative statement.

    who/what/which questions put the answer in the wh-word's place ("who wrote the first declaration of
    human rights" + "Cyrus" -> "Cyrus wrote the first declaration of human rights."); other wh-questions
    drop the wh-word, move a leading auxiliary after the rest and append the answer ("where is the tv
    show filmed" + "Oak Island" -> "the tv show filmed is Oak Island."). Crude but enough for lexical
    entailment; :class:`LLMStatementConverter` gives fluent statements.
    """
    q = question.strip().rstrip("?").strip()
    a = answer.strip().rstrip(".").strip()
    match = _WH.match(q)
    if not match:
        return f"{q} {a}".strip() + "."
    wh = match.group(1).lower()
    words = q[match.end() :].split()
    if wh in {"who", "whom", "what", "which", "whose"}:
        return " ".join([a, *words]).strip() + "."
    if len(words) > 1 and words[0].lower() in _AUX:
        words = words[1:] + [words[0]]
    return " ".join([*words, a]).strip() + "."


class StatementConverter(Protocol):
    """Turns a QA pair into a declarative statement."""

    def __call__(self, question: str, answer: str) -> str:
        """Return the statement."""
        ...


class LLMStatementConverter:
    """The paper's 2-shot QA-to-statement prompt (table 14, row 1) on any LLM backend."""

    def __init__(self, backend: LLMBackend, cache: Optional[JudgeCache] = None) -> None:
        """Args:
        backend: the LLM.
        cache: where replies are looked up and stored (None: always ask).
        """
        self.backend = backend
        self.cache = cache

    def __call__(self, question: str, answer: str) -> str:
        """Return the first line of the model's statement (falls back to the rule when it is empty)."""
        reply, _ = cached_chat(
            self.backend,
            [ChatMessage("user", render("qa2d", question=question.strip(), answer=answer.strip()))],
            self.cache,
            max_new_tokens=QA2D_MAX_NEW_TOKENS,
        )
        line = reply.strip().splitlines()[0].strip() if reply.strip() else ""
        line = re.sub(r"^S:\s*", "", line)
        return line or qa_to_statement(question, answer)


class NLIBackend(Protocol):
    """Decides whether a premise entails a hypothesis (the question gives context)."""

    name: str

    def classify(self, premise: str, hypothesis: str, question: str = "") -> NLILabel:
        """Return entailment, neutral or contradiction."""
        ...


# The first label a reply names wins; verbs count ("the premise entails the hypothesis"), and a negated
# "does not entail" is neutral (not entailed, not said to be contradicted).
_NLI_LABELS: tuple[tuple[NLILabel, re.Pattern[str]], ...] = (
    (
        "neutral",
        re.compile(
            r"\b(?:neutral|(?:does|do|did)\s+not\s+entail|doesn't\s+entail|not\s+(?:an\s+)?entail\w*)\b"
        ),
    ),
    ("contradiction", re.compile(r"\bcontradict(?:ion|s|ed|ory)?\b")),
    ("entailment", re.compile(r"\b(?:entailment|entails|entailed)\b")),
)


def nli_label(reply: str) -> Optional[NLILabel]:
    """The label an NLI reply names first ("Entailment.", "The premise entails ..."), or None.

    Args:
        reply: the model's reply.

    Returns:
        ``entailment``, ``contradiction`` or ``neutral``; None when the reply names none of them.
    """
    text = reply.lower()
    found = [(m.start(), label) for label, pattern in _NLI_LABELS if (m := pattern.search(text))]
    return min(found)[1] if found else None


class LLMNLIBackend:
    """Zero-shot NLI with the paper's prompt (table 14, row 2) on an LLM backend."""

    def __init__(self, backend: LLMBackend, cache: Optional[JudgeCache] = None) -> None:
        """Args:
        backend: the LLM.
        cache: where replies are looked up and stored (None: always ask).
        """
        self.backend = backend
        self.cache = cache
        self.name = f"llm-nli:{backend.name}"

    def classify(self, premise: str, hypothesis: str, question: str = "") -> NLILabel:
        """Ask the model; a reply naming none of the three labels counts as neutral (logged)."""
        reply, _ = cached_chat(
            self.backend,
            [ChatMessage("user", render("nli", premise=premise, hypothesis=hypothesis))],
            self.cache,
            max_new_tokens=NLI_MAX_NEW_TOKENS,
        )
        label = nli_label(reply)
        if label is not None:
            return label
        logger.warning("NLI reply names no label, counted as neutral: %r", reply[:120])
        return "neutral"


class LexicalNLIBackend:
    """Offline lexical-entailment approximation (not a trained NLI model; see the module docstring)."""

    def __init__(self, threshold: float = 1.0) -> None:
        """Args:
        threshold: share of the hypothesis's content-term occurrences the premise must cover (1.0 = all).
        """
        self.threshold = threshold
        self.name = f"lexical-nli@{threshold:g}"

    def classify(self, premise: str, hypothesis: str, question: str = "") -> NLILabel:
        """Entailment when the premise's terms cover the hypothesis's terms (multiset coverage)."""
        hypothesis_terms = Counter(analyze(hypothesis))
        if not hypothesis_terms:
            return "entailment"
        premise_terms = Counter(analyze(premise))
        covered = sum(min(count, premise_terms[term]) for term, count in hypothesis_terms.items())
        return "entailment" if covered / sum(hypothesis_terms.values()) >= self.threshold else "neutral"


@dataclass(frozen=True)
class HierarchyResult:
    """Where a system answer sits relative to the gold answers, and its partial mark (0-100)."""

    answer_set: AnswerSet
    gold_index: Optional[int]
    system_entails_gold: bool
    gold_entails_system: bool
    partial_mark: float

    @property
    def correct(self) -> bool:
        """True for the more informative, equivalent and less informative sets (the paper's choice)."""
        return self.answer_set in CORRECT_SETS


def answer_set(system_entails_gold: bool, gold_entails_system: bool) -> AnswerSet:
    """Map the two entailment directions to the four sets of the hierarchy."""
    if system_entails_gold and gold_entails_system:
        return "equivalent"
    if system_entails_gold:
        return "more_informative"
    if gold_entails_system:
        return "less_informative"
    return "incorrect"


def inference_gap_mark(steps: int, info: int = 0, assumptions: int = 0) -> float:
    """The paper's CIA partial mark: 100 - 10*steps - 3*INFO - 5*ASSUMPTION, floored at 0."""
    return max(0.0, 100.0 - 10.0 * steps - 3.0 * info - 5.0 * assumptions)


def count_inference(explanation: str) -> tuple[int, int, int]:
    """Count (numbered steps, [[INFO]] tags, [[ASSUMPTION]] tags) in an inference explanation."""
    steps = len(re.findall(r"^\s*\d+[.)]", explanation, flags=re.MULTILINE))
    return steps, explanation.count("[[INFO]]"), explanation.count("[[ASSUMPTION]]")


def llm_partial_mark(
    premise: str, hypothesis: str, backend: LLMBackend, cache: Optional[JudgeCache] = None
) -> float:
    """Partial mark from the LLM's step-by-step inference explanation (table 17, row 1, CIA scoring)."""
    explanation, _ = cached_chat(
        backend,
        [ChatMessage("user", render("inference_steps", s1=premise, s2=hypothesis))],
        cache,
        max_new_tokens=INFERENCE_MAX_NEW_TOKENS,
    )
    return inference_gap_mark(*count_inference(explanation))


def lexical_gap(premise: str, hypothesis: str) -> int:
    """Offline inference-gap proxy: content-term occurrences in one statement and not in the other."""
    premise_terms, hypothesis_terms = Counter(analyze(premise)), Counter(analyze(hypothesis))
    return sum(((premise_terms - hypothesis_terms) + (hypothesis_terms - premise_terms)).values())


def evaluate_answer(
    question: str,
    system_answer: str,
    gold_answers: Sequence[str],
    nli: NLIBackend,
    converter: Optional[StatementConverter] = None,
    partial_marks: Optional[LLMBackend] = None,
    cache: Optional[JudgeCache] = None,
) -> HierarchyResult:
    """Place a system answer in the answer hierarchy against every gold answer and keep the best.

    Args:
        question: the question.
        system_answer: the answer to grade.
        gold_answers: acceptable gold answers (aliases).
        nli: the entailment backend.
        converter: QA-to-statement converter (default: the rule-based one).
        partial_marks: an LLM for the paper's inference-explanation marks; None uses the lexical gap
            (10 points per missing or extra content term, the paper's per-step weight).
        cache: reply cache of the partial-mark calls.

    Returns:
        The best :class:`HierarchyResult`: equivalent = 100, more/less informative lose points for the
        inference gap, incorrect = 0.
    """
    convert = converter or qa_to_statement
    system_statement = convert(question, system_answer)
    best: Optional[HierarchyResult] = None
    for index, gold in enumerate(gold_answers):
        if not gold.strip():
            continue
        gold_statement = convert(question, gold)
        forward = nli.classify(system_statement, gold_statement, question) == "entailment"
        backward = nli.classify(gold_statement, system_statement, question) == "entailment"
        found = answer_set(forward, backward)
        if found == "equivalent":
            mark = 100.0
        elif found == "incorrect":
            mark = 0.0
        else:
            premise, hypothesis = (
                (system_statement, gold_statement) if forward else (gold_statement, system_statement)
            )
            if partial_marks is not None:
                mark = llm_partial_mark(premise, hypothesis, partial_marks, cache)
            else:
                mark = inference_gap_mark(lexical_gap(premise, hypothesis))
        result = HierarchyResult(found, index, forward, backward, mark)
        if best is None or (SET_RANK[found], mark) > (SET_RANK[best.answer_set], best.partial_mark):
            best = result
        if found == "equivalent":
            break
    return best or HierarchyResult("incorrect", None, False, False, 0.0)


@dataclass(frozen=True)
class EntailmentJudge:
    """The backends of one entailment evaluator, chosen once and used for every answer."""

    nli: NLIBackend
    converter: Optional[StatementConverter] = None
    partial_marks: Optional[LLMBackend] = None
    cache: Optional[JudgeCache] = None

    @classmethod
    def llm(
        cls, backend: LLMBackend, cache: Optional[JudgeCache] = None, *, partial_marks: bool = True
    ) -> EntailmentJudge:
        """The paper's method on one LLM: its QA2D and NLI prompts, and its inference-step partial marks.

        Args:
            backend: the LLM that converts, classifies and explains.
            cache: where every reply is looked up and stored.
            partial_marks: False scores the inference gap lexically (no explanation call); the
                correct/incorrect verdict does not depend on it.
        """
        return cls(
            LLMNLIBackend(backend, cache),
            LLMStatementConverter(backend, cache),
            backend if partial_marks else None,
            cache,
        )

    @property
    def name(self) -> str:
        """The NLI backend's name (what the verdicts depend on)."""
        return self.nli.name

    def evaluate(self, question: str, system_answer: str, gold_answers: Sequence[str]) -> HierarchyResult:
        """Place one answer in the hierarchy (see :func:`evaluate_answer`)."""
        return evaluate_answer(
            question, system_answer, gold_answers, self.nli, self.converter, self.partial_marks, self.cache
        )


def entailment_item_scores(
    questions: Sequence[str],
    candidates: Sequence[str],
    references: Sequence[str],
    *,
    judge: EntailmentJudge,
    progress: Optional[ProgressCallback] = None,
) -> dict[str, list[Optional[float]]]:
    """Per-item scores of the entailment metric against one reference answer per item.

    Args:
        questions: the questions.
        candidates: predicted answers.
        references: gold answers, aligned with ``candidates``.
        judge: the entailment evaluator.
        progress: called with (items done, items total).

    Returns:
        ``{"entailment": [1.0 when judged correct, else 0.0], "entailment_mark": [partial mark / 100]}``;
        the mean of ``entailment`` is the fraction judged correct, as the paper reports accuracy.
    """
    if not (len(questions) == len(candidates) == len(references)):
        raise ValueError(
            f"{len(questions)} questions, {len(candidates)} candidates, {len(references)} references"
        )
    out: dict[str, list[Optional[float]]] = {key: [] for key in ENTAILMENT_KEYS}
    triples = zip(questions, candidates, references, strict=True)
    for done, (question, candidate, reference) in enumerate(triples, start=1):
        result = judge.evaluate(question, candidate, [reference])
        out["entailment"].append(1.0 if result.correct else 0.0)
        out["entailment_mark"].append(result.partial_mark / 100.0)
        if progress is not None:
            progress(done, len(questions))
    return out
