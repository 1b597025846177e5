"""``Batch.options`` is checked on save, and an expert batch's release is a foreign key (migrated from
the options it used to live in)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from annotation.batch_options import BatchOptionsError
from annotation.models import Batch, Corpus
from exports.models import Release

pytestmark = pytest.mark.django_db


def _release(name: str = "syllabusqa") -> Release:
    return Release.objects.create(
        name=name,
        version="1.0",
        path=f"/releases/{name}-1.0",
        manifest_sha256="0" * 64,
        created=datetime.now(UTC),
    )


def test_save__refuses_an_unknown_option_and_keeps_the_stored_row() -> None:
    batch = Batch.objects.create(name="b", kind="syllabus_qa", corpus=Corpus.objects.create(name="c"))
    batch.options = {**batch.options, "min_aproved": 50}
    with pytest.raises(BatchOptionsError, match="unknown key 'min_aproved'"):
        batch.save(update_fields=["options"])
    batch.refresh_from_db()
    assert batch.options == {}


def test_expert_batches_of_a_release_are_found_by_the_foreign_key() -> None:
    corpus = Corpus.objects.create(name="c")
    release, other = _release("a"), _release("b")
    mine = Batch.objects.create(name="e1", kind="expert_answer", corpus=corpus, release=release)
    Batch.objects.create(name="e2", kind="expert_answer", corpus=corpus, release=other)
    assert list(release.expert_batches.all()) == [mine]


@pytest.mark.django_db(transaction=True)
def test_migration__moves_options_release_into_the_foreign_key_and_back() -> None:
    executor = MigrationExecutor(connection)
    before = [("annotation", "0008_rows_ordered_by_pair_id"), ("exports", "0002_release_published_url")]
    after = [("annotation", "0009_batch_release")]
    try:
        executor.migrate(before)
        old = executor.loader.project_state(before).apps
        corpus = old.get_model("annotation", "Corpus").objects.create(name="c")
        release = old.get_model("exports", "Release").objects.create(
            name="r", version="1", path="/r-1", manifest_sha256="0" * 64, created=datetime.now(UTC)
        )
        OldBatch = old.get_model("annotation", "Batch")
        kept = OldBatch.objects.create(
            name="e", kind="expert_answer", corpus=corpus, options={"release": release.pk, "split": "test"}
        )
        gone = OldBatch.objects.create(
            name="g", kind="expert_answer", corpus=corpus, options={"release": 999}
        )
        plain = OldBatch.objects.create(name="p", kind="syllabus_qa", corpus=corpus, options={"seed": 1})

        executor = MigrationExecutor(connection)
        executor.migrate(after)
        new = executor.loader.project_state(after).apps.get_model("annotation", "Batch")
        assert (new.objects.get(pk=kept.pk).release_id, new.objects.get(pk=kept.pk).options) == (
            release.pk,
            {"split": "test"},
        )
        assert (new.objects.get(pk=gone.pk).release_id, new.objects.get(pk=gone.pk).options) == (None, {})
        assert (new.objects.get(pk=plain.pk).release_id, new.objects.get(pk=plain.pk).options) == (
            None,
            {"seed": 1},
        )

        executor = MigrationExecutor(connection)
        executor.migrate(before)
        back = executor.loader.project_state(before).apps.get_model("annotation", "Batch")
        assert back.objects.get(pk=kept.pk).options == {"split": "test", "release": release.pk}
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
