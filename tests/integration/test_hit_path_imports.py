"""A web worker's real HIT page and submit, after the master's warm-up, import nothing only other paths use.

tests/unit/test_web_imports.py checks what importing the views and the submit's modules loads; a library
imported inside a function the page or the submit calls would pass there and still cost every web
worker its megabytes (benchmarks/RESULTS.md, "Web worker memory"). So a fresh interpreter with a web
worker's settings loads the application as gunicorn does, runs ``config.warmup.warm()`` as the
preloading master does, serves one SciQ HIT page and its submission through the WSGI handler, and
reports what those requests imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from annotation.services.batches import BatchSpec, create_batch
from crowd.models import Consent
from tests.factories import make_textbook, make_worker
from tests.integration.conftest import database_url
from tests.unit.test_web_imports import NOT_ON_HIT_PATH
from worker import hit_links
from worker.assigning import claim_next

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(settings.BASE_DIR)
PASSAGES = (
    "Mitochondria release energy from glucose during cellular respiration in most cells.",
    "Chloroplasts capture light energy and store it in the chemical bonds of glucose.",
    "Ribosomes build proteins by linking amino acids in the order given by messenger RNA.",
)

PROBE = """
import json, sys
import config.wsgi
from config.warmup import warm
from django.test import Client
warm()
before = set(sys.modules)
url, form, names = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
client = Client(HTTP_HOST="localhost")
page = client.get(url)
submit = client.post(url, form)
print(json.dumps({
    "page": [page.status_code, b'name="question"' in page.content],
    "submit": [submit.status_code, b"Thank you" in submit.content],
    "loaded": sorted(n for n in names if n in sys.modules),
    "new": sorted(set(sys.modules) - before),
}))
"""


def test_hit_page_and_submit_after_warm_up_import_no_library_of_other_paths(tmp_path: Path) -> None:
    make_textbook("tb", PASSAGES)
    batch = create_batch(BatchSpec(kind="sciq_question", corpus="tb"))
    batch.publish()
    assignment = claim_next(batch, make_worker("hit-path"))
    Consent.objects.create(worker=assignment.worker, batch=batch)
    passage = assignment.hit.passages.order_by("pk").first()
    form = {
        "passage": str(passage.pk),
        "question": "Which organelle releases energy from glucose during cellular respiration?",
        "answer": "mitochondria",
    }
    drop = ("REDIS_URL", "CELERY_TASK_ALWAYS_EAGER", "CROWDQA_TEST_VAR_DIR")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",  # a web worker's, not the test suite's
        PYTHONPATH=str(REPO),
        DATABASE_URL=database_url(),
        CROWDQA_VAR_DIR=str(tmp_path / "var"),  # its file broker receives the follow-up
        DJANGO_SECRET_KEY=settings.SECRET_KEY,  # the signed link's key
        CROWDQA_PSEUDONYM_SALT=settings.CROWDQA_PSEUDONYM_SALT,
        CROWDQA_WEB_SERVER="1",  # as gunicorn.conf.py sets it: the submit publishes with no result store
    )
    # Without REDIS_URL (the demo's file broker and local cache) nothing on the path needs redis-py.
    names = json.dumps(NOT_ON_HIT_PATH + ("pydantic", "redis", "django_celery_results.models"))
    result = subprocess.run(
        [sys.executable, "-c", PROBE, hit_links.url_for(assignment), json.dumps(form), names],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["page"] == [200, True] and report["submit"] == [200, True], report
    assert report["loaded"] == [], f"the HIT page or submit imported {report['loaded']}"
    assignment.refresh_from_db()
    assert assignment.status == assignment.Status.SUBMITTED  # the probe's submission was stored
