"""A HIT kind's knowledge lives in its handler: no other module asks which kind a batch is.

Outside ``annotation/hits/`` (the handlers), ``annotation/models/`` (where the choices are defined)
and migrations, the apps' modules must not name a ``Batch.Kind`` member, compare something with a
kind's value, filter on a kind's value, or hold a kind's value under another name (a constant, a
default argument, a mapping's key, a ``case``), through which code could branch on the kind unseen.
Templates must not test a kind's value in a tag either. They ask ``handler_for(batch.kind).<fact>`` (or
``kinds_where(...)`` for a query), and a template renders what the handler chose (e.g. the tutorial's
``examples_template``), so a new kind is a new choice and a new handler. Modules are read with ``ast``,
not executed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from annotation.hits import BuiltFrom, handler_for, kinds_where
from annotation.models import Batch

REPO = Path(settings.BASE_DIR)
ROOTS = tuple("annotation crowd filters distractors exports evaluation worker console config".split())
KIND_OWNERS = ("annotation/hits/", "annotation/models/")
ALLOWED: dict[str, str] = {
    "evaluation/services/expert.py": "create_expert_batch makes the expert batches: it names the kind "
    "of the batch it creates and asks nothing about an existing batch",
    "console/demo.py": "load_demo creates the demo batches: it names the kinds of the "
    "batches it creates and asks nothing about an existing batch",
}
"""Modules that may name a kind, with the reason."""

MEMBERS = frozenset(Batch.Kind.names)
VALUES = frozenset(Batch.Kind.values)


def _kind_values(node: ast.AST) -> bool:
    """True for a kind's value as a string, or a tuple / list / set holding one (at any depth)."""
    if isinstance(node, ast.Constant):
        return node.value in VALUES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_kind_values(element) for element in node.elts)
    return False


def _is_kind_keyword(name: str | None) -> bool:
    return name is not None and any(
        name == lookup or name.endswith(f"__{lookup}") for lookup in ("kind", "kind__in")
    )


def _names_a_kind(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in VALUES


def kind_questions(source: str) -> Iterator[tuple[int, str]]:
    """``(line, what)`` for each place of ``source`` that names or tests a batch kind, or aliases one."""
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in MEMBERS
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "Kind"
        ):
            yield node.lineno, f"Kind.{node.attr}"
        elif isinstance(node, ast.Compare) and any(map(_kind_values, (node.left, *node.comparators))):
            yield node.lineno, "comparison with a kind's value"
        elif isinstance(node, ast.keyword) and _is_kind_keyword(node.arg) and _kind_values(node.value):
            yield node.lineno, f"{node.arg}= a kind's value"
        elif (
            isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr))
            and node.value is not None
            and _kind_values(node.value)
        ):
            yield node.lineno, "a kind's value under another name"
        elif isinstance(node, ast.arguments) and any(
            d is not None and _kind_values(d) for d in (*node.defaults, *node.kw_defaults)
        ):
            yield getattr(node, "lineno", 0) or 0, "a kind's value as a default argument"
        elif isinstance(node, ast.Dict) and any(k is not None and _kind_values(k) for k in node.keys):
            yield node.lineno, "a mapping keyed by a kind's value"
        elif isinstance(node, ast.MatchValue) and _names_a_kind(node.value):
            yield node.lineno, "case on a kind's value"


TEMPLATE_TAG = re.compile(r"{%.*?%}", re.S)


def template_kind_questions(source: str) -> Iterator[tuple[int, str]]:
    """``(line, what)`` for each template tag of ``source`` that holds a kind's value (a test on it)."""
    for match in TEMPLATE_TAG.finditer(source):
        for value in VALUES:
            if re.search(rf"""["']{value}["']""", match.group()):
                yield source.count("\n", 0, match.start()) + 1, f"template tag with {value!r}"


def checked_modules() -> Iterator[str]:
    """The paths (relative to the repository) of the modules that must not name a kind."""
    for root in ROOTS:
        for path in sorted((REPO / root).rglob("*.py")):
            relative = path.relative_to(REPO).as_posix()
            if "/migrations/" in relative or relative.startswith(KIND_OWNERS):
                continue
            yield relative


