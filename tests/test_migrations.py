"""The migrations match the models and form one line per app.

Why: engineers land migrations in parallel; two numbered alike leave an app with two leaves, and Django
then refuses to migrate at all (``Conflicting migrations detected``), so every deployment and the demo
stop. A model changed without its migration fails later, on a database that lacks the column.
``makemigrations --check`` catches both before the tree lands.
"""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db.migrations.loader import MigrationLoader


def test_one_leaf_per_app() -> None:
    loader = MigrationLoader(None, ignore_no_migrations=True)
    conflicts = loader.detect_conflicts()
    assert not conflicts, f"apps with more than one leaf migration (renumber one): {conflicts}"


@pytest.mark.django_db
def test_models_have_their_migrations() -> None:
    out = io.StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit as exc:  # makemigrations --check exits 1 when a migration is missing
        pytest.fail(f"models changed without a migration (exit {exc.code}):\n{out.getvalue()}")
