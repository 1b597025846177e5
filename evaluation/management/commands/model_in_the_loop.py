"""``manage.py model_in_the_loop --corpus NAME``: replay an imported corpus's pairs against a live baseline.

Each pair's question is answered from its syllabus by the system and judged against the pair's answer
(:mod:`evaluation.model_in_the_loop`), so a researcher can see per question type how often the model is
fooled before launching a batch with the model in the loop. ``--system rag`` runs the RAG baseline with
the LLM of ``evaluation.model_in_the_loop.rag_backend`` (the ``LLM_API_BASE`` endpoint, else the local
SmolLM2); a backend that fails stops the replay with an error naming it. ``--judge fact_qa`` asks the
same LLM for Fact-QA F1; a pair whose judge reply has no valid score is counted as ``unjudged``.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError

from annotation.models import Corpus, QAPair
from config.commands import JsonCommand
from evaluation.llm import LLMError
from evaluation.model_in_the_loop import (
    LOOP_JUDGES,
    LOOP_SYSTEMS,
    NO_ANSWER_BM25,
    ROUGE_L_THRESHOLD,
    check_pair,
    summarize,
    summary_lines,
    system_version,
)

SPLITS = ("train", "val", "test", "all")


class Command(JsonCommand):
    help = (
        "Replay the QA pairs of an imported corpus against a baseline (the search baseline: top-1 BM25 "
        "chunk; or RAG: an LLM with the top-5 chunks) and judge each answer against the worker's "
        "(Lexical Match or ROUGE-L); prints per-type "
        "counts, fooled rates and latency p50/p95, last line one JSON object with a by_type map."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--corpus", required=True, help="Name of the imported corpus.")
        parser.add_argument(
            "--split", default="test", choices=SPLITS, help="Original split of the pairs (default test)."
        )
        parser.add_argument("--system", default="search", choices=LOOP_SYSTEMS, help="Answering system.")
        parser.add_argument(
            "--judge", default="lexical", choices=LOOP_JUDGES, help="Judge (default lexical)."
        )
        parser.add_argument(
            "--threshold",
            type=float,
            default=ROUGE_L_THRESHOLD,
            help=f"F1 at which rouge_l or fact_qa calls a match (default {ROUGE_L_THRESHOLD}).",
        )
        parser.add_argument(
            "--no-answer-below",
            type=float,
            default=NO_ANSWER_BM25,
            help=f"Top-1 BM25 score under which the search baseline abstains (default {NO_ANSWER_BM25}).",
        )
        parser.add_argument("--limit", type=int, default=0, help="First N pairs only (0 = all).")
        parser.add_argument("--json", action="store_true", help="Print only the JSON summary line.")

    def handle(self, *args: Any, **options: Any) -> None:
        corpus = Corpus.objects.filter(name=options["corpus"]).first()
        if corpus is None:
            raise CommandError(f"no corpus named '{options['corpus']}'")
        pairs = (
            QAPair.objects.filter(corpus=corpus, document__isnull=False)
            .select_related("document")
            .order_by("document_id", "pk")
        )
        if options["split"] != "all":
            pairs = pairs.filter(original_split=options["split"])
        if options["limit"] < 0:
            raise CommandError("--limit must be 0 or more")
        if options["limit"]:
            pairs = pairs[: options["limit"]]
        rows = list(pairs)
        if not rows:
            raise CommandError(
                f"corpus '{corpus.name}' has no pairs with a document in split '{options['split']}'"
            )
        typed = []
        skipped = 0
        unjudged = 0
        for done, pair in enumerate(rows, start=1):
            if not pair.document.text.strip():
                skipped += 1
                continue
            try:
                result = check_pair(
                    pair.document.text,
                    pair.question,
                    pair.answer,
                    pair.question_type,
                    system=options["system"],
                    judge=options["judge"],
                    threshold=options["threshold"],
                    no_answer_below=options["no_answer_below"],
                )
            except LLMError as exc:
                raise CommandError(f"system {options['system']}: the model failed: {exc}") from exc
            except ValueError:  # the Fact-QA judge gave no valid score: no verdict for this pair
                unjudged += 1
                continue
            typed.append((pair.question_type, result))
            self.progress("pairs", done, len(rows))
        summary = {
            "corpus": corpus.name,
            "split": options["split"],
            "system": options["system"],
            "model_version": system_version(
                options["system"], options["no_answer_below"], judge=options["judge"]
            ),
            "judge": options["judge"],
            "threshold": options["threshold"],
            "no_answer_below": options["no_answer_below"],
            "skipped_empty_documents": skipped,
            "unjudged": unjudged,
            **summarize(typed),
        }
        self.emit(summary, [] if options["json"] else summary_lines(summary))
