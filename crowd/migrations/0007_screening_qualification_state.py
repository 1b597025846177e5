"""A screening batch's platform qualification moves from ``Batch.options`` to its platform state (and back)."""

from typing import Any

from django.db import migrations, models

KEY = "screening_qualification"


def forwards(apps: Any, schema_editor: Any) -> None:
    Batch = apps.get_model("annotation", "Batch")
    State = apps.get_model("crowd", "BatchPlatformState")
    for batch in Batch.objects.filter(options__has_key=KEY).only("pk", "options").iterator():
        options = dict(batch.options)
        State.objects.update_or_create(batch_id=batch.pk, defaults={KEY: str(options.pop(KEY) or "")})
        Batch.objects.filter(pk=batch.pk).update(options=options)


def backwards(apps: Any, schema_editor: Any) -> None:
    Batch = apps.get_model("annotation", "Batch")
    State = apps.get_model("crowd", "BatchPlatformState")
    for state in State.objects.exclude(**{KEY: ""}).iterator():
        batch = Batch.objects.filter(pk=state.batch_id).only("pk", "options").first()
        if batch is not None:
            Batch.objects.filter(pk=batch.pk).update(options={**batch.options, KEY: getattr(state, KEY)})


class Migration(migrations.Migration):
    dependencies = [("crowd", "0006_payment_status_labels")]

    operations = [
        migrations.AddField(
            model_name="batchplatformstate",
            name=KEY,
            field=models.CharField(
                blank=True,
                default="",
                help_text="The platform qualification a screening batch grants.",
                max_length=200,
            ),
        ),
        migrations.RunPython(forwards, backwards),
    ]
