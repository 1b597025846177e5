"""Create batches and their HITs: one syllabus per HIT, three unused passages per HIT, one pair per HIT.

A batch is created as a draft with all its HITs in one transaction; publishing it on a platform is the
provider's job (``crowd.services``). HIT contents follow the papers: SyllabusQA gives one whole syllabus
to each worker; SciQ stage 1 shows three passages that the sentence filter accepted and nobody has
used; SciQ stage 2 shows one accepted question to a worker who did not write it.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Optional

from django.core.exceptions import ImproperlyConfigured
from django.db import transaction

from annotation.hits import BuiltFrom, HitHandler, handler_for
from annotation.models import HIT, Batch, Corpus, Document, Passage, QAPair
from annotation.platforms import Platform
from annotation.screening.quiz import (
    DEFAULT_QUIZ_QUESTIONS,
    MAX_QUIZ_QUESTIONS,
    QuizCandidate,
    QuizQuestion,
    choose_questions,
)

logger = logging.getLogger(__name__)

PASSAGES_PER_HIT = 3
"""SciQ stage 1 offers three passages per HIT (papers/sciq-crowdsourcing-mcq.txt, 3.1)."""


class BatchSpecError(ValueError):
    """A batch cannot be created as asked (unknown corpus, nothing to annotate...)."""


@dataclass(frozen=True)
class BatchSpec:
    """What a researcher asks for when creating a batch (``launch_batch`` options, the web form).

    Attributes:
        kind: one of :class:`Batch.Kind`.
        corpus: the corpus name.
        provider: ``local``, ``mturk`` or ``prolific``.
        limit: the maximum number of HITs (None: everything available).
        assignments: assignments per HIT (different workers).
        reward_cents: the reward per assignment.
        documents: for syllabus and screening batches, the document names to use (empty: all).
        parent: for stage-2 batches, the stage-1 batch whose accepted questions are validated.
        options: free-form settings kept on the batch (completion codes, qualification names...).
        quiz: quiz questions per HIT drawn from the syllabus's imported reference pairs. Screening
            batches: None is :data:`DEFAULT_QUIZ_QUESTIONS`, 0 no quiz. Syllabus QA batches: known-answer
            questions counted as the worker's gold answers (None or 0: none).
        quiz_seed: the seed of the quiz questions' choice (same seed and pairs, same questions).
    """

    kind: str
    corpus: str
    provider: str = Platform.LOCAL
    name: str = ""
    title: str = ""
    description: str = ""
    limit: Optional[int] = None
    assignments: int = 1
    reward_cents: int = 0
    #: Minutes a worker has per HIT; None: :func:`default_time_limit` of the kind.
    time_limit_minutes: Optional[int] = None
    max_pairs_per_worker_per_document: Optional[int] = None
    max_pairs_per_worker: Optional[int] = None
    budget_cap_cents: Optional[int] = None
    documents: tuple[str, ...] = ()
    parent: Optional[int] = None
    options: dict[str, Any] = field(default_factory=dict)
    quiz: Optional[int] = None
    quiz_seed: int = 0


def typical_minutes(kind: str) -> tuple[int, int]:
    """How long a HIT of ``kind`` usually takes, ``(low, high)`` minutes, as its consent text states."""
    return handler_for(kind).tutorial().consent.typical_minutes


def default_time_limit(kind: str) -> int:
    """The time limit of a batch that names none: the typical time's upper end plus half an hour, >= 60."""
    return max(60, typical_minutes(kind)[1] + 30)


def check_time_limit(kind: str, minutes: int) -> None:
    """Refuse a time limit shorter than the task's stated typical time (workers would lose their work).

    Raises:
        BatchSpecError: saying the shortest limit allowed.
    """
    low, high = typical_minutes(kind)
    if minutes < high:
        raise BatchSpecError(
            f"a time limit of {minutes} minutes is shorter than the {low} to {high} minutes a {kind} HIT "
            f"usually takes (its consent text says so); give at least {high} minutes"
        )


