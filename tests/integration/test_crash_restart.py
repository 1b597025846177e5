"""Kill -9 the web server and a Celery worker in the middle of an MTurk batch; restart; sync; count.

Real processes: gunicorn serving crowdqa on a free port, a ``celery worker`` on the embedded
(filesystem) broker, both on the test database, and the fake MTurk server in this process. Workers
submit through HTTP as browsers do. In flight when the web server dies: one worker's answer POST (it is
retried after the restart, as a worker presses Submit again), and one worker whose submission reached
MTurk only (the worker's form on MTurk was sent while crowdqa was down: the sync restores it from
MTurk's answers). A crash between MTurk's approval and the local one is repaired by the sync, which
runs as a Celery task on the restarted worker. Every submission must exist exactly once, with exactly one
reward payment per approved assignment.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import pytest
import requests

from annotation.models import Assignment, Batch
from annotation.services.batches import BatchSpec
from config.broker import file_broker_options
from config.celery import app as celery_app
from crowd.models import Payment
from crowd.services.launching import launch
from crowd.services.lifecycle import provider_for
from crowd.services.publishing import published_of
from crowd.services.review import approve_assignment
from crowd.tasks import sync_batches
from tests.crowd import conftest as _crowd
from tests.crowd.conftest import answers_for
from tests.fakes import fixtures as _fakes
from tests.integration.conftest import REPO, _free_port, database_url

aws_credentials = _fakes.aws_credentials
fake_mturk_server = _fakes.fake_mturk_server
sciq_corpus = _crowd.sciq_corpus

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


class WebServer:
    """A gunicorn process serving crowdqa on the test database."""

    def __init__(self, port: int, env: dict[str, str], log: Path) -> None:
        self.port, self.env, self.log = port, env, log
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "config.wsgi:application",
                "-b",
                f"127.0.0.1:{self.port}",
                "-w",
                "1",
                "--timeout",
                "60",
            ],
            cwd=REPO,
            env=self.env,
            stdout=self.log.open("a"),
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: kill -9 takes the master and its worker
        )
        for _ in range(200):
            try:
                requests.get(f"{self.url}/hit/0/", timeout=5)
                return
            except requests.RequestException:
                time.sleep(0.1)
        raise AssertionError(f"gunicorn did not start; see {self.log}")

    def kill(self) -> None:
        """kill -9 the master and its worker (no graceful shutdown, as in a crash)."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)


def _arrive(server: WebServer, mturk, hit_id: str, worker_id: str) -> tuple[str, str]:  # noqa: ANN001
    """Accept on MTurk, open crowdqa's page and consent; return (assignment id, page URL)."""
    assignment_id = mturk.fake.accept(hit_id, worker_id)
    arrival = requests.get(
        mturk.fake.worker_url(hit_id, assignment_id, worker_id), allow_redirects=False, timeout=10
    )
    assert arrival.status_code == 302, arrival.text[:300]
    page = urllib.parse.urljoin(server.url, arrival.headers["Location"])
    requests.post(page + "consent/", {"consent": "yes"}, allow_redirects=False, timeout=10)
    return assignment_id, page


def _submit(page: str, fields: dict[str, str]) -> None:
    """POST the answers, then the page's auto-post to externalSubmit."""
    done = requests.post(page, fields, timeout=10)
    assert done.status_code == 200, done.text[:300]
    action = re.search(r'action="([^"]+)"', done.text).group(1)
    form = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', done.text))
    assert requests.post(action, form, timeout=10).status_code == 200


