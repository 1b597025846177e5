"""One bounded locust round against one HIT server: every virtual user works through its claimed HITs.

Run by ``benchmarks/load_vs_turkle.py`` once per system and round (locust patches the standard library
with gevent on import, so it runs in its own process). The plan file says, per virtual user, the HITs it
holds: the request(s) that show the HIT page and the submission's form. Each user opens a HIT page,
submits it, and goes on to its next HIT, with no pause; it stops when its HITs are done, and the round
stops when every user is done or ``--seconds`` have passed. Requests go only to the loopback ``--host``.
Writes every request's wall time (ms) and status to ``--out``.

A plan with ``"claims"`` has its users claim each HIT in the round instead (:class:`ClaimingWorker`):
each user holds a list of "next HIT" URLs, one per batch, and asks the first for a HIT; the redirect's
``Location`` names the HIT (its page and submit URLs are made from it), and a redirect anywhere else
says the batch has no HIT left, so the user goes on to its next batch. The claim is timed apart
(``claim``; ``claim_none`` for the answer that a batch is done).

``--wait`` adds a think time before each HIT, drawn uniformly between 0 and twice that mean, and each
user's first HIT starts after such a pause too. Why drawn: crowd workers do not pause in lockstep, and
with a constant pause the users that started together stay together, so the round becomes bursts of
every user's request at once and the tails measure how fast a burst clears (crowdqa alone at a 1 s
pause, 50 users: submit p95 47-77 ms with a constant pause, 17-23 ms with a drawn one).

    python benchmarks/load_users.py --plan plan.json --host http://127.0.0.1:8001 --out times.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import gevent
from locust import between, constant, events, task
from locust.contrib.fasthttp import FastHttpUser
from locust.env import Environment
from locust.exception import StopUser

QUEUES: list[Any] = []
TIMES: dict[str, list[float]] = {}
FAILURES: dict[str, dict[str, int]] = {}
HEADERS: dict[str, str] = {}
#: a claiming plan's "claims" and "forms" (see :class:`ClaimingWorker`)
CLAIMS: dict[str, Any] = {}
FORMS: dict[str, dict[str, str]] = {}
PAGE_LOADS = itertools.count()


def record(name: str, started: float, status: int, ok: bool) -> None:
    """Keep one measurement (wall ms) or count its failure by status."""
    if ok:
        TIMES.setdefault(name, []).append((time.perf_counter() - started) * 1000)
    else:
        counts = FAILURES.setdefault(name, {})
        counts[str(status)] = counts.get(str(status), 0) + 1


class CrowdWorker(FastHttpUser):
    """What every virtual worker does with a HIT it holds: open its page, submit it (timed)."""

    abstract = True
    wait_time = constant(0)
    #: the mean think time (``--wait``); 0: none
    think = 0.0

    def on_start(self) -> None:
        self.take(QUEUES.pop() if QUEUES else None)
        if self.think:
            gevent.sleep(random.uniform(0, 2 * self.think))

    def take(self, mine: Any) -> None:
        """Keep this user's part of the plan."""
        raise NotImplementedError

    def open_page(self, urls: list[str], headers: dict[str, str]) -> str | None:
        """Request what shows the HIT, timed as one ``page``; its last body, or None on a failure."""
        started = time.perf_counter()
        ok, status, body = True, 0, ""
        for number, url in enumerate(urls, start=1):
            part = time.perf_counter()
            with self.client.get(url, headers=headers, name=f"page{number}", catch_response=True) as response:
                status = response.status_code or 0
                ok = status == 200
                body = response.text or ""
                if not ok:
                    response.failure(f"status {status}")
            if len(urls) > 1:
                record(f"page{number}", part, status, ok)
            if not ok:
                break
        record("page", started, status, ok)
        return body if ok else None

    def submit(
        self,
        url: str,
        form: dict[str, str],
        headers: dict[str, str],
        accept_status: list[int],
        accept_text: str,
    ) -> None:
        """Post the HIT's answers, timed as ``submit``; accepted when the answer is the system's success."""
        started = time.perf_counter()
        with self.client.post(
            url, data=form, headers=headers, name="submit", catch_response=True, allow_redirects=False
        ) as response:
            status = response.status_code or 0
            accepted = status in accept_status and accept_text in (response.text or "")
            if not accepted:
                response.failure(f"status {status}")
            record("submit", started, status, accepted)