def create_batch(spec: BatchSpec, created_by: Any = None) -> Batch:
    """Create a draft batch with its HITs.

    Returns:
        The batch (status draft); its HIT count is ``batch.hits.count()``.

    Raises:
        BatchSpecError: for an unknown corpus or kind, a missing parent, a time limit shorter than the
            task's stated typical time, or when nothing is available to annotate (the message says what
            is missing).
    """
    handler = _check_spec(spec)
    time_limit = default_time_limit(spec.kind) if spec.time_limit_minutes is None else spec.time_limit_minutes
    check_time_limit(spec.kind, time_limit)
    corpus = Corpus.objects.filter(name=spec.corpus).first()
    if corpus is None:
        raise BatchSpecError(f"no corpus named {spec.corpus!r} (import one first)")
    parent = None
    if spec.parent is not None:
        parent = Batch.objects.filter(pk=spec.parent).first()
        if parent is None:
            raise BatchSpecError(f"no parent Batch({spec.parent})")
    with transaction.atomic():
        batch = Batch.objects.create(
            name=spec.name or default_batch_name(spec.kind, corpus),
            kind=spec.kind,
            provider=spec.provider,
            corpus=corpus,
            parent=parent,
            title=spec.title or handler.default_title,
            description=spec.description,
            reward_cents=spec.reward_cents,
            assignments_per_hit=spec.assignments,
            time_limit_minutes=time_limit,
            max_pairs_per_worker_per_document=spec.max_pairs_per_worker_per_document,
            max_pairs_per_worker=spec.max_pairs_per_worker,
            budget_cap_cents=spec.budget_cap_cents,
            options=dict(spec.options),
            created_by=created_by,
        )
        if handler.built_from == BuiltFrom.DOCUMENTS:
            count = _add_document_hits(batch, spec)
        elif handler.built_from == BuiltFrom.PASSAGES:
            count = add_passage_hits(batch, spec.limit)
        else:
            count = _add_validation_hits(batch, spec)
        if count == 0:
            raise BatchSpecError(_nothing_available(handler, spec, corpus))
        if handler.has_quiz:
            n = DEFAULT_QUIZ_QUESTIONS if spec.quiz is None else spec.quiz
            add_quiz(batch, n, spec.quiz_seed)
        elif handler.gold_quiz and spec.quiz:
            add_quiz(batch, spec.quiz, spec.quiz_seed)
    logger.info("created Batch(%s) %s with %d HITs", batch.pk, batch.kind, count)
    return batch


def _check_spec(spec: BatchSpec) -> HitHandler:
    """Refuse a spec whose kind, provider, counts or quiz are out of range; the kind's handler.

    Raises:
        BatchSpecError: names the setting and the value.
    """
    if spec.kind not in Batch.Kind.values:
        raise BatchSpecError(
            f"unknown batch kind {spec.kind!r}; expected one of {', '.join(Batch.Kind.values)}"
        )
    handler = handler_for(spec.kind)
    if handler.built_from == BuiltFrom.RELEASE:
        raise BatchSpecError("expert batches are drawn from a release: use create_expert_batch --release DIR")
    if handler.built_from == BuiltFrom.FOOLED:
        raise BatchSpecError(
            "model verdict validation batches are made from a syllabus batch: its page's 'Validate the "
            "fooled verdicts' button, or its model_in_the_loop option's validation"
        )
    if spec.provider not in Platform.values():
        raise BatchSpecError(
            f"unknown provider {spec.provider!r}; expected one of {', '.join(Platform.values())}"
        )
    if spec.assignments < 1:
        raise BatchSpecError(f"assignments per HIT must be at least 1, got {spec.assignments}")
    if spec.limit is not None and spec.limit < 1:
        raise BatchSpecError(f"--limit must be at least 1, got {spec.limit}")
    if spec.quiz is not None and not 0 <= spec.quiz <= MAX_QUIZ_QUESTIONS:
        raise BatchSpecError(f"--quiz must be between 0 and {MAX_QUIZ_QUESTIONS}, got {spec.quiz}")
    if spec.quiz and not (handler.has_quiz or handler.gold_quiz):
        raise BatchSpecError(f"--quiz is for screening and syllabus QA batches only, not {spec.kind!r}")
    return handler


def default_batch_name(kind: str, corpus: Corpus) -> str:
    """A readable name for a batch the researcher did not name: "Syllabus QA writing: demo-syllabi"."""
    return f"{Batch.Kind(kind).label}: {corpus.name}"


def _nothing_available(handler: HitHandler, spec: BatchSpec, corpus: Corpus) -> str:
    if handler.built_from == BuiltFrom.PASSAGES:
        return _no_free_passages(corpus)
    if handler.built_from == BuiltFrom.QUESTIONS:
        return f"corpus {corpus.name!r} has no accepted question waiting for validation"
    names = f" named {', '.join(spec.documents)}" if spec.documents else ""
    return f"corpus {corpus.name!r} has no documents{names}"


