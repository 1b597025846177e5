"""Launches, kills and syncs at scale against the fake MTurk and Prolific servers with injected faults.

Each scenario prints counts: HITs planned, on the platform, duplicates (a unit with more than one live HIT),
orphans (HITs or studies of the batch that crowdqa does not reference), and for syncs the submissions
collected exactly once. Targets (issue 27): every count converges in every run.

Scenarios (``--scenario``, default all):

- ``launch``: a ``--hits`` launch on MTurk and on Prolific with 10% throttling, 2% 5xx and 1% lost replies.
- ``kill``: ``manage.py launch_batch`` killed (SIGKILL) at a random point of its publish, then the
  documented resume (the same command again; ``--resume sync`` runs ``sync_batches`` instead).
- ``sync``: ``--submissions`` submitted on the platform and unknown here (MTurk) or accepted here and
  completed there (Prolific), collected by one ``sync_batches`` run under 15% faults.
- ``resume``: the same syncs stopped half way by an outage of the listing call that outlasts the retries
  (on top of the 15% faults); the next run goes on from the stored cursor. Prints the listing calls of
  each run and the submissions collected exactly once. Then (Prolific) the platform approves 90% of the
  submissions and two more syncs run: the first reads the whole list, the next only its unsettled end.

Works on a throw-away SQLite file (the kill scenario's child process shares it). Example::

    .venv/bin/python benchmarks/platform_faults.py --hits 1000 --submissions 1000 --seed 1
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
_DB = Path(tempfile.mkdtemp(prefix="crowdqa-faults-")) / "bench.sqlite3"
os.environ["DATABASE_URL"] = f"sqlite:///{_DB}"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DJANGO_SECRET_KEY", "benchmark-secret-key-0123456789abcdefghijklmnopqrstuvwxyz")
for _name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
    os.environ[_name] = "benchmark"
os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
os.environ["PUBLIC_BASE_URL"] = "http://testserver"

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402

from annotation.models import Assignment, Batch, Corpus, Passage  # noqa: E402
from annotation.services.batches import BatchSpec  # noqa: E402
from crowd import tasks  # noqa: E402
from crowd.models import BatchPlatformState, Worker  # noqa: E402
from crowd.providers import retries  # noqa: E402
from crowd.providers.factory import config_from  # noqa: E402
from crowd.services.launching import launch  # noqa: E402
from crowd.services.lifecycle import LifecycleError  # noqa: E402
from crowd.services.sync import TransientSyncError, sync_batch  # noqa: E402
from tests.fakes.fake_mturk_server import FakeMTurkServer  # noqa: E402
from tests.fakes.fake_prolific_server import FakeProlific, FakeProlificServer  # noqa: E402
from tests.fakes.faults import Faults  # noqa: E402

LAUNCH_FAULTS = {"throttle": 0.10, "server_error": 0.02, "lost_reply": 0.01}
SYNC_FAULTS = {"throttle": 0.07, "server_error": 0.04, "reset": 0.02, "timeout": 0.01, "lost_reply": 0.01}


def corpus(hits: int) -> str:
    """A textbook corpus with three accepted passages per SciQ stage-1 HIT."""
    name = f"bench-{Corpus.objects.count()}"
    made = Corpus.objects.create(name=name, kind=Corpus.Kind.TEXTBOOK)
    Passage.objects.bulk_create(
        Passage(
            corpus=made,
            position=i,
            text=f"Passage {i} of {name}: scientists study topic {i} in many countries.",
            text_sha256=f"{name}-{i}",
            filter_status=Passage.FilterStatus.ACCEPTED,
        )
        for i in range(hits * 3)
    )
    return name


def point_mturk(url: str) -> None:
    """Send boto3 (here and in child processes) to the fake MTurk at ``url``."""
    settings.AWS_ENDPOINT_URL_MTURK = url
    os.environ["AWS_ENDPOINT_URL_MTURK"] = url


def mturk_counts(batch: Batch, fake: Any) -> dict[str, int]:
    """Planned HITs, HITs of the batch on MTurk, duplicates and orphans (by RequesterAnnotation)."""
    prefix = f"crowdqa:{batch.pk}:"
    live = [h for h in fake.hits.values() if str(h.get("RequesterAnnotation", "")).startswith(prefix)]
    per_unit = Counter(h["RequesterAnnotation"] for h in live)
    known = set(batch.hits.exclude(platform_ref="").values_list("platform_ref", flat=True))
    return {
        "planned": batch.hits.count(),
        "on_platform": len(live),
        "duplicates": sum(n - 1 for n in per_unit.values()),
        "orphans": sum(1 for h in live if h["HITId"] not in known),
        "batches": Batch.objects.filter(corpus=batch.corpus).count(),
    }


def prolific_counts(batch: Batch, fake: FakeProlific) -> dict[str, int]:
    """Planned places, places of the batch's study, duplicate studies and orphans (by internal name)."""
    studies = [s for s in fake.studies.values() if s.get("internal_name") == f"crowdqa:{batch.pk}"]
    places = sum(int(s["total_available_places"]) for s in studies if s["id"] == batch.platform_ref)
    return {
        "planned": batch.hits.count() * batch.assignments_per_hit,
        "on_platform": places,
        "duplicates": max(0, len(studies) - 1),
        "orphans": sum(1 for s in studies if s["id"] != batch.platform_ref),
        "batches": Batch.objects.filter(corpus=batch.corpus).count(),
    }


