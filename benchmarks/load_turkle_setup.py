"""Turkle's side of ``benchmarks/load_vs_turkle.py``: the same HITs as crowdqa's, claimed, and a plan.

Runs inside Turkle's own virtualenv with Turkle's Django (``load_vs_turkle.py`` starts it with the
Turkle checkout as working directory and a settings module that points Turkle at its own PostgreSQL
database). ``setup`` creates a project whose template shows three passages, a choice among them, a
question and an answer (the crowdqa SciQ question HIT's form), one batch per round with one task per
HIT (the same passage texts as crowdqa's HITs), one logged-in user per virtual user (a database session,
as after Turkle's login) holding a task assignment for each of its HITs, as Turkle's "accept" creates
them. It writes one locust plan per round. ``count`` prints the completed assignments per round.

    python load_turkle_setup.py setup hits.json outdir
    python load_turkle_setup.py count
"""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from pathlib import Path

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


def setup(hits_path: Path, out: Path) -> None:
    spec = json.loads(hits_path.read_text())
    admin = get_user_model().objects.create_superuser("load-admin", "", None)
    project = Project.objects.create(
        name="SciQ question", html_template=TEMPLATE, created_by=admin, updated_by=admin
    )
    n_users = len(spec["rounds"][0])
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
    for number, round_users in enumerate(spec["rounds"]):
        batch = Batch.objects.create(
            project=project, name=f"round-{number}", filename=f"round-{number}.csv", created_by=admin
        )
        plan_users = []
        for user, cookie, hits in zip(users, cookies, round_users, strict=True):
            tasks = Task.objects.bulk_create(
                Task(
                    batch=batch, input_csv_fields={f"passage{i + 1}": t for i, t in enumerate(h["passages"])}
                )
                for h in hits
            )
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
                        "form": {
                            "csrfmiddlewaretoken": CSRF_SECRET,
                            "passage": "1",
                            "question": h["question"],
                            "answer": h["answer"],
                        },
                        "headers": {"Cookie": cookie},
                        "accept_status": [302],
                        "accept_text": "",
                    }
                    for t, a, h in zip(tasks, claimed, hits, strict=True)
                ]
            )
        (out / f"turkle-{number}.json").write_text(json.dumps({"users": plan_users}))


def count() -> None:
    done = {
        b.name: TaskAssignment.objects.filter(task__batch=b, completed=True).count()
        for b in Batch.objects.order_by("pk")
    }
    print(json.dumps(done))


if __name__ == "__main__":
    if sys.argv[1] == "setup":
        setup(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        count()
