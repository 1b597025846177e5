"""A trained ranker feeds the SciQ stage-2 HIT: its six suggestions, with score, rank and model version,
are what the validator sees, and what they pick is stored per validation (as a release needs them)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from annotation.models import Distractor, Validation
from crowd.services import validation_hits
from tests.annotation.test_sciq_hits import (
    _approve_into_stage2,
    _open,
    _stage1,
    _write_question,
    load_passages,
)
from tests.factories import make_worker

pytestmark = pytest.mark.django_db


@pytest.fixture
def ranker_installed(trained: tuple[Path, dict, list[str]], tmp_path: Path, settings: Any) -> Iterator[dict]:
    """Put the session's trained ranker where the platform looks (CROWDQA_MODEL_DIR/distractors); yields
    its sidecar metadata."""
    (tmp_path / "distractors").symlink_to(trained[0], target_is_directory=True)
    settings.CROWDQA_MODEL_DIR = str(tmp_path)
    validation_hits._suggester.cache_clear()
    yield json.loads((trained[0] / "ranker.json").read_text())
    validation_hits._suggester.cache_clear()


def test_stage2__shows_the_trained_rankers_suggestions_and_stores_the_picks(
    client: Client,
    shared_data: Callable[[str], Path],
    ranker_installed: dict,
    eager_celery: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    records = load_passages(shared_data("sciq"), 6)
    pair = _write_question(client, _stage1(limit=1), make_worker("author"), records)
    hit = _approve_into_stage2(pair, django_capture_on_commit_callbacks)

    offered = list(pair.distractors.filter(origin=Distractor.Origin.MODEL).order_by("model_rank"))
    version = f"random-forest-ranker:{ranker_installed['model_version']}"
    assert [d.model_rank for d in offered] == [1, 2, 3, 4, 5, 6]
    assert {d.model_version for d in offered} == {version}
    scores = [d.model_score for d in offered]
    assert scores == sorted(scores, reverse=True) and all(0.0 <= s <= 1.0 for s in scores)
    assert pair.answer.lower() not in {d.text.lower() for d in offered}

    assignment, url = _open(hit.batch, make_worker("validator"))
    html = client.get(url).content.decode()
    for d in offered:
        assert f'value="{d.pk}"' in html and d.text in html

    picked = [offered[1], offered[4]]
    response = client.post(url, {"suggested": [str(d.pk) for d in picked], "own-0": "a worker's own option"})
    assert b"Thank you" in response.content, response.content.decode()[:1500]
    validation = Validation.objects.get(assignment=assignment)
    rows = list(validation.distractors.order_by("position"))
    assert [(r.text, r.origin, r.model_rank, r.model_score, r.model_version) for r in rows[:2]] == [
        (d.text, "model", d.model_rank, d.model_score, version) for d in picked
    ]
    assert rows[2].origin == "worker" and rows[2].model_version in ("", None)
