"""Joins the two leaves 0018_followup_owed_index and 0019_verdict_validation_kind (both written on 0017
at the same time); no operation."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0018_followup_owed_index"),
        ("annotation", "0019_verdict_validation_kind"),
    ]

    operations = []
