"""Turkle's side of ``benchmarks/load_vs_turkle.py``: the same HITs as crowdqa's, claimed, and a plan.

Runs inside Turkle's own virtualenv with Turkle's Django (``load_vs_turkle.py`` starts it with the
Turkle checkout as working directory and a settings module that points Turkle at its own PostgreSQL
database). ``setup`` creates a project whose template shows three passages, a choice among them, a
question and an answer (the crowdqa SciQ question HIT's form), one batch per round with one task per
HIT (the same passage texts as crowdqa's HITs), one logged-in user per virtual user (a database session,
as after Turkle's login) holding a task assignment for each of its HITs, as Turkle's "accept" creates
them. It writes one locust plan per round. ``count`` prints the completed assignments per round.

    python load_turkle_setup.py setup hits.json outdir
    python load_turkle_setup.py setup-claims hits.json outdir
    python load_turkle_setup.py count
"""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import django

django.setup()

from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model  # noqa: E402
from django.contrib.sessions.backends.db import SessionStore  # noqa: E402
from django.utils import timezone  # noqa: E402
from turkle.models import Batch, Project, Task, TaskAssignment  # noqa: E402

TEMPLATE = """
<h2>Write a science exam question about a textbook passage</h2>
<p>Read the three passages. Choose the one you can write a good question about (or none of them), then
write a question of 6 to 30 words and its answer of at most 3 words, taken from the passage.</p>
<fieldset>
  <legend>Passages</legend>
  <label><input type="radio" name="passage" value="1" required> Passage 1</label><p>${passage1}</p>
  <label><input type="radio" name="passage" value="2"> Passage 2</label><p>${passage2}</p>
  <label><input type="radio" name="passage" value="3"> Passage 3</label><p>${passage3}</p>
  <label><input type="radio" name="passage" value="none"> None of these passages</label>
</fieldset>
<p><label for="question">Question</label><br><textarea id="question" name="question" rows="3" cols="80"
   required></textarea></p>
<p><label for="answer">Answer</label><br><input id="answer" name="answer" size="40" required></p>
"""

CSRF_SECRET = "loadtestcsrfsecret0123456789abcd"  # 32 characters: Django accepts an unmasked secret


def signed_in(n_users: int) -> tuple[Any, list[Any], list[str]]:
    """The project's creator, ``n_users`` users and each one's cookie (a database session, as after
    Turkle's login, with "auto-accept next task" on, and the CSRF secret)."""
    admin = get_user_model().objects.create_superuser("load-admin", "", None)
    project = Project.objects.create(
        name="SciQ question", html_template=TEMPLATE, created_by=admin, updated_by=admin
    )
    users = get_user_model().objects.bulk_create(
        get_user_model()(username=f"load-{i}", password="!") for i in range(n_users)
    )
    cookies = []
    for user in users:
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session["auto_accept_status"] = True
        session.create()
        cookies.append(f"sessionid={session.session_key}; csrftoken={CSRF_SECRET}")
    return project, users, cookies


def answers(hit: dict[str, Any]) -> dict[str, str]:
    """The task form as posted: the first passage's real SciQ question and answer."""
    return {
        "csrfmiddlewaretoken": CSRF_SECRET,
        "passage": "1",
        "question": hit["question"],
        "answer": hit["answer"],
    }


def tasks_of(batch: Batch, hits: list[dict[str, Any]]) -> list[Task]:
    return Task.objects.bulk_create(
        Task(batch=batch, input_csv_fields={f"passage{i + 1}": t for i, t in enumerate(h["passages"])})
        for h in hits
    )


def setup(hits_path: Path, out: Path) -> None:
    spec = json.loads(hits_path.read_text())
    project, users, cookies = signed_in(len(spec["rounds"][0]))
    admin = project.created_by
    for number, round_users in enumerate(spec["rounds"]):
        batch = Batch.objects.create(
            project=project, name=f"round-{number}", filename=f"round-{number}.csv", created_by=admin
        )
        plan_users = []
        for user, cookie, hits in zip(users, cookies, round_users, strict=True):
            tasks = tasks_of(batch, hits)
            expires = timezone.now() + timedelta(hours=batch.allotted_assignment_time)
            claimed = TaskAssignment.objects.bulk_create(
                TaskAssignment(task=t, assigned_to=user, answers={}, expires_at=expires) for t in tasks
            )
            plan_users.append(
                [
                    {
                        "page": [
                            f"/task/{t.pk}/assignment/{a.pk}/",
                            f"/task/{t.pk}/assignment/iframe/{a.pk}/",
                        ],
                        "submit": f"/task/{t.pk}/assignment/{a.pk}/",
                        "form": answers(h),
                        "headers": {"Cookie": cookie},
                        "accept_status": [302],
                        "accept_text": "",
                    }
                    for t, a, h in zip(tasks, claimed, hits, strict=True)
                ]
            )
        (out / f"turkle-{number}.json").write_text(json.dumps({"users": plan_users}))


def setup_claims(hits_path: Path, out: Path) -> None:
    """``load_vs_turkle.py --claims``: per round, one Turkle batch per crowdqa batch with the same
    tasks in the same order, nothing assigned; every user claims through "accept next task" and works
    the round's batches in the same order as crowdqa's users."""
    spec = json.loads(hits_path.read_text())
    project, users, cookies = signed_in(spec["users"])
    for number, round_batches in enumerate(spec["rounds"]):
        forms, claim_urls = {}, []
        for position, hits in enumerate(round_batches):
            batch = Batch.objects.create(
                project=project,
                name=f"round-{number}-{position}",
                filename=f"round-{number}-{position}.csv",
                created_by=project.created_by,
            )
            forms |= {str(t.pk): answers(h) for t, h in zip(tasks_of(batch, hits), hits, strict=True)}
            claim_urls.append(f"/batch/{batch.pk}/accept_next_task/")
        plan = {
            "claims": {
                "method": "GET",
                "hit": r"^/task/(?P<task>\d+)/assignment/(?P<assignment>\d+)/$",
                "done": "/",
                "page": [
                    "/task/{task}/assignment/{assignment}/",
                    "/task/{task}/assignment/iframe/{assignment}/",
                ],
                "submit": "/task/{task}/assignment/{assignment}/",
                "key": {"from": "group", "group": "task"},
                "accept_status": [302],
                "accept_text": "",
            },
            "forms": forms,
            "users": [{"batches": claim_urls, "headers": {"Cookie": c}} for c in cookies],
        }
        (out / f"turkle-{number}.json").write_text(json.dumps(plan))


def count() -> None:
    """Completed assignments per round (a round's batches are ``round-<n>`` or ``round-<n>-<k>``)."""
    done: dict[str, int] = {}
    for batch in Batch.objects.order_by("pk"):
        key = "-".join(batch.name.split("-")[:2])
        done[key] = (
            done.get(key, 0) + TaskAssignment.objects.filter(task__batch=batch, completed=True).count()
        )
    print(json.dumps(done))


if __name__ == "__main__":
    if sys.argv[1] == "setup":
        setup(Path(sys.argv[2]), Path(sys.argv[3]))
    elif sys.argv[1] == "setup-claims":
        setup_claims(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        count()