def show(label: str, counts: dict[str, Any], seconds: float, faults: Faults, retried: dict[str, int]) -> None:
    """One line per scenario."""
    shown = " ".join(f"{k}={v}" for k, v in counts.items())
    print(
        f"{label:<34} {shown}  faults={faults.total()} {faults.summary()} "
        f"retried={sum(retried.values())} {seconds:.1f}s",
        flush=True,
    )


def launch_mturk(hits: int, seed: int) -> None:
    faults = Faults(seed=seed).set("*", **LAUNCH_FAULTS)
    with FakeMTurkServer(faults=faults) as server:
        point_mturk(server.url)
        spec = BatchSpec(
            kind="sciq_question", corpus=corpus(hits), provider="mturk", limit=hits, reward_cents=10
        )
        before, start = retries.mark(), time.perf_counter()
        try:
            batch, _ = launch(spec)
        except LifecycleError as exc:  # the documented resume: the same launch again
            print(f"  first run stopped: {str(exc)[:160]}...; re-running the same launch")
            batch, _ = launch(spec)
        show(
            "mturk launch",
            mturk_counts(batch, server.fake),
            time.perf_counter() - start,
            faults,
            retries.since(before),
        )


def launch_prolific(hits: int, seed: int) -> None:
    faults = Faults(seed=seed).set("*", **LAUNCH_FAULTS)
    with FakeProlificServer(faults=faults) as server:
        settings.PROLIFIC_API_URL, settings.PROLIFIC_API_TOKEN = server.api_url, server.token
        spec = BatchSpec(
            kind="sciq_question", corpus=corpus(hits), provider="prolific", limit=hits, reward_cents=10
        )
        before, start = retries.mark(), time.perf_counter()
        batch, _ = launch(spec)
        show(
            "prolific launch",
            prolific_counts(batch, server.fake),
            time.perf_counter() - start,
            faults,
            retries.since(before),
        )


def _run_killed(args: list[str], env: dict[str, str], when: Any) -> None:
    """Run ``manage.py`` and SIGKILL it once ``when()`` is true (polled every 10 ms)."""
    process = subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    while process.poll() is None:
        if when():
            process.kill()
            break
        time.sleep(0.01)
    process.wait(timeout=60)


def kill_mturk(hits: int, seed: int, resume: str) -> None:
    rng = random.Random(seed)
    faults = Faults(seed=seed).set("*", **LAUNCH_FAULTS)
    with FakeMTurkServer(faults=faults) as server:
        point_mturk(server.url)
        name = corpus(hits)
        args = [
            "launch_batch",
            "--kind",
            "sciq_question",
            "--corpus",
            name,
            "--provider",
            "mturk",
            "--limit",
            str(hits),
            "--reward",
            "0.10",
        ]
        env = dict(os.environ, AWS_ENDPOINT_URL_MTURK=server.url)
        kill_at = rng.randrange(1, hits)
        start = time.perf_counter()
        _run_killed(args, env, lambda: len(server.fake.hits) >= kill_at)
        killed_with = len(server.fake.hits)
        before = retries.mark()
        if resume == "sync":
            tasks.sync_batches()
        else:
            call_command(*args, stdout=open(os.devnull, "w"), stderr=open(os.devnull, "w"))
        batch = Batch.objects.get(corpus__name=name)
        show(
            f"mturk kill at {killed_with} + {resume}",
            mturk_counts(batch, server.fake),
            time.perf_counter() - start,
            faults,
            retries.since(before),
        )