def test_crash_restart__every_submission_once_and_one_reward_each(
    sciq_corpus,
    fake_mturk_server,
    celery_worker_process,
    tmp_path: Path,
    settings,
    request,  # noqa: ANN001
) -> None:
    port = _free_port()
    settings.PUBLIC_BASE_URL = f"http://127.0.0.1:{port}"
    batch, _ = launch(
        BatchSpec(
            kind="sciq_question", corpus="sci", provider="mturk", limit=3, assignments=2, reward_cents=40
        )
    )
    hits = list(batch.hits.order_by("position"))
    var_dir = tmp_path / "var"
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CELERY_TASK_ALWAYS_EAGER")}
    env.update(
        DATABASE_URL=database_url(), CROWDQA_VAR_DIR=str(var_dir), PUBLIC_BASE_URL=settings.PUBLIC_BASE_URL
    )
    options = file_broker_options(var_dir / "broker")
    web = WebServer(port, env, tmp_path / "web.log")
    request.addfinalizer(web.kill)
    web.start()
    worker = celery_worker_process("default", "crash-worker", None, var_dir=var_dir)

    _, page1 = _arrive(web, fake_mturk_server, hits[0].platform_ref, "W1")
    _submit(page1, answers_for(hits[0]))
    _, page2 = _arrive(web, fake_mturk_server, hits[1].platform_ref, "W2")
    a3, _ = _arrive(web, fake_mturk_server, hits[2].platform_ref, "W3")
    a4, _ = _arrive(web, fake_mturk_server, hits[1].platform_ref, "W4")

    web.kill()  # W2's answers are in flight: the POST fails
    worker.send_signal(signal.SIGKILL)  # the worker dies with the QC follow-ups of W1 possibly unacked
    worker.wait(timeout=10)
    with pytest.raises(requests.ConnectionError):
        requests.post(page2, answers_for(hits[1]), timeout=5)
    # W3 submits on MTurk while crowdqa is down (MTurk keeps the form's fields as its answers).
    other = hits[2].passages.order_by("pk")[1]
    fake_mturk_server.fake.external_submit(
        {
            "assignmentId": [a3],
            "passage": [str(other.pk)],
            "question": [f"Which things {other.text.split(' ', 1)[1].split('.')[0]}?"],
            "answer": [other.text.split(" ", 1)[0].lower()],
        }
    )

    web.start()
    worker = celery_worker_process("default", "crash-worker-2", None, var_dir=var_dir)
    _submit(page2, answers_for(hits[1]))  # W2 presses Submit again

    # Crash between MTurk's approval and the local one.
    first = Assignment.objects.get(hit__batch=batch, worker__platform_id="W1")
    provider_for(batch).approve(published_of(batch), first.platform_ref)
    with celery_app.connection_for_write("filesystem://", transport_options=options) as conn:
        result = sync_batches.apply_async(args=[batch.pk], connection=conn)
    synced = result.get(timeout=120)["batches"][0]
    # W3 (accepted locally, submitted on MTurk) and W1 (approved on MTurk only) follow the platform.
    assert synced["changed"] == 2 and synced["restored"] == 0
    third = Assignment.objects.get(platform_ref=a3)
    assert third.status == "submitted" and third.platform_meta["restored"] is True
    assert third.answers["passage"] == str(other.pk) and third.qa_pairs.count() == 1
    assert Assignment.objects.get(pk=first.pk).status == "approved"

    for a in Assignment.objects.filter(hit__batch=batch, status="submitted"):
        approve_assignment(a)
    on_mturk = [a for a in fake_mturk_server.fake.assignments.values() if a["_state"] != "Accepted"]
    assert len(on_mturk) == 3
    for platform in on_mturk:
        assert Assignment.objects.filter(platform_ref=platform["AssignmentId"]).count() == 1
    approved = Assignment.objects.filter(hit__batch=batch, status="approved")
    assert approved.count() == 3
    for a in approved:
        assert Payment.objects.filter(assignment=a, kind="reward").count() == 1
    assert Payment.objects.filter(batch=batch, kind="reward").count() == 3
    assert Assignment.objects.get(platform_ref=a4).status == "accepted"  # W4 never submitted anywhere
    batch.refresh_from_db()
    assert batch.status == Batch.Status.PUBLISHED
    web.kill()
