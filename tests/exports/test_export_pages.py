"""The New release page, the export job page (refusal, "export anyway") and the Start benchmark form."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils.timezone import now

from annotation import question_types as qt
from annotation.models import Job, QAPair
from evaluation.models import BenchmarkRun
from exports.models import Release
from tests.factories import make_corpus, make_document, make_researcher

pytestmark = pytest.mark.django_db


@pytest.fixture
def eager():
    from config.celery import app

    old = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = old


@pytest.fixture
def releases_dir(settings, tmp_path: Path) -> Path:
    settings.CROWDQA_RELEASES_DIR = tmp_path / "releases"
    settings.VAR_DIR = tmp_path / "var"
    return settings.CROWDQA_RELEASES_DIR


@pytest.fixture
def researcher() -> Client:
    client = Client()
    client.force_login(make_researcher("r"))
    return client


def _corpus(documents: int) -> None:
    corpus = make_corpus(name="syl")
    for d in range(documents):
        doc = make_document(corpus, name=f"syllabus-{d}", text=f"Course {d}. Office hours are on day {d}.")
        for i in range(3):
            QAPair.objects.create(
                corpus=corpus,
                document=doc,
                question_type=qt.SYLLABUS_TYPES[0],
                question=f"When are the office hours of course {d} ({i})?",
                answer=f"Office hours are on day {d}.",
            )


def _form(**changes: object) -> dict:
    data = {
        "name": "syl",
        "version": "1.0",
        "source": "corpus",
        "corpus": "syl",
        "ratio_train": "0.5",
        "ratio_val": "0.25",
        "ratio_test": "0.25",
        "seed": "0",
        "formats": ["csv", "jsonl"],
    }
    data.update(changes)
    return data


def test_new_release__exports_from_the_page_and_links_the_release(
    researcher: Client, releases_dir: Path, eager
) -> None:
    _corpus(documents=4)
    page = researcher.get(reverse("exports:new"))
    assert page.status_code == 200 and b'name="ratio_val"' in page.content
    response = researcher.post(reverse("exports:new"), _form())
    job = Job.objects.get(kind="export_release")
    assert response.status_code == 302 and response["Location"] == reverse("exports:job", args=[job.pk])
    release = Release.objects.get()
    assert job.status == "done" and Path(release.path).parent == releases_dir
    html = researcher.get(response["Location"]).content.decode()
    assert reverse("exports:detail", args=[release.pk]) in html and "http-equiv" not in html
    assert reverse("evaluation:leaderboard", args=[release.pk]) in html


def test_new_release__bad_input_is_named_next_to_its_field_and_kept(
    researcher: Client, releases_dir: Path
) -> None:
    _corpus(documents=4)
    response = researcher.post(reverse("exports:new"), _form(name="bad name!", ratio_val="0.5"))
    assert response.status_code == 200
    assert "name" in response.context["form"].errors and b"bad name!" in response.content
    response = researcher.post(reverse("exports:new"), _form(ratio_val="0.5"))
    assert "sum to" in response.context["form"].errors["ratio_train"][0]
    assert b'value="0.5"' in response.content
    assert not Job.objects.exists()


def test_refused_export__page_warns_and_export_anyway_confirms(
    researcher: Client, releases_dir: Path, eager
) -> None:
    _corpus(documents=2)
    response = researcher.post(
        reverse("exports:new"), _form(ratio_train="0.8", ratio_val="0.1", ratio_test="0.1")
    )
    refused = Job.objects.get()
    assert refused.status == "failed"
    html = researcher.get(response["Location"]).content.decode()
    assert "Nothing was written" in html and "the val split is empty" in html and "Export anyway" in html
    assert "Waiting for your choice" in html and 'class="badge bad"' not in html  # not a red "Failed"
    assert not Release.objects.exists()

    confirmed = researcher.post(reverse("exports:confirm", args=[refused.pk]))
    job = Job.objects.exclude(pk=refused.pk).get()
    assert confirmed["Location"] == reverse("exports:job", args=[job.pk])
    assert job.status == "done" and job.params["allow"] == ["empty_split"]
    assert "Exported despite" in researcher.get(confirmed["Location"]).content.decode()


def test_export_and_benchmark_actions_need_their_permission(
    client: Client, settings, releases_dir: Path
) -> None:
    settings.CROWDQA_PUBLIC_DASHBOARD = True  # the demo opens the pages, not the actions
    _corpus(documents=4)
    page = client.get(reverse("exports:new")).content.decode()
    assert "Sign in" in page and 'name="ratio_val"' not in page
    response = client.post(reverse("exports:new"), _form())
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    viewer = get_user_model().objects.create_user("v", password="pw-for-tests")
    client.force_login(viewer)
    assert client.post(reverse("exports:new"), _form()).status_code == 403
    assert not Job.objects.exists()
    release = Release.objects.create(
        name="x", version="1", path="/nowhere", manifest_sha256="0", created=now()
    )
    board = client.get(reverse("evaluation:leaderboard", args=[release.pk])).content.decode()
    assert "Start benchmark" not in board
    assert (
        client.post(reverse("evaluation:start", args=[release.pk]), {"system": "search"}).status_code == 403
    )


def test_start_benchmark__queues_a_run_from_the_leaderboard(
    researcher: Client, releases_dir: Path, eager
) -> None:
    _corpus(documents=4)
    researcher.post(reverse("exports:new"), _form())
    release = Release.objects.get()
    board = researcher.get(reverse("evaluation:leaderboard", args=[release.pk])).content.decode()
    assert "Start benchmark" in board and 'value="search"' in board

    bad = researcher.post(
        reverse("evaluation:start", args=[release.pk]),
        {"system": "search", "split": "test", "metrics": ["factqa"], "model": "local", "judge": "none"},
    )
    assert bad.status_code == 400 and "needs a judge" in bad.context["form"].errors["metrics"][0]
    assert not BenchmarkRun.objects.exists()

    response = researcher.post(
        reverse("evaluation:start", args=[release.pk]),
        {"system": "search", "split": "test", "metrics": ["rougeL"], "model": "local", "judge": "none"},
    )
    run = BenchmarkRun.objects.get()
    assert response["Location"] == reverse("evaluation:run", args=[run.pk])
    assert run.status == "done" and run.n_items == 3 and run.metrics["rouge_l_f1"] is not None
    board = researcher.get(reverse("evaluation:leaderboard", args=[release.pk]))
    assert [row["run"].pk for row in board.context["board"]["rows"]] == [run.pk]


def test_new_release__publishes_to_s3_and_shows_where(
    researcher: Client, releases_dir: Path, eager, s3_server
) -> None:
    s3 = s3_server.client()
    s3.create_bucket(Bucket="datasets")
    _corpus(documents=4)
    bad = researcher.post(reverse("exports:new"), _form(publish="datasets/releases"))
    assert "expected s3://bucket/prefix" in bad.context["form"].errors["publish"][0]

    response = researcher.post(reverse("exports:new"), _form(publish="s3://datasets/releases"))

    job = Job.objects.get(kind="export_release")
    release = Release.objects.get()
    assert job.status == "done" and job.progress_done == job.progress_total == 5
    assert release.published_url == "s3://datasets/releases/syl-1.0/"
    listed = s3.list_objects_v2(Bucket="datasets", Prefix="releases/syl-1.0/")["Contents"]
    assert {o["Key"].removeprefix("releases/syl-1.0/") for o in listed} == {
        str(p.relative_to(release.path)) for p in Path(release.path).rglob("*") if p.is_file()
    }
    job_page = researcher.get(response["Location"]).content.decode()
    assert 'id="published-url">s3://datasets/releases/syl-1.0/<' in job_page
    detail = researcher.get(reverse("exports:detail", args=[release.pk])).content.decode()
    assert 'id="published-url">s3://datasets/releases/syl-1.0/<' in detail
