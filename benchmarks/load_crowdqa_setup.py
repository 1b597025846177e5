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

#: The CSRF cookie and form value of the claiming users (Django accepts an unmasked 32-character secret).
CSRF_SECRET = "loadtestcsrfsecret0123456789abcd"


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
    from crowd.models import Consent, Worker, pseudonym_for
    from worker import hit_links

    by_text = {p: (q, a) for p, q, a in items}
    contents = []
    for number in range(rounds):
        held: list = []
        assignments: list = []
        for chunk, (batch, hits_now) in enumerate(round_batches(number, users * hits, items)):
            limit = len(hits_now)
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
            held += hits_now
            assignments += Assignment.objects.bulk_create(
                Assignment(hit=h, worker=w, expires_at=expires)
                for h, w in zip(hits_now, workers, strict=True)
            )
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


def round_batches(number: int, total: int, items: list[tuple[str, str, str]]) -> list:
    """Round ``number``'s published SciQ question batches, ``total`` HITs in all: (batch, its HITs in
    order, passages prefetched), one batch per corpus ``load-<round>-<chunk>`` of the same passages."""
    import django

    django.setup()
    from annotation.services.batches import BatchSpec, create_batch
    from tests.factories import make_textbook

    made: list = []
    per_corpus = len(items) // 3
    while sum(len(h) for _, h in made) < total:
        corpus = make_textbook(f"load-{number}-{len(made)}", (text for text, _, _ in items))
        limit = min(per_corpus, total - sum(len(h) for _, h in made))
        batch = create_batch(BatchSpec(kind="sciq_question", corpus=corpus.name, limit=limit))
        batch.publish()
        made.append((batch, list(batch.hits.order_by("position").prefetch_related("passages"))))
    return made


def signed_in_workers(count: int) -> list:
    """``count`` local workers, each made by redeeming an invite that opens every local batch."""
    from crowd.invites import create_invites, redeem

    return [redeem(issued.url.rstrip("/").rsplit("/", 1)[-1]) for issued in create_invites(count)]


def session_cookie(worker: object) -> str:
    """The Cookie header of ``worker`` signed in (a database session, as after the invite's "Start"),
    with the CSRF secret."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    user = worker.user  # type: ignore[attr-defined]
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return f"sessionid={session.session_key}; csrftoken={CSRF_SECRET}"


def setup_crowdqa_claims(
    rounds: int, users: int, hits: int, items: list[tuple[str, str, str]], out: Path
) -> list:
    """crowdqa's side of ``load_vs_turkle.py --claims``: the rounds' batches (``users`` x ``hits`` HITs
    each round) with nothing claimed, and ``users`` local workers, each from a redeemed invite that
    opens every local batch, signed in (a database session, as after the invite's "Start") and with
    consent given to every batch. Every user's plan lists the round's batches in the same order, so
    all of them claim from one batch until it has no HIT left. Returns, per round, each batch's HIT
    contents in the order of its HITs (Turkle's batches are made from them).
    """
    import django

    django.setup()
    from django.urls import reverse

    from crowd.models import Consent

    by_text = {p: (q, a) for p, q, a in items}
    workers = signed_in_workers(users)
    cookies = [session_cookie(worker) for worker in workers]
    contents = []
    for number in range(rounds):
        made = round_batches(number, users * hits, items)
        Consent.objects.bulk_create(Consent(worker=w, batch=b) for b, _ in made for w in workers)
        forms, round_contents = {}, []
        for _, hits_now in made:
            shown = []
            for hit in hits_now:
                passages = sorted(hit.passages.all(), key=lambda p: p.pk)
                question, answer = by_text[passages[0].text]
                for passage in passages:
                    forms[str(passage.pk)] = page_form(passage.pk, *by_text[passage.text], "")
                shown.append({"passages": [p.text for p in passages], "question": question, "answer": answer})
            round_contents.append(shown)
        claim_urls = [reverse("worker:next", kwargs={"batch_id": b.pk}) for b, _ in made]
        plan = {
            "claims": {
                "method": "POST",
                "form": {"csrfmiddlewaretoken": CSRF_SECRET},
                "hit": r"^/a/[^/]+/$",
                "done": reverse("worker:home"),
                "page": ["{location}"],
                "submit": "{location}",
                "key": {"from": "page", "pattern": r'name="passage" value="(\d+)"'},
                "accept_status": [200],
                "accept_text": "Thank you",
            },
            "forms": forms,
            "users": [{"batches": claim_urls, "headers": {"Cookie": c}} for c in cookies],
        }
        (out / f"crowdqa-{number}.json").write_text(json.dumps(plan))
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