def _no_free_passages(corpus: Corpus) -> str:
    """Why a SciQ stage-1 batch found no three free passages, and the fix that applies."""
    accepted = Passage.objects.filter(corpus=corpus).accepted()
    if not Passage.objects.filter(corpus=corpus).exists():
        return f"corpus {corpus.name!r} has no passages: import a textbook into it first"
    if not accepted.exists():
        return (
            f"corpus {corpus.name!r} has no passage accepted by the sentence filter "
            "(run filter_passages first)"
        )
    free = passages_free_for_hits(corpus).count()
    held = (
        Batch.objects.filter(
            hits__status=HIT.Status.OPEN,
            hits__passages__corpus=corpus,
            status__in=[Batch.Status.DRAFT, Batch.Status.PUBLISHED, Batch.Status.PAUSED],
        )
        .distinct()
        .order_by("pk")
    )
    names = ", ".join(f"{b.name!r} (#{b.pk})" for b in held[:3])
    unused = accepted.unused().not_retired().count()
    if held and free < PASSAGES_PER_HIT:
        return (
            f"corpus {corpus.name!r} has {unused} accepted, unused passage{'s' if unused != 1 else ''}, but "
            f"{unused - free} of them are shown by the open HITs of {names}; a HIT needs {PASSAGES_PER_HIT} "
            "free ones. Close or cancel that batch to free its passages, or add passages to the corpus"
        )
    return (
        f"corpus {corpus.name!r} has {free} free accepted passage{'s' if free != 1 else ''}; a HIT needs "
        f"{PASSAGES_PER_HIT}: add passages to the corpus and run filter_passages"
    )


def _next_position(batch: Batch) -> int:
    last = batch.hits.order_by("-position").values_list("position", flat=True).first()
    return 0 if last is None else last + 1


def _add_document_hits(batch: Batch, spec: BatchSpec) -> int:
    documents = batch.corpus.documents.order_by("name")
    if spec.documents:
        documents = documents.filter(name__in=spec.documents)
        missing = set(spec.documents) - set(documents.values_list("name", flat=True))
        if missing:
            raise BatchSpecError(f"corpus {batch.corpus.name!r} has no document named {sorted(missing)[0]!r}")
    if spec.limit:
        documents = documents[: spec.limit]
    hits = [
        HIT(batch=batch, position=i, document=doc, max_assignments=spec.assignments)
        for i, doc in enumerate(documents)
    ]
    HIT.objects.bulk_create(hits)
    return len(hits)


def passages_free_for_hits(corpus: Corpus) -> Any:
    """Accepted, unused, not retired passages of ``corpus`` that no open HIT of a live batch is showing.

    Only this corpus's passages are looked up among the open HITs' (an inner join, so no NULL reaches the
    ``NOT IN``): the list grows with the corpus, not with the whole database's open HITs, and PostgreSQL
    keeps it in a hash while it fits in ``work_mem`` (4 MB by default: some hundred thousand passages).
    A list of every open HIT's passages outgrows that and is scanned for every passage (17.6 s for a
    300-HIT batch beside 100,000 open HITs, ``benchmarks/batch_creation.py``); a correlated ``NOT EXISTS``,
    planned with the statistics of an HIT-passage table that was still small, scans that table for
    every passage.
    """
    showing = HIT.objects.filter(
        status=HIT.Status.OPEN,
        passages__corpus=corpus,
        batch__status__in=[Batch.Status.DRAFT, Batch.Status.PUBLISHED, Batch.Status.PAUSED],
    ).values("passages")
    # Fresh passages first: a rejected trio is split up and each comes back beside new companions.
    return (
        Passage.objects.filter(corpus=corpus)
        .accepted()
        .unused()
        .not_retired()
        .exclude(pk__in=showing)
        .order_by("crowd_rejections", "pk")
    )


def add_passage_hits(batch: Batch, limit: Optional[int]) -> int:
    """Add SciQ stage-1 HITs of three free passages each; returns how many HITs were added.

    The passages are locked while they are grouped (PostgreSQL ``FOR UPDATE``; SQLite serialises
    writers), so two batches created at the same time never share a passage.
    """
    with transaction.atomic():
        free = list(
            passages_free_for_hits(batch.corpus).select_for_update(of=("self",)).values_list("pk", flat=True)
        )
        groups = [free[i : i + PASSAGES_PER_HIT] for i in range(0, len(free), PASSAGES_PER_HIT)]
        groups = [g for g in groups if len(g) == PASSAGES_PER_HIT]
        if limit:
            groups = groups[:limit]
        # In bulk, a few statements whatever the batch's size: the New batch page's estimate creates (and
        # rolls back) the whole batch in its request, and a whole SciQ textbook is about 4,500 HITs.
        position = _next_position(batch)
        hits = HIT.objects.bulk_create(
            HIT(batch=batch, position=position + offset, max_assignments=batch.assignments_per_hit)
            for offset in range(len(groups))
        )
        links = HIT.passages.through
        links.objects.bulk_create(
            links(hit_id=hit.pk, passage_id=passage)
            for hit, group in zip(hits, groups, strict=True)
            for passage in group
        )
    return len(groups)


#: Builds one SciQ stage-2 HIT (with its six distractor suggestions) for a batch and an accepted pair.
ValidationHitBuilder = Callable[[Batch, QAPair], Any]
_validation_hit_builders: list[ValidationHitBuilder] = []


