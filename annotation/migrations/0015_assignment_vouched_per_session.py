"""One local assignment per platform session id; only vouched-for sessions fill slots and caps.

Existing MTurk rows MTurk has not approved are marked not vouched for (sync confirms the submitted
ones again), and a platform id held by several rows (an arrival that reused another worker's id)
stays with the oldest row: the others keep it in ``platform_meta["duplicate_of_ref"]``.
"""

from typing import Any

from django.db import migrations, models
from django.db.models import Count


def mark_unconfirmed(apps: Any, schema_editor: Any) -> None:
    Assignment = apps.get_model("annotation", "Assignment")
    mturk = Assignment.objects.filter(hit__batch__provider="mturk")
    mturk.exclude(status="approved").update(vouched=False)
    duplicated = (
        Assignment.objects.exclude(platform_ref="")
        .values("platform_ref")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
        .values_list("platform_ref", flat=True)
    )
    for ref in list(duplicated):
        for row in Assignment.objects.filter(platform_ref=ref).order_by("pk")[1:]:
            row.platform_meta = {**(row.platform_meta or {}), "duplicate_of_ref": ref}
            row.platform_ref = f"{ref}~dup{row.pk}"[:200]
            row.vouched = False
            row.save(update_fields=["platform_meta", "platform_ref", "vouched"])


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0014_gold_items"),
        ("crowd", "0007_screening_qualification_state"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="assignment",
            name="assignment_one_per_worker",
        ),
        migrations.AddField(
            model_name="assignment",
            name="vouched",
            field=models.BooleanField(
                default=True,
                help_text=(
                    "The platform vouches for this session (local, Prolific: at arrival; MTurk: once it "
                    "lists the submitted assignment for the same worker and HIT). Only vouched work fills "
                    "slots and caps."
                ),
            ),
        ),
        migrations.RunPython(mark_unconfirmed, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="assignment",
            constraint=models.UniqueConstraint(
                condition=models.Q(("vouched", True)),
                fields=("hit", "worker"),
                name="assignment_one_per_worker",
            ),
        ),
        migrations.AddConstraint(
            model_name="assignment",
            constraint=models.UniqueConstraint(
                condition=models.Q(("platform_ref", ""), _negated=True),
                fields=("platform_ref",),
                name="assignment_one_per_platform_ref",
            ),
        ),
    ]