class HitWorker(CrowdWorker):
    """A worker holding claimed HITs: page, submit, next HIT."""

    def take(self, mine: Any) -> None:
        self.queue = mine or []

    @task
    def work(self) -> None:
        if not self.queue:
            raise StopUser()
        hit = self.queue.pop(0)
        headers = {**HEADERS, **hit.get("headers", {})}
        if self.open_page(hit["page"], headers) is not None:
            self.submit(hit["submit"], hit["form"], headers, hit["accept_status"], hit["accept_text"])


class ClaimingWorker(CrowdWorker):
    """A worker who claims each HIT through the system's "next HIT": claim, page, submit, next claim.

    The plan's ``claims`` say how: ``method`` and ``form`` of the claim request; ``hit``, a pattern
    the redirect's ``Location`` matches when it names a HIT (its named groups, and ``location``, fill
    the ``page`` and ``submit`` templates); ``done``, the ``Location`` path that says the batch has
    no HIT left for this user (anything else is a failed claim); ``key``, where the HIT's answers are
    found in ``forms``: a group of ``hit`` (``"group"``) or the first group of ``pattern`` in the page
    (``"page"``).
    """

    def take(self, mine: Any) -> None:
        mine = mine or {"batches": []}
        self.batches = list(mine["batches"])
        self.headers = {**HEADERS, **mine.get("headers", {})}

    @task
    def work(self) -> None:
        if not self.batches:
            raise StopUser()
        claims = CLAIMS
        started = time.perf_counter()
        with self.client.request(
            claims["method"],
            self.batches[0],
            data=claims.get("form"),
            headers=self.headers,
            name="claim",
            catch_response=True,
            allow_redirects=False,
        ) as response:
            status = response.status_code or 0
            location = urlsplit(response.headers.get("Location") or "")
            found = re.search(claims["hit"], location.path) if status == 302 else None
            done = found is None and status == 302 and re.fullmatch(claims["done"], location.path)
            if found is None and not done:
                response.failure(f"status {status} to {location.path!r}")
        if done:
            record("claim_none", started, status, True)
            self.batches.pop(0)
            return
        record("claim", started, status, found is not None)
        if found is None:
            raise StopUser()  # a refused claim would repeat at once: the failure is counted, the user stops
        names = {**found.groupdict(), "location": location.path}
        body = self.open_page([t.format(**names) for t in claims["page"]], self.headers)
        if body is None:
            return
        key = claims["key"]
        if key["from"] == "group":
            value = names[key["group"]]
        else:
            shown = re.search(key["pattern"], body)
            value = shown.group(1) if shown else ""
        form = dict(FORMS.get(value, {}))
        if "active_page" in form:
            form["active_page"] = f"load-{next(PAGE_LOADS)}"
        self.submit(
            claims["submit"].format(**names),
            form,
            self.headers,
            claims["accept_status"],
            claims["accept_text"],
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--plan", type=Path, required=True)
    parser.add_argument("--host", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=90.0)
    parser.add_argument("--wait", type=float, default=0.0, help="mean think time before each HIT, seconds")
    args = parser.parse_args()
    if urlsplit(args.host).hostname not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("load_users.py sends traffic to the loopback interface only")
    plan = json.loads(args.plan.read_text())
    QUEUES.extend(plan["users"])
    random.Random(0).shuffle(QUEUES)
    HEADERS.update(plan.get("headers", {}))
    CLAIMS.update(plan.get("claims", {}))
    FORMS.update(plan.get("forms", {}))
    users = len(QUEUES)
    user_class = ClaimingWorker if CLAIMS else HitWorker
    user_class.host = args.host
    user_class.think = args.wait
    user_class.wait_time = between(0, 2 * args.wait) if args.wait else constant(0)
    environment = Environment(user_classes=[user_class], events=events)
    runner = environment.create_local_runner()
    started = time.perf_counter()
    runner.start(users, spawn_rate=users)
    deadline = started + args.seconds
    gevent.sleep(1.0)
    while runner.user_count > 0 and time.perf_counter() < deadline:
        gevent.sleep(0.2)
    timed_out = runner.user_count > 0
    runner.quit()
    elapsed = time.perf_counter() - started
    args.out.write_text(
        json.dumps(
            {"users": users, "seconds": elapsed, "timed_out": timed_out, "times": TIMES, "failures": FAILURES}
        )
    )


if __name__ == "__main__":
    main()
