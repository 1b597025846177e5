"""crowdqa's side of ``benchmarks/load_vs_turkle.py``: real SciQ items, the HITs, workers and claims, and
what was stored.

Why: the load must be the same real work on every system, so the SciQ items that pass QC are chosen once
here and Turkle's side (``load_turkle_setup.py``) gets the same contents.
"""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from pathlib import Path


def page_form(passage_id: int, question: str, answer: str, page_id: str) -> dict[str, str]:
    """A SciQ question HIT's submission as its page posts it from a browser: the task's fields (the
    unused ``reject_reason`` too), the page's active-time report (``crowdqa/hit.js`` adds it on submit:
    the page load's id and its active milliseconds) and the fields' draft revisions (autosave's)."""
    return {
        "passage": str(passage_id),
        "question": question,
        "answer": answer,
        "reject_reason": "",
        "active_page": page_id,
        "active_ms": "41250",
        "draft_revisions": '{"passage": 1796000000000, "question": 1796000030000, "answer": 1796000041000}',
    }


def sciq_items(root: Path, needed: int, at_least: int = 0) -> list[tuple[str, str, str]]:
    """(passage, question, answer) of real SciQ items with 60-100-word passages that pass SciQ QC.

    At most ``needed``; fewer are enough when at least ``at_least`` exist (a round then reuses them in
    several corpora).
    """
    from annotation.hits.sciq_question import QC_OPTIONS
    from annotation.importers.mcq import read_sciq
    from annotation.qc.common import ERROR
    from annotation.qc.sciq import SciQItem, check_item

    items: dict[str, tuple[str, str, str]] = {}
    for record in read_sciq(root):
        passage = " ".join(record.passage.split())
        if passage in items or not 60 <= len(passage.split()) <= 100:
            continue
        qc = check_item(
            SciQItem(id="x", question=record.question, answer=record.answer, passage=passage), QC_OPTIONS
        )
        if any(issue.severity == ERROR for issue in qc.issues):
            continue
        items[passage] = (passage, record.question.strip(), record.answer.strip())
    if len(items) < max(at_least, min(needed, 3)):
        sys.exit(f"only {len(items)} usable SciQ passages, {at_least or needed} needed: lower --users")
    return list(items.values())[:needed]


def setup_crowdqa(rounds: int, users: int, hits: int, items: list[tuple[str, str, str]], out: Path) -> list:
    """crowdqa's HITs, workers and claims for every round; returns the HIT contents per round and user.

    One published local batch per corpus, as many corpora per round as the HITs need (a passage is
    used once per corpus; the corpora ``load-<round>-<chunk>`` reuse the same passages). Each HIT is held
    by its own worker (a local worker holds one HIT per batch), with consent given; the assignment rows
    are the ones a claim creates (``assigning.claim_next``), written in bulk.
    """
    import django

    django.setup()
    from django.utils import timezone

    from annotation.models import Assignment
    from annotation.platforms import Platform
    from annotation.services.batches import BatchSpec, create_batch
    from crowd.models import Consent, Worker, pseudonym_for
    from tests.factories import make_textbook
    from worker import hit_links

    by_text = {p: (q, a) for p, q, a in items}
    contents = []
    per_corpus = len(items) // 3
    for number in range(rounds):
        held: list = []
        assignments: list = []
        chunk = 0
        while len(held) < users * hits:
            corpus = make_textbook(f"load-{number}-{chunk}", (text for text, _, _ in items))
            limit = min(per_corpus, users * hits - len(held))
            batch = create_batch(BatchSpec(kind="sciq_question", corpus=corpus.name, limit=limit))
            batch.publish()
            workers = Worker.objects.bulk_create(
                Worker(
                    platform=Platform.LOCAL,
                    platform_id=f"load-{number}-{chunk}-{i}",
                    pseudonym=pseudonym_for("local", f"load-{number}-{chunk}-{i}"),
                )
                for i in range(limit)
            )
            Consent.objects.bulk_create(Consent(worker=w, batch=batch) for w in workers)
            expires = timezone.now() + timedelta(minutes=batch.time_limit_minutes)
            hits_now = list(batch.hits.order_by("position").prefetch_related("passages"))
            held += hits_now
            assignments += Assignment.objects.bulk_create(
                Assignment(hit=h, worker=w, expires_at=expires)
                for h, w in zip(hits_now, workers, strict=True)
            )
            chunk += 1
        plan_users, round_contents = [], []
        for u in range(users):
            queue, shown = [], []
            mine = slice(u * hits, (u + 1) * hits)
            for hit, assignment in zip(held[mine], assignments[mine], strict=True):
                passages = sorted(hit.passages.all(), key=lambda p: p.pk)
                question, answer = by_text[passages[0].text]
                url = hit_links.url_for(assignment)
                queue.append(
                    {
                        "page": [url],
                        "submit": url,
                        "form": page_form(passages[0].pk, question, answer, f"u{u}-a{assignment.pk}"),
                        "accept_status": [200],
                        "accept_text": "Thank you",
                    }
                )
                shown.append({"passages": [p.text for p in passages], "question": question, "answer": answer})
            plan_users.append(queue)
            round_contents.append(shown)
        (out / f"crowdqa-{number}.json").write_text(json.dumps({"users": plan_users}))
        contents.append(round_contents)
    return contents


def stored_crowdqa() -> dict[str, int]:
    from django.db.models import Count

    from annotation.models import QAPair

    stored: dict[str, int] = {}
    for name, count in QAPair.objects.order_by().values_list("corpus__name").annotate(n=Count("pk")):
        key = f"round-{name.split('-')[1]}"
        stored[key] = stored.get(key, 0) + count
    return stored


def owed_followups(number: int) -> int:
    """Submissions of crowdqa's round ``number`` whose after-submission job has not run yet."""
    from annotation.models import Assignment

    return Assignment.objects.filter(
        hit__batch__corpus__name__startswith=f"load-{number}-",
        submitted_at__isnull=False,
        followed_up_at__isnull=True,
    ).count()