def register_validation_hit_builder(builder: ValidationHitBuilder) -> None:
    """Give batch creation the function that builds a stage-2 HIT.

    A stage-2 HIT needs the distractor ranker and the platform's traits, which sit above the data model;
    the crowd app registers its builder here from its ``AppConfig.ready`` so that annotation never imports
    the apps above it. Registering the same function twice keeps one.
    """
    if builder not in _validation_hit_builders:
        _validation_hit_builders.append(builder)


def _add_validation_hits(batch: Batch, spec: BatchSpec) -> int:
    if not _validation_hit_builders:
        raise ImproperlyConfigured("no stage-2 HIT builder is registered (is the crowd app installed?)")
    add_validation_hit = _validation_hit_builders[0]
    pairs = QAPair.objects.filter(corpus=batch.corpus, status=QAPair.Status.ACCEPTED, passage__isnull=False)
    if batch.parent_id:
        pairs = pairs.filter(assignment__hit__batch=batch.parent_id)
    pairs = pairs.exclude(validation_hits__batch__status__in=[Batch.Status.DRAFT, Batch.Status.PUBLISHED])
    pairs = pairs.order_by("pk")
    if spec.limit:
        pairs = pairs[: spec.limit]
    count = 0
    for pair in pairs:
        add_validation_hit(batch, pair)
        count += 1
    return count


QUIZ_OPTION = "quiz"
"""``Batch.options["quiz"]``: ``{"n", "seed", "by_document": {document id: [question dicts]}}``."""


def quiz_answer_field(k: int) -> str:
    """The form field of quiz question ``k``: ``quiz-{k}-answer`` (screening syllabus HITs only)."""
    return f"quiz-{k}-answer"


def quiz_candidates(document: Document) -> list[QuizCandidate]:
    """The document's imported reference pairs (no assignment) with their spans, as quiz candidates."""
    pairs = (
        QAPair.objects.filter(document=document, assignment__isnull=True)
        .prefetch_related("spans")
        .order_by("pk")
    )
    return [
        QuizCandidate(
            pair_id=str(pair.pk),
            question_type=pair.question_type,
            question=pair.question,
            answer=pair.answer,
            spans=tuple(span.text for span in sorted(pair.spans.all(), key=lambda s: s.position)),
        )
        for pair in pairs
    ]


def _document_seed(seed: int, document: Document) -> int:
    """A per-syllabus seed that does not depend on database ids (the same on every install)."""
    digest = hashlib.sha256(f"{seed}:{document.corpus.name}:{document.name}".encode()).hexdigest()
    return int(digest[:12], 16)


def add_quiz(batch: Batch, n: int, seed: int = 0) -> dict[str, int]:
    """Choose ``n`` quiz questions for each HIT's syllabus and keep them in ``batch.options``.

    A syllabus with no usable reference pair (none imported, or only no-answer pairs) gets no quiz;
    its HITs show none and the log says so.

    Returns:
        document id -> number of questions chosen.
    """
    by_document: dict[str, list[dict[str, Any]]] = {}
    counts: dict[int, int] = {}
    if n > 0:
        documents = Document.objects.filter(hits__batch=batch).select_related("corpus").distinct()
        for document in documents.order_by("pk"):
            questions = choose_questions(quiz_candidates(document), n, _document_seed(seed, document))
            counts[document.pk] = len(questions)
            if not questions:
                logger.info(
                    "Batch(%s): Document(%s) %r has no usable reference QA pair; its HITs have no quiz",
                    batch.pk,
                    document.pk,
                    document.name,
                )
                continue
            if len(questions) < n:
                logger.info(
                    "Batch(%s): Document(%s) has %d usable reference pairs, fewer than the %d asked",
                    batch.pk,
                    document.pk,
                    len(questions),
                    n,
                )
            by_document[str(document.pk)] = [q.to_dict() for q in questions]
    batch.options = {**batch.options, QUIZ_OPTION: {"n": n, "seed": seed, "by_document": by_document}}
    batch.save(update_fields=["options"])
    return counts


def quiz_questions_for(hit: HIT) -> list[QuizQuestion]:
    """The quiz questions shown on a HIT (none outside kinds with a quiz or without reference pairs).

    Raises:
        ValueError: when ``Batch.options["quiz"]`` holds a malformed question (names the batch).
    """
    batch = hit.batch
    handler = handler_for(batch.kind)
    if not (handler.has_quiz or handler.gold_quiz) or hit.document_id is None:
        return []
    stored = (batch.options or {}).get(QUIZ_OPTION) or {}
    rows = (stored.get("by_document") or {}).get(str(hit.document_id), [])
    try:
        return [QuizQuestion.from_dict(row) for row in rows]
    except ValueError as exc:
        raise ValueError(f"Batch({batch.pk}) options quiz, Document({hit.document_id}): {exc}") from exc
