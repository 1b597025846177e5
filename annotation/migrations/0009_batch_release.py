import django.db.models.deletion
from django.db import migrations, models


def release_from_options(apps, schema_editor):
    """Move an expert batch's ``options["release"]`` (a Release id) into the ``release`` foreign key."""
    Batch = apps.get_model("annotation", "Batch")
    Release = apps.get_model("exports", "Release")
    for batch in Batch.objects.exclude(options={}).iterator():
        options = dict(batch.options or {})
        if "release" not in options:
            continue
        pk = options.pop("release")
        batch.release_id = pk if Release.objects.filter(pk=pk).exists() else None
        batch.options = options
        batch.save(update_fields=["release", "options"])


def release_to_options(apps, schema_editor):
    Batch = apps.get_model("annotation", "Batch")
    for batch in Batch.objects.filter(release__isnull=False).iterator():
        batch.options = {**(batch.options or {}), "release": batch.release_id}
        batch.save(update_fields=["options"])


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0008_rows_ordered_by_pair_id"),
        ("exports", "0002_release_published_url"),
    ]

    operations = [
        migrations.AddField(
            model_name="batch",
            name="release",
            field=models.ForeignKey(
                blank=True,
                help_text="For expert-answer batches: the release whose questions the experts answer.",
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="expert_batches",
                to="exports.release",
            ),
        ),
        migrations.RunPython(release_from_options, release_to_options),
    ]
