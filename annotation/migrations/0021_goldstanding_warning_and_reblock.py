from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0020_one_leaf"),
    ]

    operations = [
        migrations.AddField(
            model_name="goldstanding",
            name="failures_at_block",
            field=models.PositiveIntegerField(
                blank=True,
                help_text="Wrong gold answers plus failed attention items when the standing last blocked the "
                "worker: after a researcher unblocks them, only a failure beyond these blocks again.",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="goldstanding",
            name="warning_sent_at",
            field=models.DateTimeField(
                blank=True,
                help_text="When the worker was sent the warning message (once per batch; set before sending).",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="goldstanding",
            name="warning_error",
            field=models.TextField(blank=True, help_text="Why the warning message could not be sent."),
        ),
    ]
