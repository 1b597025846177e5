"""A batch's budget stop and the completion code it was published with leave ``Batch.options`` (and come
back on reverse).

``budget_stopped`` (an ISO 8601 timestamp) becomes ``BatchPlatformState.budget_stopped_at``.
``completion_code`` stays a launch setting; publishing used to copy the code the platform published with
into the options, and that code is the state's ``published`` record's, so the copy is dropped where it
equals the record's. Backwards, each published code is copied into the options again, as publishing did.
"""

from typing import Any

from django.db import migrations, models
from django.utils.dateparse import parse_datetime

STOPPED = "budget_stopped"
CODE = "completion_code"


def forwards(apps: Any, schema_editor: Any) -> None:
    Batch = apps.get_model("annotation", "Batch")
    State = apps.get_model("crowd", "BatchPlatformState")
    for batch in Batch.objects.filter(options__has_key=STOPPED).only("pk", "options").iterator():
        options = dict(batch.options)
        stopped = parse_datetime(str(options.pop(STOPPED) or ""))
        State.objects.update_or_create(batch_id=batch.pk, defaults={"budget_stopped_at": stopped})
        Batch.objects.filter(pk=batch.pk).update(options=options)
    for batch in Batch.objects.filter(options__has_key=CODE).only("pk", "options").iterator():
        state = State.objects.filter(batch_id=batch.pk).first()
        published = (state.published or {}) if state is not None else {}
        if published.get(CODE) and published[CODE] == batch.options[CODE]:
            options = {k: v for k, v in batch.options.items() if k != CODE}
            Batch.objects.filter(pk=batch.pk).update(options=options)


def backwards(apps: Any, schema_editor: Any) -> None:
    Batch = apps.get_model("annotation", "Batch")
    State = apps.get_model("crowd", "BatchPlatformState")
    for state in State.objects.iterator():
        batch = Batch.objects.filter(pk=state.batch_id).only("pk", "options").first()
        if batch is None:
            continue
        options = dict(batch.options)
        if state.budget_stopped_at is not None:
            options[STOPPED] = state.budget_stopped_at.isoformat()
        code = (state.published or {}).get(CODE)
        if code:
            options[CODE] = code
        if options != batch.options:
            Batch.objects.filter(pk=batch.pk).update(options=options)


class Migration(migrations.Migration):
    dependencies = [("crowd", "0008_sync_cursor")]

    operations = [
        migrations.AddField(
            model_name="batchplatformstate",
            name="budget_stopped_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(forwards, backwards),
    ]
