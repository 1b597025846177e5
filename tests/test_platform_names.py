"""Outside ``crowd/providers`` the code names no external platform (issue 25): a platform's rules, pages,
settings keys and id formats live in its package, so adding or changing a platform touches one folder.

Counted: every module of the apps and of ``config`` (read with ``ast``: string constants other than
docstrings, identifiers, attribute names, keyword arguments; comments are not code) and every template of
the repository, outside ``crowd/providers`` and the migrations, that names MTurk or Prolific. The local
crowd is crowdqa itself: creating a row on it (``Platform.LOCAL``) does not count.

``NAMED`` lists, with the reason, the files that still name one; the test fails on any other file and on
an entry that no longer names a platform, so the list can only shrink.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from django.apps import apps
from django.conf import settings

REPO = Path(settings.BASE_DIR)
#: the repository's own apps (an app installed in CI's virtualenv inside the checkout is not ours) and config.
ROOTS = tuple(
    sorted(
        {
            Path(app.path).relative_to(REPO).parts[0]
            for app in apps.get_app_configs()
            if Path(app.path).is_relative_to(REPO) and "site-packages" not in Path(app.path).parts
        }
        | {"config"}
    )
)
HOME = Path("crowd/providers")
PLATFORM = re.compile(r"mturk|prolific|turk", re.IGNORECASE)
#: file -> why it still names a platform.
NAMED: dict[str, str] = {}


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (of modules, classes, functions, attributes)."""
    found = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            found.add(id(node.value))
    return found


def _names(tree: ast.AST) -> Iterator[str]:
    """Every string constant (docstrings aside) and identifier in ``tree``."""
    docstrings = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.value
        elif isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.Attribute):
            yield node.attr
        elif isinstance(node, (ast.keyword, ast.arg)) and node.arg:
            yield node.arg
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name
        elif isinstance(node, ast.alias):
            yield node.asname or node.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


def names_platform(source: str) -> bool:
    """True when a module's code (not its docstrings or comments) names an external platform."""
    return any(PLATFORM.search(name) for name in _names(ast.parse(source)))


def naming_files(repo: Path) -> set[str]:
    """The files outside ``crowd/providers`` of ``repo`` whose code or template names an external platform."""
    found = set()
    for root in ROOTS:
        for path in sorted((repo / root).rglob("*.py")):
            relative = path.relative_to(repo)
            if relative.is_relative_to(HOME) or "migrations" in relative.parts:
                continue
            if names_platform(path.read_text(encoding="utf-8")):
                found.add(relative.as_posix())
    for root in ("templates", *ROOTS):
        for path in sorted((repo / root).rglob("*.html")):
            relative = path.relative_to(repo)
            if not {"templates", "jinja2"} & set(relative.parts) or relative.is_relative_to(HOME):
                continue
            if PLATFORM.search(path.read_text(encoding="utf-8")):
                found.add(relative.as_posix())
    return found


def test_no_new_file_outside_crowd_providers_names_a_platform() -> None:
    assert {"annotation", "crowd", "worker", "console", "config"} <= set(ROOTS)
    found = naming_files(REPO)
    assert sorted(found - set(NAMED)) == [], "ask the platform's traits, or move the code into its package"
    assert sorted(set(NAMED) - found) == [], "these no longer name a platform: remove them from NAMED"


def test_names_platform__reads_code_not_prose() -> None:
    assert names_platform('"""Publishes on MTurk."""\nx = 1  # Prolific too\n') is False
    assert names_platform('def f():\n    """On MTurk."""\n    return 1\n') is False
    for code in (
        'extra = {"prolific_filters": []}',
        "if traits is MTurkTraits: pass",
        "f(mturk_client=None)",
        "Platform.PROLIFIC",
        "from crowd.providers.mturk import api",
        "def turk_submit(): pass",
        "x = 'hits/mturk_submit.html'",
    ):
        assert names_platform(code) is True, code


def test_naming_files__finds_modules_and_templates_outside_the_providers(tmp_path: Path) -> None:
    for place, text in (
        ("crowd/services/a.py", "x = 'mturk'\n"),
        ("crowd/providers/mturk/traits.py", "x = 'mturk'\n"),
        ("crowd/migrations/0001_x.py", "x = 'mturk'\n"),
        ("console/b.py", '"""MTurk."""\n'),
        ("templates/hits/c.html", "Finish on Mechanical Turk"),
        ("crowd/providers/mturk/jinja2/mturk/d.html", "Finish on Mechanical Turk"),
        ("worker/templates/worker/e.html", "{{ batch.title }}"),
        ("worker/jinja2/worker/f.html", "Prolific"),
    ):
        (tmp_path / place).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / place).write_text(text)
    assert naming_files(tmp_path) == {
        "crowd/services/a.py",
        "templates/hits/c.html",
        "worker/jinja2/worker/f.html",
    }
