"""console/quick_export.py: a batch's submissions as CSV / JSONL, researchers only, formulas neutralised."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.test import Client

from annotation.models import QAPair
from tests.console.test_review_queue_pages import submissions
from tests.factories import make_researcher

pytestmark = pytest.mark.django_db


def test_quick_export__csv_and_jsonl(client: Client) -> None:
    done = submissions(documents=2, workers=2)
    QAPair.objects.filter(assignment=done[0]).update(answer="=HYPERLINK('http://evil')")
    batch = done[0].hit.batch
    assert client.get(f"/batches/{batch.pk}/submissions.csv").status_code == 404  # anonymous
    client.force_login(make_researcher("r"))
    response = client.get(f"/batches/{batch.pk}/submissions.csv")
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    table = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(table) == 4 and {r["worker"] for r in table} == {a.worker.pseudonym for a in done}
    assert any(r["answer"].startswith("'=HYPERLINK") for r in table)  # neutralised, never run
    assert not any(a.worker.platform_id in json.dumps(table) for a in done)
    lines = b"".join(client.get(f"/batches/{batch.pk}/submissions.jsonl").streaming_content).splitlines()
    assert [json.loads(line)["submission"] for line in lines] == [int(r["submission"]) for r in table]
    assert client.get(f"/batches/{batch.pk}/submissions.xlsx").status_code == 404
    assert client.get("/batches/999999/submissions.csv").status_code == 404