def test_no_module_outside_the_handlers_asks_for_a_kind() -> None:
    found = [
        f"{relative}:{line}: {what}"
        for relative in checked_modules()
        if relative not in ALLOWED
        for line, what in kind_questions((REPO / relative).read_text(encoding="utf-8"))
    ]
    assert found == []


def test_no_template_tests_a_kind() -> None:
    found = [
        f"{path.relative_to(REPO).as_posix()}:{line}: {what}"
        for path in sorted((REPO / "templates").rglob("*.html"))
        for line, what in template_kind_questions(path.read_text(encoding="utf-8"))
    ]
    assert found == []


@pytest.mark.parametrize(
    "source",
    [
        '{% if tutorial.kind == "sciq_question" %}x{% endif %}',
        "{% elif batch.kind != 'screening' %}",
        '{% if "expert_answer" in kinds %}',
    ],
)
def test_template_checker__catches_a_kind_test(source: str) -> None:
    assert list(template_kind_questions(source))


def test_template_checker__leaves_text_and_other_tags_alone() -> None:
    source = '<p>sciq_question</p>{% include tutorial.examples_template %}{% if release.kind == "mcq" %}'
    assert list(template_kind_questions(source)) == []


def test_allowed_modules__still_need_their_place() -> None:
    """An allow-list entry whose module no longer names a kind is dropped, so the list only shrinks."""
    for relative in ALLOWED:
        assert list(kind_questions((REPO / relative).read_text(encoding="utf-8"))), relative


@pytest.mark.parametrize(
    "source",
    [
        "if batch.kind == Batch.Kind.SCREENING: pass",
        "TITLES = {Batch.Kind.SYLLABUS_QA: 'Write'}",
        "x = batch.kind in ('syllabus_qa', 'screening')",
        "if kind != 'expert_answer': pass",
        "Batch.objects.filter(kind='sciq_question')",
        "QAPair.objects.filter(assignment__hit__batch__kind__in=['sciq_question'])",
        "import annotation.models\nk = annotation.models.Batch.Kind.EXPERT_ANSWER",
        'SCIQ_QUESTION = "sciq_question"\nif tutorial.kind == SCIQ_QUESTION: pass',
        "KINDS: tuple[str, ...] = ('syllabus_qa', 'sciq_distractor')",
        "def load(kind='syllabus_qa'): pass",
        "def load(*, kind: str = 'screening'): pass",
        "TEMPLATES = {'sciq_question': 'hits/a.html'}",
        "match batch.kind:\n    case 'expert_answer': pass",
        "if (k := 'screening') == batch.kind: pass",
    ],
)
def test_checker__catches_a_kind_question(source: str) -> None:
    assert list(kind_questions(source))


@pytest.mark.parametrize(
    "source",
    [
        "if handler_for(batch.kind).qualifies_workers: pass",
        "Batch.objects.filter(kind__in=kinds_where(lambda h: h.expert_only))",
        "choices = Batch.Kind.choices",
        "Payment.objects.filter(kind=Payment.Kind.BONUS)",
        "Corpus.objects.create(kind=Corpus.Kind.SYLLABUS)",
        "if release.kind == 'mcq': pass",
        "qs = Assignment.objects.select_related('expert_answer')",
        "x = handler.tutorial_name",
    ],
)
def test_checker__leaves_other_code_alone(source: str) -> None:
    assert list(kind_questions(source)) == []


def test_every_kind__has_a_handler_with_its_facts() -> None:
    """Each choice has a handler that states what a batch of it is built from and its default title."""
    for kind in Batch.Kind.values:
        handler = handler_for(kind)
        assert isinstance(handler.built_from, BuiltFrom), kind
        assert handler.default_title.strip(), kind


def test_stage2_kinds__are_built_from_the_questions_of_their_stage1() -> None:
    stage1 = kinds_where(lambda h: h.stage2_kind is not None)
    assert stage1
    for kind in stage1:
        stage2 = handler_for(kind).stage2_kind
        assert stage2 in Batch.Kind.values
        assert handler_for(stage2).built_from == BuiltFrom.QUESTIONS
