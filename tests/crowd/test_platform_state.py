"""A batch's platform state lives in ``crowd.BatchPlatformState``, not in ``Batch.options``; the migration
moves what existing batches kept in their options, and back."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from annotation.batch_options import BatchOptionsError
from crowd.models import BatchPlatformState
from tests.factories import make_batch

PUBLISHED = {
    "provider": "mturk",
    "batch_ref": "7",
    "platform_batch_id": "3TYPE",
    "units": [{"local_ref": "1", "platform_id": "3HIT"}],
    "sandbox": True,
    "completion_code": "",
    "preview_url": "",
}


@pytest.mark.django_db
def test_state__written_under_its_row_lock_and_read_back_and_never_in_options() -> None:
    batch = make_batch()
    assert BatchPlatformState.of(batch.pk).published is None and not BatchPlatformState.objects.exists()
    BatchPlatformState.change(batch.pk, published=PUBLISHED, stopped_for_good=True)
    BatchPlatformState.change(batch.pk, attention_reason="the HITs are gone")
    state = BatchPlatformState.of(batch.pk)
    assert (state.published, state.stopped_for_good, state.attention_reason) == (
        PUBLISHED,
        True,
        "the HITs are gone",
    )
    batch.refresh_from_db()
    assert batch.platform_state == state and batch.options == {}
    batch.options = {"published": PUBLISHED}
    with pytest.raises(BatchOptionsError, match="unknown key 'published'"):
        batch.save(update_fields=["options"])


@pytest.mark.django_db(transaction=True)
def test_migration__moves_platform_state_out_of_options_and_back() -> None:
    before = [("crowd", "0004_batch_platform_state")]
    after = [("crowd", "0005_platform_state_out_of_batch_options")]
    executor = MigrationExecutor(connection)
    try:
        executor.migrate(before)
        old = executor.loader.project_state(before).apps
        corpus = old.get_model("annotation", "Corpus").objects.create(name="c")
        OldBatch = old.get_model("annotation", "Batch")
        launched = OldBatch.objects.create(
            name="m",
            kind="syllabus_qa",
            corpus=corpus,
            options={
                "published": PUBLISHED,
                "mturk_expired": True,
                "needs_attention": {"reason": "gone", "at": "2026-11-26T06:00:00+00:00"},
                "locales": ["US"],
            },
        )
        pending = OldBatch.objects.create(
            name="p",
            kind="syllabus_qa",
            corpus=corpus,
            options={"publish_started": "2026-11-26T05:00:00+00:00", "publish_ref": "STUDY1"},
        )
        plain = OldBatch.objects.create(name="l", kind="syllabus_qa", corpus=corpus, options={"seed": 1})

        executor = MigrationExecutor(connection)
        executor.migrate(after)
        new = executor.loader.project_state(after).apps
        Batch, State = new.get_model("annotation", "Batch"), new.get_model("crowd", "BatchPlatformState")
        assert Batch.objects.get(pk=launched.pk).options == {"locales": ["US"]}
        state = State.objects.get(batch_id=launched.pk)
        assert (state.published, state.stopped_for_good, state.attention_reason) == (PUBLISHED, True, "gone")
        assert state.attention_at == datetime(2026, 11, 26, 6, tzinfo=UTC) and state.publish_started is None
        assert State.objects.get(batch_id=pending.pk).publish_started == datetime(2026, 11, 26, 5, tzinfo=UTC)
        assert State.objects.get(batch_id=pending.pk).publish_ref == "STUDY1"
        assert Batch.objects.get(pk=pending.pk).options == {}
        assert not State.objects.filter(batch_id=plain.pk).exists()
        assert Batch.objects.get(pk=plain.pk).options == {"seed": 1}

        executor = MigrationExecutor(connection)
        executor.migrate(before)
        back = executor.loader.project_state(before).apps.get_model("annotation", "Batch")
        assert back.objects.get(pk=launched.pk).options == {
            "locales": ["US"],
            "published": PUBLISHED,
            "mturk_expired": True,
            "needs_attention": {"reason": "gone", "at": "2026-11-26T06:00:00+00:00"},
        }
        assert back.objects.get(pk=pending.pk).options == {
            "publish_started": "2026-11-26T05:00:00+00:00",
            "publish_ref": "STUDY1",
        }
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_migration__moves_a_screening_qualification_into_the_state_and_back() -> None:
    before = [("crowd", "0006_payment_status_labels")]
    after = [("crowd", "0007_screening_qualification_state")]
    executor = MigrationExecutor(connection)
    try:
        executor.migrate(before)
        old = executor.loader.project_state(before).apps
        corpus = old.get_model("annotation", "Corpus").objects.create(name="c")
        OldBatch = old.get_model("annotation", "Batch")
        screening = OldBatch.objects.create(
            name="s", kind="screening", corpus=corpus, options={"screening_qualification": "3QUAL", "seed": 1}
        )
        old.get_model("crowd", "BatchPlatformState").objects.create(
            batch_id=screening.pk, stopped_for_good=True
        )
        plain = OldBatch.objects.create(name="l", kind="syllabus_qa", corpus=corpus, options={})

        executor = MigrationExecutor(connection)
        executor.migrate(after)
        new = executor.loader.project_state(after).apps
        state = new.get_model("crowd", "BatchPlatformState").objects.get(batch_id=screening.pk)
        assert (state.screening_qualification, state.stopped_for_good) == ("3QUAL", True)
        assert new.get_model("annotation", "Batch").objects.get(pk=screening.pk).options == {"seed": 1}
        assert not new.get_model("crowd", "BatchPlatformState").objects.filter(batch_id=plain.pk).exists()

        executor = MigrationExecutor(connection)
        executor.migrate(before)
        back = executor.loader.project_state(before).apps.get_model("annotation", "Batch")
        assert back.objects.get(pk=screening.pk).options == {"seed": 1, "screening_qualification": "3QUAL"}
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_migration__moves_the_budget_stop_and_the_published_code_copy_out_of_options_and_back() -> None:
    before = [("crowd", "0008_sync_cursor")]
    after = [("crowd", "0009_budget_stop_and_completion_code_state")]
    executor = MigrationExecutor(connection)
    try:
        executor.migrate(before)
        old = executor.loader.project_state(before).apps
        corpus = old.get_model("annotation", "Corpus").objects.create(name="c")
        OldBatch, OldState = (
            old.get_model("annotation", "Batch"),
            old.get_model("crowd", "BatchPlatformState"),
        )
        stopped_options = {
            "budget_stopped": "2026-11-26T06:00:00+00:00",
            "completion_code": "C0DE",
            "seed": 1,
        }
        stopped = OldBatch.objects.create(
            name="s", kind="syllabus_qa", corpus=corpus, options=stopped_options
        )
        OldState.objects.create(batch_id=stopped.pk, published={**PUBLISHED, "completion_code": "C0DE"})
        draft = OldBatch.objects.create(
            name="d", kind="syllabus_qa", corpus=corpus, options={"completion_code": "MINE"}
        )
        unused = OldBatch.objects.create(  # a code the platform did not publish with stays a setting
            name="u", kind="syllabus_qa", corpus=corpus, options={"completion_code": "ASKED"}
        )
        OldState.objects.create(batch_id=unused.pk, published=PUBLISHED)
        plain = OldBatch.objects.create(name="l", kind="syllabus_qa", corpus=corpus, options={"seed": 2})

        executor = MigrationExecutor(connection)
        executor.migrate(after)
        new = executor.loader.project_state(after).apps
        Batch, State = new.get_model("annotation", "Batch"), new.get_model("crowd", "BatchPlatformState")
        assert Batch.objects.get(pk=stopped.pk).options == {"seed": 1}
        state = State.objects.get(batch_id=stopped.pk)
        assert state.budget_stopped_at == datetime(2026, 11, 26, 6, tzinfo=UTC)
        assert state.published["completion_code"] == "C0DE"
        assert Batch.objects.get(pk=draft.pk).options == {"completion_code": "MINE"}
        assert Batch.objects.get(pk=unused.pk).options == {"completion_code": "ASKED"}
        assert Batch.objects.get(pk=plain.pk).options == {"seed": 2}
        assert not State.objects.filter(batch_id__in=[draft.pk, plain.pk]).exists()

        executor = MigrationExecutor(connection)
        executor.migrate(before)
        back = executor.loader.project_state(before).apps.get_model("annotation", "Batch")
        assert back.objects.get(pk=stopped.pk).options == stopped_options
        assert back.objects.get(pk=draft.pk).options == {"completion_code": "MINE"}
        assert back.objects.get(pk=unused.pk).options == {"completion_code": "ASKED"}
        assert back.objects.get(pk=plain.pk).options == {"seed": 2}
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db
def test_completion_code__is_the_published_records() -> None:
    batch = make_batch()
    assert BatchPlatformState.of(batch.pk).completion_code == ""
    BatchPlatformState.change(batch.pk, published={**PUBLISHED, "completion_code": "C0DE"})
    assert BatchPlatformState.of(batch.pk).completion_code == "C0DE"
