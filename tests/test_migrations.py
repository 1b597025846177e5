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
from django.db import connection
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


#: Tables every HIT writes (the HIT, its assignment, QA pair and passages) and the one column among them
#: that keeps ``db_index`` (see ``Assignment.Meta``).
HOT_TABLES = ("annotation_assignment", "annotation_hit", "annotation_passage", "annotation_qapair")
PATTERN_OPS_KEPT = {"annotation_assignment_platform_ref"}


@pytest.mark.django_db
def test_tables_every_hit_writes_have_no_pattern_ops_indexes() -> None:
    """Why: on PostgreSQL ``db_index`` on a CharField adds a ``varchar_pattern_ops`` index for ``LIKE
    'prefix%'``, which no query of these tables uses and every insert and non-HOT update writes."""
    if connection.vendor != "postgresql":
        pytest.skip("pattern-ops indexes are PostgreSQL's")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = ANY(%s) AND indexdef LIKE '%%pattern_ops%%'",
            [list(HOT_TABLES)],
        )
        found = {name for (name,) in cursor.fetchall()}
    assert {name.rsplit("_", 2)[0] for name in found} <= PATTERN_OPS_KEPT, sorted(found)
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'annotation_assignment'")
        indexes = {name for (name,) in cursor.fetchall()}
    assert "assignment_one_per_platform_ref" in indexes
