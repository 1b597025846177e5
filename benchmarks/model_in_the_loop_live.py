"""The model in the loop as the HIT page sees it: a card's check asked and read back, on real syllabi.

Creates a throw-away test database (``test_<name>`` of ``DATABASE_URL``; SQLite when unset), imports the
SyllabusQA release, publishes a syllabus batch with the model in the loop (``show``, search baseline,
Lexical Match) over ``--syllabi`` test-split syllabi, and for each HIT has a worker ask the model about
the syllabus's released test pairs (two per type, on the card of their type) exactly as the page does:
POST ``/a/<token>/model-check/`` then GET its result under the returned key. Celery runs the job inline
(as a worker next to the web process would, minus the broker hop), so a card's time is the POST (queue,
model, store) plus the GET. The first card of a syllabus pays the BM25 index build (cold); the others
find it warm. Then the model is broken (every answer raises) and the same requests are timed again:
what a failing model costs a card before the page shows "No model answer".

    DJANGO_SECRET_KEY=... .venv/bin/python benchmarks/model_in_the_loop_live.py --syllabi 8
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from io import StringIO
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

from annotation import question_types as qt  # noqa: E402
from annotation.hits.syllabus_qa import CARD_TYPES  # noqa: E402
from annotation.models import Batch, Document, QAPair  # noqa: E402
from annotation.services.batches import BatchSpec, create_batch  # noqa: E402
from config.celery import app  # noqa: E402
from config.shared_data import shared_data_dir  # noqa: E402
from crowd.models import Consent, Worker  # noqa: E402
from evaluation import model_in_the_loop  # noqa: E402
from evaluation.model_in_the_loop import percentile  # noqa: E402
from worker import hit_links  # noqa: E402
from worker.assigning import claim_next  # noqa: E402


def cards_of(document: Document) -> list[tuple[int, str, str]]:
    """(card, question, answer) of the document's test pairs, two per type, on their type's cards."""
    taken: dict[str, int] = {}
    cards = []
    for pair in QAPair.objects.filter(document=document, original_split="test").order_by("pk"):
        k = taken.get(pair.question_type, 0)
        if pair.question_type not in qt.SYLLABUS_TYPES or k >= qt.PAIRS_PER_TYPE:
            continue
        taken[pair.question_type] = k + 1
        cards.append((CARD_TYPES.index(pair.question_type) + k, pair.question, pair.answer))
    return cards


def ask(client: Client, url: str, card: int, question: str, answer: str) -> tuple[float, str]:
    """One card checked as the page does it: (milliseconds, the result's status)."""
    start = time.perf_counter()
    posted = client.post(url, {"card": card, "question": question, "answer": answer})
    assert posted.status_code in (200, 202), posted.content[:300]
    body = posted.json()
    if body.get("key"):
        body = client.get(url, {"card": card, "key": body["key"]}).json()
    return (time.perf_counter() - start) * 1000, body["status"]


def run(syllabi: int, data: Path) -> dict[str, Any]:
    call_command("import_syllabusqa", str(data), stdout=StringIO())
    names = list(
        QAPair.objects.filter(original_split="test")
        .order_by("document__name")
        .values_list("document__name", flat=True)
        .distinct()[:syllabi]
    )
    batch = create_batch(
        BatchSpec(
            kind=Batch.Kind.SYLLABUS_QA,
            corpus="syllabusqa",
            documents=tuple(names),
            options={"model_in_the_loop": {"mode": "show"}},
        )
    )
    batch.publish()
    cold: list[float] = []
    warm: list[float] = []
    down: list[float] = []
    statuses: dict[str, int] = {}
    for i in range(len(names)):
        worker = Worker.objects.get_or_create_for("local", f"loop-{i}")
        assignment = claim_next(batch, worker)
        Consent.objects.get_or_create(worker=worker, batch=batch)
        url = hit_links.url_for(assignment).rstrip("/") + "/model-check/"
        client = Client()
        for n, (card, question, answer) in enumerate(cards_of(assignment.hit.document)):
            ms, status = ask(client, url, card, question, answer)
            (cold if n == 0 else warm).append(ms)
            statuses[status] = statuses.get(status, 0) + 1
        real = model_in_the_loop.check_pair

        def broken(*_args: Any, **_kwargs: Any) -> Any:
            raise RuntimeError("model down")

        model_in_the_loop.check_pair = broken
        try:
            for card, question, answer in cards_of(assignment.hit.document):
                ms, status = ask(client, url, card, question + " (edited)", answer)
                assert status == "pending", (
                    status
                )  # nothing stored: the page's wait ends in "No model answer"
                down.append(ms)
        finally:
            model_in_the_loop.check_pair = real

    def summary(values: list[float]) -> dict[str, Any]:
        return {"n": len(values), "p50_ms": percentile(values, 50), "p95_ms": percentile(values, 95)}

    return {
        "syllabi": len(names),
        "answered": statuses.get("answered", 0),
        "not_answered": sum(v for k, v in statuses.items() if k != "answered"),
        "cold": summary(cold),
        "warm": summary(warm),
        "all": summary(cold + warm),
        "model_down": summary(down),
        "database": connection.vendor,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--syllabi", type=int, default=8, help="Test-split syllabi (one HIT each).")
    parser.add_argument("--data", type=Path, default=shared_data_dir() / "syllabusqa")
    args = parser.parse_args()
    setup_test_environment()
    app.conf.task_always_eager = True
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        result = run(args.syllabi, args.data)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
    for label in ("cold", "warm", "all", "model_down"):
        group = result[label]
        print(
            f"{label:>10}: {group['n']:>4} cards, p50 {group['p50_ms']:.1f} ms, p95 {group['p95_ms']:.1f} ms"
        )
    print(f"answered {result['answered']}, not answered {result['not_answered']} ({result['database']})")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
