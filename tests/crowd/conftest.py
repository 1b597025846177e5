"""Fixtures for the crowd service tests: fake platforms, a small SciQ corpus, Celery run inline."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from annotation.importers.mcq import MCQRow, read_sciq
from annotation.models import Corpus
from tests.factories import make_textbook
from tests.fakes import fixtures as _fakes

aws_credentials = _fakes.aws_credentials
fake_mturk_server = _fakes.fake_mturk_server
fake_prolific_server = _fakes.fake_prolific_server

TOPICS = [
    ("Mitochondria", "produce most of the chemical energy used by a cell"),
    ("Chloroplasts", "capture light energy for photosynthesis in plant cells"),
    ("Ribosomes", "assemble proteins from amino acids inside every living cell"),
    ("Neurons", "carry electrical signals through the nervous system of animals"),
    ("Glaciers", "carve deep valleys as they slowly move across the land"),
    ("Volcanoes", "release molten rock and gases from deep inside the earth"),
    ("Enzymes", "speed up chemical reactions without being used up themselves"),
    ("Magnets", "attract objects made of iron, nickel and cobalt"),
    ("Earthworms", "improve soil by mixing organic matter into the ground"),
]


@pytest.fixture(autouse=True)
def _no_real_aws(request: pytest.FixtureRequest) -> None:
    """Dummy AWS credentials for every test here: nothing can reach a real account."""
    request.getfixturevalue("aws_credentials")


@pytest.fixture
def sciq_corpus(db: None) -> Corpus:
    """A textbook corpus with nine accepted passages (three SciQ stage-1 HITs)."""
    return make_textbook(
        "sci", (f"{subject} {rest}. Scientists have studied them for many years." for subject, rest in TOPICS)
    )


def answers_for(hit) -> dict[str, str]:  # noqa: ANN001 - a HIT
    """Valid SciQ stage-1 form fields for a HIT: a question about its first passage."""
    passage = hit.passages.order_by("pk").first()
    subject, rest = passage.text.split(" ", 1)
    rest = rest.split(".")[0]
    return {
        "passage": str(passage.pk),
        "question": f"Which parts of living things or nature {rest}?",
        "answer": subject.lower(),
    }


@pytest.fixture
def eager_celery() -> Iterator[None]:
    """Run ``.delay()`` inline (the webhook's queued sync) and restore the setting afterwards."""
    from config.celery import app

    old = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        yield
    finally:
        app.conf.task_always_eager = old


@pytest.fixture
def no_options_only_check(settings: Any) -> None:
    """No SciQ options-only check after stage-2 submissions (``CROWDQA_OPTIONS_ONLY_MODEL=off``): tests
    about other things then load no language model (tests/evaluation/test_options_only.py covers it)."""
    settings.CROWDQA_OPTIONS_ONLY_MODEL = "off"


@pytest.fixture
def sciq(shared_data: Callable[[str], Path]) -> Path:
    """The real SciQ dataset folder (skips, or fails under CROWDQA_REQUIRE_SHARED_DATA, when absent)."""
    return shared_data("sciq")


@pytest.fixture
def key(sciq: Path) -> dict[str, MCQRow]:
    """SciQ's answer key (validation and test splits) by question text: what a careful worker knows."""
    return {r.question: r for r in read_sciq(sciq, splits=("val", "test"))}
