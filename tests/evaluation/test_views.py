"""The benchmark pages: releases with runs, the leaderboard (overall, stratified, human row), a run."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from evaluation.models import BenchmarkRun
from tests.evaluation.conftest import run_search
from tests.factories import make_researcher

pytestmark = pytest.mark.django_db


@pytest.fixture
def researcher() -> Client:
    client = Client()
    client.force_login(make_researcher())
    return client


def test_leaderboard__shows_done_runs_strata_human_row_and_failures(
    small_release: Path, researcher: Client
) -> None:
    run = run_search(small_release, 20)
    human = BenchmarkRun.objects.create(
        release=run.release,
        system="human",
        status="done",
        n_items=7,
        metrics={"n": 7, "rouge_l_f1": 0.61, "fact_qa_p": 0.8, "fact_qa_r": 0.7, "fact_qa_f": 0.72},
    )
    failed = BenchmarkRun.objects.create(
        release=run.release, system="rag", status="failed", error="boom: no model"
    )

    page = researcher.get(reverse("evaluation:leaderboard", args=[run.release.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert f"{run.metrics['rouge_l_f1']:.4f}" in html and "Human (expert)" in html and "0.7200" in html
    assert "Fact-QA F1" in html and "BERTScore F1" not in html  # only columns some run has
    assert "ROUGE-L F1 by question type" in html and "ROUGE-L F1 by answer source" in html
    some_type = next(iter(run.stratified["question_type"]))
    assert f"{run.stratified['question_type'][some_type]['rouge_l_f1']:.4f}" in html
    assert "boom: no model" in html
    board_rows = page.context["board"]["rows"]
    assert [r["run"].pk for r in board_rows] == [run.pk, human.pk]

    detail = researcher.get(reverse("evaluation:run", args=[run.pk])).content.decode()
    assert "Chunk overlap" in detail and "generate" in detail and run.results_path not in detail
    assert f'href="/benchmarks/run/{run.pk}/results.json"' in detail  # a link, not the server path
    assert "boom: no model" in researcher.get(reverse("evaluation:run", args=[failed.pk])).content.decode()
    index = researcher.get(reverse("evaluation:index")).content.decode()
    assert "syllabusqa-small 1.0" in index and f"#{failed.pk}" in index


def test_benchmark_pages__need_a_researcher(client: Client) -> None:
    response = client.get(reverse("evaluation:index"))
    assert response.status_code == 302 and "login" in response["Location"]
