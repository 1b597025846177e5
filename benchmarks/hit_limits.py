"""Worst-case HIT submissions the limits allow: CPU to check one, and /health/ while two arrive at once.

Part 1 (``--part check``) times the syllabus handler's full server-side check (size limits, contract,
QC with span location and repair, duplicate questions) on the largest real SyllabusQA syllabus with
submissions that fill the request limit (``DATA_UPLOAD_MAX_MEMORY_SIZE``) in the most expensive ways:
near-miss spans just under the repair limit (fuzzy repair on every span), long spans that are not in
the syllabus, and long questions/answers that are nearly the same (duplicate detection). Target: at
most 0.5 s of CPU per submission.

Part 2 (``--part serve``) starts gunicorn (2 workers, loopback) on a throw-away SQLite database with the
demo data, opens a syllabus assignment, warms both workers up (the first submission in a process
imports QC's models), sends two of the largest submissions at once (repeatedly) and polls ``/health/``
meanwhile: the slowest /health/ answer is reported (target: answering throughout).

    .venv/bin/python benchmarks/hit_limits.py --part check
    .venv/bin/python benchmarks/hit_limits.py --part serve --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("CROWDQA_DEMO", "1")

SHARED = Path(os.environ.get("CROWDQA_SHARED_DATA", ROOT.parent / "shared" / "data"))


def largest_syllabus() -> str:
    """The longest real SyllabusQA syllabus text (the worst case for span location)."""
    from annotation.textnorm import decode_mac_roman, decode_utf8

    folder = SHARED / "syllabusqa" / "syllabi" / "syllabi_redacted" / "text"
    paths = sorted(folder.glob("*.txt"), key=lambda p: p.stat().st_size)
    if not paths:
        sys.exit(f"no SyllabusQA syllabi under {folder} (set CROWDQA_SHARED_DATA)")
    raw = paths[-1].read_bytes()
    try:
        return decode_utf8(raw, paths[-1])
    except ValueError:
        return decode_mac_roman(raw, paths[-1])


def _near_miss(text: str, rng: random.Random, length: int) -> str:
    start = rng.randrange(0, max(1, len(text) - length))
    chunk = list(text[start : start + length])
    for _ in range(2):
        i = rng.randrange(len(chunk))
        chunk[i] = "x" if chunk[i] != "x" else "y"
    return "".join(chunk)


def submissions(text: str, budget: int) -> dict[str, dict[str, str]]:
    """Worst-case field sets, each filling about ``budget`` bytes of form data."""
    from annotation import question_types as qt
    from annotation.hits.base import MAX_FIELD_CHARS
    from annotation.hits.syllabus_qa import CARD_TYPES, field_name
    from annotation.spans import MAX_REPAIR_CHARS

    rng = random.Random(7)
    cases: dict[str, dict[str, str]] = {}

    def base() -> dict[str, str]:
        return {field_name(i, "question_type"): t for i, t in enumerate(CARD_TYPES)}

    repair = base()
    for i in range(len(CARD_TYPES)):
        for j in range(qt.MAX_SPANS):
            repair[field_name(i, f"span-{j}")] = _near_miss(text, rng, MAX_REPAIR_CHARS - 1)
    slots = len(CARD_TYPES) * (2 + qt.MAX_STEPS)
    filler = min(MAX_FIELD_CHARS, (budget - sum(len(v) for v in repair.values())) // slots) - 20
    for i in range(len(CARD_TYPES)):
        repair[field_name(i, "question")] = (f"What {i} " + "about the course policy " * filler)[:filler]
        repair[field_name(i, "answer")] = ("The syllabus says " + "it depends on the week " * filler)[:filler]
        for j in range(qt.MAX_STEPS):
            repair[field_name(i, f"step-{j}")] = (f"Step {j} " + "read the grading table " * filler)[:filler]
    cases["near-miss spans + near-duplicate questions"] = repair

    missing = base()
    per_span = min(MAX_FIELD_CHARS, budget // (len(CARD_TYPES) * qt.MAX_SPANS))
    for i in range(len(CARD_TYPES)):
        for j in range(qt.MAX_SPANS):
            missing[field_name(i, f"span-{j}")] = " ".join(
                rng.choice(("alpha", "beta", "gamma", "delta", "omega")) for _ in range(per_span // 6)
            )
    cases["long spans not in the syllabus"] = missing

    copied = base()
    for i in range(len(CARD_TYPES)):
        for j in range(qt.MAX_SPANS):
            start = rng.randrange(0, max(1, len(text) - per_span))
            copied[field_name(i, f"span-{j}")] = text[start : start + per_span]
        copied[field_name(i, "question")] = "Q" * MAX_FIELD_CHARS
    cases["long copied spans + identical long questions"] = copied
    return cases


def part_check(rounds: int) -> dict[str, Any]:
    import django

    django.setup()
    from django.conf import settings

    from annotation.hits import handler_for
    from annotation.models import HIT, Batch, Document

    text = largest_syllabus()
    document = Document(name="largest", text=text, page_starts=[0])
    hit = HIT(document=document)
    handler = handler_for(Batch.Kind.SYLLABUS_QA)
    budget = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    report: dict[str, Any] = {"syllabus_chars": len(text), "request_limit_bytes": budget, "cases": {}}
    handler.checked(hit, None, {})  # type: ignore[arg-type] # warm-up: QC's word lists load once
    for name, fields in submissions(text, budget).items():
        size = len(urllib.parse.urlencode(fields).encode())
        times = []
        for _ in range(rounds):
            started = time.process_time()
            check = handler.checked(hit, None, fields)  # type: ignore[arg-type]
            times.append(time.process_time() - started)
        report["cases"][name] = {
            "form_bytes": size,
            "cpu_s_median": round(statistics.median(times), 3),
            "cpu_s_max": round(max(times), 3),
            "errors": sum(len(v) for v in check.errors.values()),
        }
    report["cpu_s_worst"] = max(c["cpu_s_max"] for c in report["cases"].values())
    report["target_s"] = 0.5
    return report


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


SETUP = """
import json, django
django.setup()
from worker import hit_links
from annotation.models import Batch
from worker.assigning import claim_next
from crowd.models import Consent, Worker
from django.core.management import call_command
call_command("load_demo", verbosity=0)
batch = Batch.objects.filter(kind="syllabus_qa").first()
worker = Worker.objects.get_or_create_for("local", "bench")
assignment = claim_next(batch, worker)
Consent.objects.get_or_create(worker=worker, batch=batch)
print(json.dumps({"url": hit_links.url_for(assignment), "text": assignment.hit.document.text}))
"""


def part_serve(rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="crowdqa-bench-") as var:
        env = {
            **os.environ,
            "CROWDQA_VAR_DIR": var,
            "DATABASE_URL": f"sqlite:///{var}/bench.sqlite3",
            "CROWDQA_DEMO": "1",
            "DJANGO_SETTINGS_MODULE": "config.settings",
        }
        env.pop("REDIS_URL", None)
        py = sys.executable
        subprocess.run([py, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        setup = json.loads(
            subprocess.run([py, "-c", SETUP], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
            .stdout.strip()
            .splitlines()[-1]
        )
        import django

        django.setup()
        from django.conf import settings

        fields = submissions(setup["text"] * 20, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        body = urllib.parse.urlencode(fields["near-miss spans + near-duplicate questions"]).encode()
        port = _free_port()
        server = subprocess.Popen(
            [py, "-m", "gunicorn", "config.wsgi:application", "-b", f"127.0.0.1:{port}", "-w", "2"]
            + ["--timeout", "60"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(100):
                try:
                    urllib.request.urlopen(f"{base}/health/", timeout=2)
                    break
                except OSError:
                    time.sleep(0.2)
            health: list[float] = []
            posts: list[tuple[int, float]] = []
            stop = threading.Event()

            def poll() -> None:
                while not stop.is_set():
                    started = time.perf_counter()
                    try:
                        urllib.request.urlopen(f"{base}/health/", timeout=30).read()
                        health.append(time.perf_counter() - started)
                    except OSError:
                        health.append(float("inf"))
                    time.sleep(0.05)

            def post() -> None:
                started = time.perf_counter()
                request = urllib.request.Request(f"{base}{setup['url']}", data=body, method="POST")
                try:
                    with urllib.request.urlopen(request, timeout=60) as response:
                        posts.append((response.status, time.perf_counter() - started))
                except urllib.error.HTTPError as exc:
                    posts.append((exc.code, time.perf_counter() - started))

            # Warm-up: the first submission in each worker process imports QC's models (seconds, once).
            for _ in range(3):
                pair = [threading.Thread(target=post) for _ in range(2)]
                for t in pair:
                    t.start()
                for t in pair:
                    t.join()
            posts.clear()
            poller = threading.Thread(target=poll)
            poller.start()
            for _ in range(rounds):
                pair = [threading.Thread(target=post) for _ in range(2)]
                for t in pair:
                    t.start()
                for t in pair:
                    t.join()
            stop.set()
            poller.join()
        finally:
            server.terminate()
            server.wait(timeout=30)
    return {
        "rounds": rounds,
        "form_bytes": len(body),
        "post_status": sorted({s for s, _ in posts}),
        "post_wall_s_max": round(max(t for _, t in posts), 3),
        "health_polls": len(health),
        "health_wall_s_median": round(statistics.median(health), 3),
        "health_wall_s_max": round(max(health), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=("check", "serve"), default="check")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    report = part_check(args.rounds) if args.part == "check" else part_serve(args.rounds)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
