"""The import graph keeps the layers: the data model at the bottom, crowd and the engines above it, the
web faces (the worker's HIT pages, the researcher's console) on top. Imports are read with ``ast`` from
every module of the apps (not executed), including imports inside functions.

**The app order** (``LEVELS``, bottom first): an app may import its own modules, ``config`` and the apps
on the levels below its own, never an app on its level or above; so no two apps import each other.
``REMAINING`` lists, with the reason, the imports that still run against the order (issue 25's remaining
work); the test fails on any other, and on an entry that no longer occurs, so the list only shrinks.

A module is in the **top layer** when its path has one of ``TOP_PARTS`` or a part ending in ``_views`` or
``_urls`` (pages, URL tables, Celery tasks, services that orchestrate, HIT kind handlers, commands,
admin). A **model module** is an app's ``models.py`` (or a module of its ``models`` package) or a migration.

| rule | importer | must not import |
|------|----------|-----------------|
| R1 | a model module | a top-layer module (any app), or a module of another app other than its ``models`` |
| R2 | a module outside the top layer | a top-layer module of another app |
| R3 | any module | another package's ``management.commands`` modules (shared command code lives in |
|    |            | ``config.commands``) |
| R4 | ``config`` settings, broker and command modules | any app module |
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from django.apps import apps
from django.conf import settings

REPO = Path(settings.BASE_DIR)
APPS = (
    "webhooks",
    "annotation",
    "crowd",
    "filters",
    "distractors",
    "exports",
    "evaluation",
    "worker",
    "console",
    "api",
)
#: The apps from the bottom up; an app imports only the apps on lower levels (the two faces are peers).
LEVELS: tuple[tuple[str, ...], ...] = (
    ("webhooks",),  # outbound webhooks: endpoints, events, signed deliveries (every app above emits)
    ("annotation",),  # the data model, the HIT kinds with their QC rules and screening quiz, importers
    ("filters",),  # the sentence filter, passage acceptance, QC runs over stored pairs
    ("distractors",),  # distractor candidates, features, the ranker
    ("crowd",),  # workers, platforms (providers), publishing, sync, review and payments
    ("exports",),  # splits, formatters, the dataset card, releases
    ("evaluation",),  # baselines, metrics, benchmark runs, expert batches and agreement
    ("worker", "console"),  # the web faces: the crowd worker's pages, the researcher's pages
    ("api",),  # the REST API: the console's forms and services for scripts
)
LEVEL = {app: n for n, apps in enumerate(LEVELS) for app in apps}
#: importer -> imported module, with why, for the imports that still run against ``LEVELS`` (none now:
#: an entry is added only with its reason, and the test fails once it no longer occurs).
REMAINING: dict[tuple[str, str], str] = {}
#: the web faces: every module of theirs is top layer.
FACES = frozenset({"worker", "console", "api"})
TOP_PARTS = frozenset(
    {
        "views",
        "hit_views",
        "review_views",
        "launch_views",
        "worker_views",
        "urls",
        "hit_urls",
        "tasks",
        "followup_tasks",
        "loop_tasks",
        "services",
        "hits",
        "management",
        "admin",
        "apps",
    }
)
#: config modules the apps build on; config.urls, config.wsgi and config.celery sit on top of everything
#: (the apps' task modules load config.celery through config.jobs, which imports no app).
CONFIG_FOUNDATION = (
    "config.settings",
    "config.env",
    "config.jobs",
    "config.test_settings",
    "config.broker",
    "config.commands",
    "config.atomic",
    "config.storage",
)


def _app(module: str) -> str:
    return module.split(".")[0]


def is_top(module: str) -> bool:
    return _app(module) in FACES or any(
        part in TOP_PARTS or part.endswith(("_views", "_urls")) for part in module.split(".")[1:]
    )


def is_model(module: str) -> bool:
    parts = module.split(".")
    return parts[1:2] == ["models"] or "migrations" in parts


def imports_of(source: str, package: str) -> Iterator[str]:
    """Every module ``source`` imports; ``from a import b`` yields ``a.b`` too, as ``b`` may be a module."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = ".".join(parts[: len(parts) - node.level + 1]) if node.level else ""
            base = ".".join(p for p in (base, node.module or "") if p)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph() -> dict[str, set[str]]:
    """Module name -> the modules it imports, for every module of the apps and of config."""
    graph: dict[str, set[str]] = {}
    for root in (*APPS, "config"):
        for path in sorted((REPO / root).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            package = ".".join(parts[:-1])
            module = ".".join(parts).removesuffix(".__init__")
            graph[module] = set(imports_of(path.read_text(encoding="utf-8"), package))
    return graph


def violations(graph: dict[str, set[str]]) -> list[str]:
    """The imports of ``graph`` that break a rule, as ``"R<n> importer -> imported"``."""
    found = []
    for importer, targets in sorted(graph.items()):
        for target in sorted(targets):
            if _app(target) not in (*APPS, "config") or target == importer:
                continue
            other_app = _app(target) != _app(importer)
            foreign = other_app and _app(target) != "config" and not is_model(target)
            if is_model(importer) and (is_top(target) or foreign):
                found.append(f"R1 {importer} -> {target}")
            elif not is_top(importer) and other_app and is_top(target):
                found.append(f"R2 {importer} -> {target}")
            owner = target.split(".management.commands")[0]
            if ".management.commands" in target and not importer.startswith(f"{owner}.management"):
                found.append(f"R3 {importer} -> {target}")
            if importer in CONFIG_FOUNDATION and _app(target) in APPS:
                found.append(f"R4 {importer} -> {target}")
    # ``from a import b`` is checked as ``a`` and as ``a.b``: report the module once.
    return [v for v in found if not any(v.startswith(f"{other}.") for other in found if other != v)]


def order_violations(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The imports of ``graph`` from an app to an app on its own level or above, as (importer, imported)."""
    found = []
    for importer, targets in sorted(graph.items()):
        for target in sorted(targets):
            source, imported = _app(importer), _app(target)
            if (
                source in LEVEL
                and imported in LEVEL
                and source != imported
                and LEVEL[imported] >= LEVEL[source]
            ):
                found.append((importer, target))
    # ``from a import b`` is checked as ``a`` and as ``a.b``: report the module once.
    return [
        (importer, target)
        for importer, target in found
        if not any(i == importer and target.startswith(f"{t}.") for i, t in found)
    ]


def two_way_pairs(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The pairs of apps that import each other (imports inside functions included)."""
    edges = {(_app(a), _app(b)) for a, targets in graph.items() for b in targets if _app(a) != _app(b)}
    return sorted((a, b) for a, b in edges if a < b and (b, a) in edges and {a, b} <= LEVEL.keys())


def test_every_app_has_a_level() -> None:
    """A new app must be placed in the order before its imports are checked."""
    local = {config.label for config in apps.get_app_configs() if Path(config.path).parent == REPO}
    assert local == set(LEVEL) == set(APPS)


def test_import_graph__follows_the_app_order() -> None:
    found = order_violations(import_graph())
    assert [f"{a} -> {b}" for a, b in found if (a, b) not in REMAINING] == []
    assert [f"{a} -> {b}" for a, b in REMAINING if (a, b) not in found] == [], "no longer imported: drop it"


def _remaining(importer: str, target: str) -> bool:
    return any(importer == a and (target == b or target.startswith(f"{b}.")) for a, b in REMAINING)


def test_two_way_pairs__only_from_the_remaining_imports() -> None:
    """Without the ``REMAINING`` imports no two apps import each other."""
    graph = {m: {t for t in targets if not _remaining(m, t)} for m, targets in import_graph().items()}
    assert two_way_pairs(graph) == []
    assert len(two_way_pairs(import_graph())) <= 3


def test_app_order__catches_an_import_against_it() -> None:
    """The checker is live: upward, sideways (face to face) and in-function imports are reported."""
    source = "def f():\n    from console.views import HomeView\n"
    graph = {
        "filters.services": set(imports_of(source, "filters")),
        "worker.hit_views": {"console.review_views", "annotation.models"},
        "annotation.models": {"annotation.drafts"},
        "exports.release": {"annotation.hashing", "evaluation.models"},
    }
    assert order_violations(graph) == [
        ("exports.release", "evaluation.models"),
        ("filters.services", "console.views"),
        ("worker.hit_views", "console.review_views"),
    ]
    assert two_way_pairs({**graph, "console.views": {"worker.hit_links"}}) == [("console", "worker")]


def test_import_graph__keeps_the_layers() -> None:
    assert violations(import_graph()) == []


def test_rules__catch_a_forbidden_import() -> None:
    """The checker is live: each rule reports an import that breaks it."""
    graph = {
        "crowd.models": {"exports.privacy"},
        "annotation.models": {"annotation.services.batches"},
        "filters.services": {"annotation.models"},
        "exports.dataset": {"annotation.services.batches"},
        "crowd.management.commands.sync_batches": {"annotation.management.commands._base"},
        "config.settings": {"annotation.models"},
    }
    assert violations(graph) == [
        "R1 annotation.models -> annotation.services.batches",
        "R4 config.settings -> annotation.models",
        "R3 crowd.management.commands.sync_batches -> annotation.management.commands._base",
        "R1 crowd.models -> exports.privacy",
        "R2 exports.dataset -> annotation.services.batches",
    ]
