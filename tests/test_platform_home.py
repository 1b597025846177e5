"""A platform's knowledge lives in its provider (crowd/providers): nobody else asks which platform it is.

Code outside ``crowd/providers`` asks the platform's traits (``traits_for(batch.provider).external``,
``provider.stop_is_final``...) instead of comparing names. Read with ``ast`` from every module of the apps
and of config (not executed); templates are read as text. Reported:

| rule | what |
|------|------|
| P1 | a comparison with a ``Platform`` member (``batch.provider == Platform.LOCAL``) |
| P2 | a comparison with a platform name (``== "mturk"``; ``"local"`` when compared with a provider or |
|    | platform value, since judges and models are called "local" too) |
| P3 | a database lookup on the platform (``.filter(provider=Platform.LOCAL)``, ``provider__in=[...]``) |
| P4 | an import of ``crowd.providers.mturk.api`` or ``crowd.providers.prolific.api`` (the SDK clients) |
| P5 | a template comparing ``provider`` or ``platform`` with a string |
| P6 | a platform name spelled as a string (``"prolific"``; not ``"local"``), where the enum or the |
|    | platform's own module should name it |

A line is reported once, under its lowest rule.

Creating a row with a platform (``Batch(provider=Platform.LOCAL)``) is naming it, not asking it: allowed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings

from annotation.platforms import Platform

REPO = Path(settings.BASE_DIR)
ROOTS = tuple("annotation crowd filters distractors exports evaluation worker console config".split())
HOME = Path("crowd/providers")
ENUM = Path("annotation/platforms.py")
NAMES = frozenset({*Platform.values(), "fake"})
#: names that mean other things too; compared only with an expression that says provider or platform.
AMBIGUOUS = frozenset({"local"})
#: the attribute a name would have in an enum of platforms (``Platform.LOCAL``, ``Worker.Platform.MTURK``).
MEMBERS = frozenset(name.upper() for name in NAMES)
SDK_MODULES = frozenset({"crowd.providers.mturk.api", "crowd.providers.prolific.api"})
LOOKUPS = frozenset({"filter", "exclude", "get", "get_object_or_404", "get_list_or_404"})
TEMPLATE_COMPARE = re.compile(r"\b(provider|platform)\s*(==|!=)\s*[\"']")


def _is_member(node: ast.AST) -> bool:
    """``Platform.MTURK`` (and ``Batch.Provider.MTURK``-style nested enums)."""
    if not isinstance(node, ast.Attribute) or node.attr not in MEMBERS:
        return False
    owner = node.value
    name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
    return name in ("Platform", "Provider")


def _names_platform(node: ast.AST) -> bool:
    return "provider" in ast.unparse(node).lower() or "platform" in ast.unparse(node).lower()


def _called(func: ast.AST) -> str:
    """The name a call is made by: ``filter`` of ``Batch.objects.filter(...)``, ``get_object_or_404``."""
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _platform_values(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` itself and the items of a literal list, tuple or set."""
    yield node
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        yield from node.elts


def _is_name(node: ast.AST, other: ast.AST) -> bool:
    if not isinstance(node, ast.Constant) or node.value not in NAMES:
        return False
    return node.value not in AMBIGUOUS or _names_platform(other)


def findings(source: str, where: str) -> list[str]:
    """The platform questions asked in one module's ``source``, as ``"P<n> where:line"``, by line."""
    by_line: dict[int, str] = {}
    for found in sorted(_questions(ast.parse(source), where)):
        by_line.setdefault(int(found.rsplit(":", 1)[1]), found)
    return [by_line[line] for line in sorted(by_line)]


def _questions(tree: ast.AST, where: str) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for operand in operands:
                others = [o for o in operands if o is not operand]
                values = list(_platform_values(operand))
                if any(_is_member(v) for v in values):
                    yield f"P1 {where}:{node.lineno}"
                elif any(_is_name(v, other) for v in values for other in others):
                    yield f"P2 {where}:{node.lineno}"
        elif isinstance(node, ast.Call):
            if _called(node.func) in LOOKUPS:
                for keyword in node.keywords:
                    key = keyword.arg or ""
                    if ("provider" in key or "platform" in key) and any(
                        _is_member(v) or (isinstance(v, ast.Constant) and v.value in NAMES)
                        for v in _platform_values(keyword.value)
                    ):
                        yield f"P3 {where}:{node.lineno}"
        elif isinstance(node, ast.Constant) and node.value in NAMES - AMBIGUOUS:
            yield f"P6 {where}:{node.lineno}"
        elif isinstance(node, ast.Import):
            if any(alias.name in SDK_MODULES for alias in node.names):
                yield f"P4 {where}:{node.lineno}"
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module in SDK_MODULES or any(f"{module}.{a.name}" in SDK_MODULES for a in node.names):
                yield f"P4 {where}:{node.lineno}"


def template_findings(text: str, where: str) -> Iterator[str]:
    """Template lines that compare a provider or platform with a string, as ``"P5 where:line"``."""
    for number, line in enumerate(text.splitlines(), start=1):
        if TEMPLATE_COMPARE.search(line):
            yield f"P5 {where}:{number}"


def platform_questions(repo: Path) -> list[str]:
    """Every platform question asked outside ``crowd/providers`` in the modules and templates of ``repo``."""
    found: list[str] = []
    for root in ROOTS:
        for path in sorted((repo / root).rglob("*.py")):
            relative = path.relative_to(repo)
            if relative.is_relative_to(HOME) or relative == ENUM or "migrations" in relative.parts:
                continue
            found.extend(findings(path.read_text(encoding="utf-8"), str(relative)))
    for templates in (repo / "templates", *(repo / root / "templates" for root in ROOTS)):
        for path in sorted(templates.rglob("*.html")):
            relative = path.relative_to(repo)
            found.extend(template_findings(path.read_text(encoding="utf-8"), str(relative)))
    return found


def test_platform_questions__only_inside_crowd_providers() -> None:
    assert platform_questions(REPO) == []


def test_findings__catch_each_kind_of_platform_question() -> None:
    """The checker is live: each rule reports the question it names, and naming a platform passes."""
    source = """
from crowd.providers.prolific import api as prolific_api
from crowd.providers.mturk.api import make_client
import crowd.providers.mturk.api
if batch.provider == Platform.LOCAL: pass
if worker.platform != Worker.Platform.MTURK: pass
if batch.provider in (Platform.MTURK, Platform.PROLIFIC): pass
if provider.name == "prolific": pass
if provider.name != "local": pass
if "mturk" == batch.provider: pass
Batch.objects.filter(batch__provider=Platform.LOCAL)
get_object_or_404(Batch, pk=1, provider="local")
Batch.objects.exclude(provider__in=["mturk"])
Batch.objects.create(provider=Platform.LOCAL)
if judge == "local": pass
if worker.platform != batch.provider: pass
DbDedupStore("prolific")
register_provider("local", factory)
"""
    assert findings(source, "m.py") == [
        "P4 m.py:2",
        "P4 m.py:3",
        "P4 m.py:4",
        "P1 m.py:5",
        "P1 m.py:6",
        "P1 m.py:7",
        "P2 m.py:8",
        "P2 m.py:9",
        "P2 m.py:10",
        "P3 m.py:11",
        "P3 m.py:12",
        "P3 m.py:13",
        "P6 m.py:17",
    ]
    template = "\n".join(
        (
            '{% if batch.provider == "local" %}',
            "{% if platform_traits.external %}",
            "{% if w.platform != 'mturk' %}",
        )
    )
    assert list(template_findings(template, "t.html")) == ["P5 t.html:1", "P5 t.html:3"]