def kill_prolific(hits: int, seed: int, resume: str) -> None:
    faults = Faults(seed=seed).set("*", **LAUNCH_FAULTS)
    with FakeProlificServer(faults=faults) as server:
        settings.PROLIFIC_API_URL, settings.PROLIFIC_API_TOKEN = server.api_url, server.token
        name = corpus(hits)
        args = [
            "launch_batch",
            "--kind",
            "sciq_question",
            "--corpus",
            name,
            "--provider",
            "prolific",
            "--limit",
            str(hits),
            "--reward",
            "0.10",
        ]
        env = dict(os.environ, PROLIFIC_API_URL=server.api_url, PROLIFIC_API_TOKEN=server.token)
        start = time.perf_counter()
        _run_killed(args, env, lambda: bool(server.fake.studies))  # right after the study exists
        before = retries.mark()
        if resume == "sync":
            tasks.sync_batches()
        else:
            call_command(*args, stdout=open(os.devnull, "w"), stderr=open(os.devnull, "w"))
        batch = Batch.objects.get(corpus__name=name)
        show(
            f"prolific kill + {resume}",
            prolific_counts(batch, server.fake),
            time.perf_counter() - start,
            faults,
            retries.since(before),
        )


def sync_mturk(count: int, seed: int) -> None:
    faults = Faults(seed=seed)
    with FakeMTurkServer(faults=faults) as server:
        point_mturk(server.url)
        batch, _ = launch(
            BatchSpec(
                kind="sciq_question", corpus=corpus(count), provider="mturk", limit=count, reward_cents=10
            )
        )
        fake = server.fake
        for i, hit in enumerate(batch.hits.all()):
            assignment = fake.accept(hit.platform_ref, f"W{i}")
            fake.external_submit({"assignmentId": [assignment], "question": ["Which?"], "answer": ["this"]})
        faults.set("*", **SYNC_FAULTS)
        before, start = retries.mark(), time.perf_counter()
        result = tasks.sync_batches(batch.pk)
        collected = Assignment.objects.filter(hit__batch=batch).exclude(platform_ref="")
        refs = Counter(collected.values_list("platform_ref", flat=True))
        show(
            "mturk sync",
            {
                "submissions": count,
                "collected_once": sum(1 for n in refs.values() if n == 1),
                "duplicates": sum(n - 1 for n in refs.values()),
                "failed": len(result["failed"]),
            },
            time.perf_counter() - start,
            faults,
            retries.since(before),
        )


def sync_prolific(count: int, seed: int) -> None:
    faults = Faults(seed=seed)
    with FakeProlificServer(FakeProlific(page_size=100, faults=faults)) as server:
        settings.PROLIFIC_API_URL, settings.PROLIFIC_API_TOKEN = server.api_url, server.token
        batch, _ = launch(
            BatchSpec(
                kind="sciq_question", corpus=corpus(count), provider="prolific", limit=count, reward_cents=10
            )
        )
        fake, hits = server.fake, list(batch.hits.all())
        for i, hit in enumerate(hits):
            sub = fake.start(batch.platform_ref, f"P{i}")
            Assignment.objects.create(
                hit=hit, worker=Worker.objects.get_or_create_for("prolific", f"P{i}"), platform_ref=sub
            )
            fake.complete(sub, BatchPlatformState.of(batch.pk).completion_code)
        faults.set("*", **SYNC_FAULTS)
        before, start = retries.mark(), time.perf_counter()
        result = tasks.sync_batches(batch.pk)
        submitted = Assignment.objects.filter(hit__batch=batch, status=Assignment.Status.SUBMITTED)
        refs = Counter(submitted.values_list("platform_ref", flat=True))
        show(
            "prolific sync",
            {
                "submissions": count,
                "collected_once": sum(1 for n in refs.values() if n == 1),
                "duplicates": sum(n - 1 for n in refs.values()),
                "failed": len(result["failed"]),
            },
            time.perf_counter() - start,
            faults,
            retries.since(before),
        )


def _list_calls(faults: Faults, operation: str) -> int:
    return faults.calls[operation]


