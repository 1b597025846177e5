"""Move each batch's platform state out of ``Batch.options`` into ``BatchPlatformState`` (and back)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import migrations

KEYS = ("published", "publish_started", "publish_ref", "mturk_expired", "needs_attention")


def _when(value: Any) -> Any:
    return datetime.fromisoformat(value) if isinstance(value, str) and value else None


def forwards(apps: Any, schema_editor: Any) -> None:
    Batch = apps.get_model("annotation", "Batch")
    State = apps.get_model("crowd", "BatchPlatformState")
    for batch in Batch.objects.all().only("pk", "options").iterator():
        options = dict(batch.options or {})
        if not any(key in options for key in KEYS):
            continue
        attention = options.pop("needs_attention", None) or {}
        State.objects.update_or_create(
            batch_id=batch.pk,
            defaults={
                "published": options.pop("published", None),
                "publish_started": _when(options.pop("publish_started", None)),
                "publish_ref": options.pop("publish_ref", ""),
                "stopped_for_good": bool(options.pop("mturk_expired", False)),
                "attention_reason": attention.get("reason", ""),
                "attention_at": _when(attention.get("at")),
            },
        )
        Batch.objects.filter(pk=batch.pk).update(options=options)


def backwards(apps: Any, schema_editor: Any) -> None:
    Batch = apps.get_model("annotation", "Batch")
    State = apps.get_model("crowd", "BatchPlatformState")
    for state in State.objects.all().iterator():
        batch = Batch.objects.filter(pk=state.batch_id).only("pk", "options").first()
        if batch is None:
            continue
        options = dict(batch.options or {})
        if state.published is not None:
            options["published"] = state.published
        if state.publish_started is not None:
            options["publish_started"] = state.publish_started.isoformat()
        if state.publish_ref:
            options["publish_ref"] = state.publish_ref
        if state.stopped_for_good:
            options["mturk_expired"] = True
        if state.attention_reason:
            at = state.attention_at.isoformat() if state.attention_at else ""
            options["needs_attention"] = {"reason": state.attention_reason, "at": at}
        Batch.objects.filter(pk=batch.pk).update(options=options)


class Migration(migrations.Migration):
    dependencies = [("crowd", "0004_batch_platform_state")]

    operations = [migrations.RunPython(forwards, backwards)]