def resume_mturk(count: int, seed: int) -> None:
    faults = Faults(seed=seed)
    with FakeMTurkServer(faults=faults) as server:
        point_mturk(server.url)
        batch, _ = launch(
            BatchSpec(
                kind="sciq_question", corpus=corpus(count), provider="mturk", limit=count, reward_cents=10
            )
        )
        for i, hit in enumerate(batch.hits.all()):
            assignment = server.fake.accept(hit.platform_ref, f"W{i}")
            server.fake.external_submit(
                {"assignmentId": [assignment], "question": ["Which?"], "answer": ["this"]}
            )
        faults.set("*", **SYNC_FAULTS)
        op = "ListAssignmentsForHIT"
        attempts = config_from(settings)["MTURK_MAX_ATTEMPTS"]
        faults.script(op, ["server_error"] * attempts, after=count // 2)  # an outage
        start, before = time.perf_counter(), _list_calls(faults, op)
        try:
            sync_batch(batch)
            stopped = "no"
        except TransientSyncError as exc:
            stopped = str(exc).split(";")[0].split("stopped ")[-1]
        first = _list_calls(faults, op) - before
        collected_first = Assignment.objects.filter(hit__batch=batch).count()
        before = _list_calls(faults, op)
        counts = sync_batch(batch)
        second = _list_calls(faults, op) - before
        refs = Counter(Assignment.objects.filter(hit__batch=batch).values_list("platform_ref", flat=True))
        print(
            f"mturk sync resumed: {count} submissions; run 1 stopped {stopped}, {first} list calls, "
            f"{collected_first} collected; run 2 resumed={counts['resumed']}, {second} list calls; "
            f"collected once {sum(1 for n in refs.values() if n == 1)}, "
            f"duplicates {sum(n - 1 for n in refs.values())}; "
            f"faults {faults.summary()}; {time.perf_counter() - start:.0f} s"
        )


def resume_prolific(count: int, seed: int) -> None:
    faults = Faults(seed=seed)
    with FakeProlificServer(FakeProlific(page_size=100, faults=faults)) as server:
        settings.PROLIFIC_API_URL, settings.PROLIFIC_API_TOKEN = server.api_url, server.token
        batch, _ = launch(
            BatchSpec(
                kind="sciq_question", corpus=corpus(count), provider="prolific", limit=count, reward_cents=10
            )
        )
        fake = server.fake
        for i, hit in enumerate(batch.hits.all()):
            sub = fake.start(batch.platform_ref, f"P{i}")
            Assignment.objects.create(
                hit=hit, worker=Worker.objects.get_or_create_for("prolific", f"P{i}"), platform_ref=sub
            )
            fake.complete(sub, BatchPlatformState.of(batch.pk).completion_code)
        faults.set("*", **SYNC_FAULTS)
        op = "query_submissions"
        pages = -(-count // 100)
        attempts = config_from(settings)["PROLIFIC_RETRIES"] + 1
        faults.script(op, ["server_error"] * attempts, after=pages // 2)
        start, before = time.perf_counter(), _list_calls(faults, op)
        try:
            sync_batch(batch)
            stopped = "no"
        except TransientSyncError as exc:
            stopped = str(exc).split(";")[0].split("stopped ")[-1]
        first = _list_calls(faults, op) - before
        submitted = Assignment.objects.filter(hit__batch=batch, status=Assignment.Status.SUBMITTED)
        collected_first = submitted.count()
        before = _list_calls(faults, op)
        counts = sync_batch(batch)
        second = _list_calls(faults, op) - before
        refs = Counter(submitted.values_list("platform_ref", flat=True))
        print(
            f"prolific sync resumed: {count} submissions; run 1 stopped {stopped}, {first} page calls, "
            f"{collected_first} collected; run 2 resumed={counts['resumed']}, {second} page calls; "
            f"collected once {sum(1 for n in refs.values() if n == 1)}, "
            f"duplicates {sum(n - 1 for n in refs.values())}; "
            f"{time.perf_counter() - start:.0f} s"
        )
        faults.clear()
        for sub in list(fake.submissions.values())[: count * 9 // 10]:
            sub["status"] = "APPROVED"  # decided on Prolific (auto-approval)
        for label in ("after 90% approved", "next sync"):
            before, start = _list_calls(faults, op), time.perf_counter()
            counts = sync_batch(batch)
            print(
                f"prolific sync {label}: incremental={counts['incremental']}, "
                f"{_list_calls(faults, op) - before} of {pages} pages read, changed {counts['changed']}, "
                f"unchanged {counts['unchanged']}, {time.perf_counter() - start:.1f} s"
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hits", type=int, default=1000)
    parser.add_argument("--submissions", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scenario", choices=("launch", "kill", "sync", "resume", "all"), default="all")
    parser.add_argument(
        "--resume",
        choices=("launch", "sync"),
        default="launch",
        help="how the killed launch is resumed: the same command again, or sync_batches",
    )
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # sync and publish log every adopted HIT and restored submission
    call_command("migrate", verbosity=0)
    print(f"database {_DB}; seed {args.seed}; launch faults {LAUNCH_FAULTS}; sync faults {SYNC_FAULTS}")
    if args.scenario in ("launch", "all"):
        launch_mturk(args.hits, args.seed)
        launch_prolific(args.hits, args.seed)
    if args.scenario in ("kill", "all"):
        kill_mturk(args.hits, args.seed, args.resume)
        kill_prolific(args.hits, args.seed, args.resume)
    if args.scenario in ("sync", "all"):
        sync_mturk(args.submissions, args.seed)
        sync_prolific(args.submissions, args.seed)
    if args.scenario in ("resume", "all"):
        resume_mturk(args.submissions, args.seed)
        resume_prolific(args.submissions, args.seed)


if __name__ == "__main__":
    main()
