"""The documentation in ``docs/`` builds, its links resolve, and its reference matches the code.

Why: the reference is only worth reading while it is true. The site is built with MkDocs in strict mode
(``mkdocs.yml``: a broken link or anchor, or a page left out of the navigation, is an error); the
README's links into ``docs/`` are resolved here. The command reference (``docs/reference/commands.md``,
one ``## `name``` section per command, one table row per argument) is compared with the argument parsers
of the apps' management commands, built as ``manage.py`` builds them
(``load_command_class(...).create_parser(...)``): a command without a section, an option without a row
or a row naming no option fails. The configuration page must name every environment variable the code
reads, the codes page every rule and QC code, and the HIT form page every HIT kind.
"""

from __future__ import annotations

import argparse
import ast
import logging
import re
from collections.abc import Iterable
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings
from django.core.management import find_commands, load_command_class
from django.core.management.base import BaseCommand

from annotation.models import Batch

try:
    from mkdocs.commands.build import build as mkdocs_build
    from mkdocs.config import load_config
    from mkdocs.exceptions import Abort
except ImportError:  # pragma: no cover - mkdocs is in requirements-test.txt; CI always has it
    mkdocs_build = None

REPO = Path(settings.BASE_DIR)
DOCS = REPO / "docs"
README = REPO / "README.md"
COMMANDS_PAGE = DOCS / "reference" / "commands.md"
CONFIGURATION_PAGE = DOCS / "reference" / "configuration.md"
CODES_PAGE = DOCS / "reference" / "codes.md"
HIT_FORMS_PAGE = DOCS / "reference" / "hit-forms.md"

#: Markdown headings and links, as the README and the pages use them.
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
COMMAND_HEADING = re.compile(r"^## `([a-z0-9_]+)`\s*$")
#: A table row whose first cell starts with a code span: the argument (or code, variable) it documents.
ROW_FIRST_CELL = re.compile(r"^\|\s*`([^`]+)`")
#: Where the code reads an environment variable.
ENV_READ = re.compile(
    r"""(?:os\.environ\.get|os\.getenv|os\.environ\.setdefault|env_bool)\(\s*["']([A-Z][A-Z0-9_]+)["']"""
    r"""|os\.environ\[\s*["']([A-Z][A-Z0-9_]+)["']\s*\]"""
)
#: Read by the code but documented by Django, not by crowdqa.
FOREIGN_VARIABLES = frozenset({"DJANGO_SETTINGS_MODULE"})
README_MAX_LINES = 150
MAX_TABLE_CELL_CHARS = 1_000


# --- the site ----------------------------------------------------------------------------------------


def test_site__builds_strictly(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """``mkdocs build --strict``: every page in the navigation, every link and anchor resolves."""
    if mkdocs_build is None:
        pytest.skip("mkdocs is not installed (it is in requirements-test.txt): the docs site is not built")
    config = load_config(config_file=str(REPO / "mkdocs.yml"), site_dir=str(tmp_path / "site"), strict=True)
    with caplog.at_level(logging.WARNING, logger="mkdocs"):
        try:
            mkdocs_build(config)
        except Abort as exc:
            warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
            pytest.fail(f"mkdocs build --strict: {exc}\n" + "\n".join(warnings))
    assert (tmp_path / "site" / "reference" / "commands" / "index.html").is_file()


# --- links -------------------------------------------------------------------------------------------


def slugify(heading: str) -> str:
    """The anchor Python-Markdown's ``toc`` extension (MkDocs' default) gives a heading's text."""
    text = re.sub(r"[`*_]{1,2}(?=\S)|(?<=\S)[`*_]{1,2}", "", heading)  # inline markup is not in the id
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors_of(path: Path) -> set[str]:
    """The heading anchors of a Markdown file (code blocks skipped)."""
    found: set[str] = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := HEADING.match(line)):
            found.add(slugify(match.group(2)))
    return found


def broken_links(source: Path) -> list[str]:
    """The relative links of ``source`` whose file or heading anchor does not exist."""
    problems = []
    text = re.sub(r"```.*?```", "", source.read_text(encoding="utf-8"), flags=re.S)
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        path = (source.parent / path_part).resolve() if path_part else source
        if not path.exists():
            problems.append(f"{source.name}: link {target!r}: no file {path}")
        elif anchor and path.suffix == ".md" and anchor not in anchors_of(path):
            problems.append(
                f"{source.name}: link {target!r}: no heading with anchor #{anchor} in {path.name}"
            )
    return problems


def test_readme__links_resolve() -> None:
    assert broken_links(README) == []


def test_readme__links_into_docs() -> None:
    """The README says where to go next: the reference lives in docs/, and the README links to it."""
    text = README.read_text(encoding="utf-8")
    for page in ("docs/reference/commands.md", "docs/reference/configuration.md", "docs/architecture.md"):
        assert f"]({page})" in text, page


def test_broken_links__are_reported(tmp_path: Path) -> None:
    """The link checker is live: a missing file and a missing anchor are both reported."""
    (tmp_path / "page.md").write_text("# Title\n\n## A `code` section\n", encoding="utf-8")
    source = tmp_path / "README.md"
    source.write_text(
        "[ok](page.md#a-code-section) [web](https://example.org/x.md)\n"
        "[gone](missing.md) [no anchor](page.md#nope)\n",
        encoding="utf-8",
    )
    problems = broken_links(source)
    assert len(problems) == 2
    assert "missing.md" in problems[0] and "#nope" in problems[1]


def test_readme__fits_on_a_screen_or_two() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) < README_MAX_LINES
    assert "scripts/demo.sh" in README.read_text(encoding="utf-8")
    assert "scripts/test.sh" in README.read_text(encoding="utf-8")


def missing_paths(page: Path) -> list[str]:
    """The repository paths a page names in code spans (``worker/admission.py``) that do not exist.

    A span counts as a path when its first part is a top-level entry of the repository and it has a
    ``/`` or a file suffix; spans with placeholders (``{split}``, ``<name>``, ``*``) are left alone.
    """
    top = {p.name for p in REPO.iterdir() if not p.name.startswith(".")} - {"var", "site"}
    missing = []
    for span in re.findall(r"`([^`\s]+)`", page.read_text(encoding="utf-8")):
        path = span.removesuffix("...")
        if any(c in path for c in "{}<>*$") or path.split("/")[0] not in top:
            continue
        looks_like_a_path = "/" in path or re.search(r"\.(py|sh|md|toml|yml|txt|json)$", path)
        if looks_like_a_path and not (REPO / path).exists():
            missing.append(span)
    return missing


@pytest.mark.parametrize(
    "path", [README, *sorted(DOCS.rglob("*.md"))], ids=lambda p: str(p.relative_to(REPO))
)
def test_pages__name_files_that_exist(path: Path) -> None:
    """A file moved or renamed takes its mentions in the docs along."""
    assert missing_paths(path) == []


def test_missing_paths__are_reported(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("`worker/admission.py` `annotation/nowhere.py` `scripts/` `syllabi/{split}.json`\n")
    assert missing_paths(page) == ["annotation/nowhere.py"]


@pytest.mark.parametrize(
    "path", [README, *sorted(DOCS.rglob("*.md"))], ids=lambda p: str(p.relative_to(REPO))
)
def test_tables__have_no_giant_cells(path: Path) -> None:
    """A table cell of 1,000 characters is a page squeezed into a cell: give it a section instead."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("|"):
            longest = max(len(cell) for cell in line.split("|"))
            assert longest < MAX_TABLE_CELL_CHARS, f"{path.name} line {number}: a {longest}-character cell"


# --- the command reference ---------------------------------------------------------------------------


def own_app_paths() -> dict[str, Path]:
    """App name -> folder, for the apps whose code is this repository's.

    A virtualenv made inside the checkout (as CI's set-up does) also lies under the repository, so its
    installed apps (Django's own, axes, DRF) are told apart by their ``site-packages`` folder.
    """
    found = {}
    for config in apps.get_app_configs():
        path = Path(config.path).resolve()
        if path.is_relative_to(REPO) and "site-packages" not in path.parts:
            found[config.name] = path
    return found


def project_commands() -> dict[str, str]:
    """Command name -> app name, for the management commands of the apps in this repository."""
    commands = {}
    for app, path in own_app_paths().items():
        for name in find_commands(str(path / "management")):
            commands[name] = app
    return commands


def _django_action_keys() -> set[tuple[tuple[str, ...], type]]:
    """The arguments Django adds to every command (``--verbosity``, ``--settings`` ...)."""
    parser = BaseCommand().create_parser("manage.py", "base")
    return {(tuple(action.option_strings), type(action)) for action in parser._actions}


def parser_arguments(parser: argparse.ArgumentParser) -> set[str]:
    """The arguments a command's parser defines beyond Django's own, as the reference names them.

    An option by its longest option string (``--dry-run``), a positional argument by its name in capitals
    (``DIR``). Hidden options (``help=SUPPRESS``) are left out. An option replacing one of Django's (e.g.
    ``export_release --version``) is a different action, so it counts.
    """
    django_keys = _django_action_keys()
    found = set()
    for action in parser._actions:
        if (tuple(action.option_strings), type(action)) in django_keys or action.help == argparse.SUPPRESS:
            continue
        found.add(max(action.option_strings, key=len) if action.option_strings else action.dest.upper())
    return found


def command_arguments() -> dict[str, set[str]]:
    """Command name -> the arguments its parser defines, for every command of the apps."""
    return {
        name: parser_arguments(load_command_class(app, name).create_parser("manage.py", name))
        for name, app in project_commands().items()
    }


def reference_sections(text: str) -> dict[str, list[str]]:
    """Command name -> the arguments its ``## `name``` section's tables document, in order.

    A row's first cell names the argument: ```--option VALUE``` or a positional ```DIR``` (``PATHS...``
    for one taken several times). Rows of tables outside a command section are not read.
    """
    sections: dict[str, list[str]] = {}
    current: str | None = None
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        if line.startswith("#"):
            match = COMMAND_HEADING.match(line)
            current = match.group(1) if match else None
            if current is not None:
                sections.setdefault(current, [])
            continue
        cell = ROW_FIRST_CELL.match(line)
        if current is not None and cell:
            sections[current].append(cell.group(1).split()[0].removesuffix("..."))
    return sections


def reference_problems(sections: dict[str, list[str]], commands: dict[str, set[str]]) -> list[str]:
    """Where the reference and the commands disagree, one line each (empty when they agree)."""
    problems = []
    for name in sorted(commands.keys() - sections.keys()):
        problems.append(f"{name}: the command has no '## `{name}`' section")
    for name in sorted(sections.keys() - commands.keys()):
        problems.append(f"{name}: a section for a command that does not exist")
    for name in sorted(commands.keys() & sections.keys()):
        documented = sections[name]
        for argument in sorted({a for a in documented if documented.count(a) > 1}):
            problems.append(f"{name}: {argument} has more than one row")
        for argument in sorted(commands[name] - set(documented)):
            problems.append(f"{name}: {argument} is defined by the command but not documented")
        for argument in sorted(set(documented) - commands[name]):
            problems.append(f"{name}: {argument} is documented but the command does not define it")
    return problems


def test_command_reference__matches_the_commands() -> None:
    sections = reference_sections(COMMANDS_PAGE.read_text(encoding="utf-8"))
    assert reference_problems(sections, command_arguments()) == []


def test_command_reference__finds_the_commands_and_options() -> None:
    """The readers see what is there: the checks above compare something, not two empty sets."""
    commands = command_arguments()
    assert {"import_syllabusqa", "launch_batch", "export_release", "run_benchmark"} <= commands.keys()
    assert {"--kind", "--corpus", "--dry-run"} <= commands["launch_batch"]
    assert "DIR" in commands["import_syllabusqa"]
    assert "--version" in commands["export_release"]  # its own option, replacing Django's
    assert "--verbosity" not in commands["launch_batch"]
    sections = reference_sections(COMMANDS_PAGE.read_text(encoding="utf-8"))
    assert sections["import_corpus"] == ["NAME", "PATHS", "--min-paragraph-chars"]


def test_command_reference__fails_on_an_undocumented_option(monkeypatch: pytest.MonkeyPatch) -> None:
    """A command that gains an option nobody documented fails the check."""
    command_class = type(load_command_class(project_commands()["sync_batches"], "sync_batches"))
    add_arguments = command_class.add_arguments

    def with_new_option(self: BaseCommand, parser: argparse.ArgumentParser) -> None:
        add_arguments(self, parser)
        parser.add_argument("--since", help="A new option, not documented.")

    monkeypatch.setattr(command_class, "add_arguments", with_new_option)
    sections = reference_sections(COMMANDS_PAGE.read_text(encoding="utf-8"))
    assert reference_problems(sections, command_arguments()) == [
        "sync_batches: --since is defined by the command but not documented"
    ]


def test_command_reference__fails_on_stale_or_missing_rows() -> None:
    text = COMMANDS_PAGE.read_text(encoding="utf-8")
    commands = command_arguments()
    without_row = text.replace("| `--dry-run` |", "| dry run |")
    assert reference_problems(reference_sections(without_row), commands) == [
        "launch_batch: --dry-run is defined by the command but not documented"
    ]
    stale = text.replace("| `--dry-run` |", "| `--dry-run` | x |\n| `--wet-run` |")
    assert reference_problems(reference_sections(stale), commands) == [
        "launch_batch: --wet-run is documented but the command does not define it"
    ]
    without_section = text.replace("## `load_demo`", "## Loading the demo")
    assert reference_problems(reference_sections(without_section), commands) == [
        "load_demo: the command has no '## `load_demo`' section"
    ]


# --- the other reference pages -----------------------------------------------------------------------


def documented_names(path: Path) -> set[str]:
    """Every name in a code span of a page (variables, codes, kinds)."""
    return set(re.findall(r"`([^`\s]+)`", path.read_text(encoding="utf-8")))


def environment_variables(roots: Iterable[str]) -> dict[str, str]:
    """Variable -> a file that reads it, for every environment variable the code under ``roots`` reads."""
    found: dict[str, str] = {}
    for root in roots:
        for path in sorted((REPO / root).rglob("*.py")):
            for match in ENV_READ.finditer(path.read_text(encoding="utf-8")):
                found.setdefault(match.group(1) or match.group(2), str(path.relative_to(REPO)))
    return found


def code_roots() -> list[str]:
    """The folders of the apps in this repository, and ``config``: what reads the environment."""
    roots = {str(path.relative_to(REPO)) for path in own_app_paths().values()}
    return sorted(roots | {"config"})


def test_configuration__documents_every_environment_variable() -> None:
    assert {"annotation", "crowd", "exports", "config"} <= set(code_roots())
    variables = environment_variables(code_roots())
    assert {"DATABASE_URL", "DJANGO_SECRET_KEY", "CROWDQA_DEMO", "PROLIFIC_API_TOKEN"} <= variables.keys()
    documented = documented_names(CONFIGURATION_PAGE)
    missing = {
        v: where for v, where in variables.items() if v not in documented and v not in FOREIGN_VARIABLES
    }
    assert missing == {}, "read by the code but not in docs/reference/configuration.md"


def module_strings(path: Path, name: str) -> set[str]:
    """The strings of module-level ``name`` in ``path``: a tuple's items or a dict's keys (read with ast)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                value = node.value
                items = value.keys if isinstance(value, ast.Dict) else getattr(value, "elts", [])
                return {item.value for item in items if isinstance(item, ast.Constant)}
    raise AssertionError(f"{path}: no module-level {name}")


def test_codes__lists_every_rule_and_flag() -> None:
    rules = module_strings(REPO / "filters" / "sentence_rules.py", "RULE_CODES")
    flags = module_strings(REPO / "annotation" / "qc" / "common.py", "SEVERITY")
    assert len(rules) == 16 and len(flags) >= 19
    documented = documented_names(CODES_PAGE)
    assert rules - documented == set()
    assert flags - documented == set()


def test_hit_forms__has_a_section_per_hit_kind() -> None:
    headings = [
        line for line in HIT_FORMS_PAGE.read_text(encoding="utf-8").splitlines() if line.startswith("## ")
    ]
    missing = [kind for kind in Batch.Kind.values if not any(f"(`{kind}`)" in h for h in headings)]
    assert missing == []


def test_sources__cite_the_docs_not_an_outside_design_document() -> None:
    """The design contracts live in docs/; a citation of a DESIGN.md outside the repository is stale."""
    skipped = {".git", ".venv", "var", "site", "node_modules", "__pycache__"}
    citing = [
        str(path.relative_to(REPO))
        for path in REPO.rglob("*")
        if path.suffix in {".py", ".md", ".html", ".sh", ".txt", ".toml", ".yml"}
        and not skipped.intersection(path.relative_to(REPO).parts)
        and path.is_file()
        and path != Path(__file__)
        and "DESIGN.md" in path.read_text(encoding="utf-8", errors="replace")
    ]
    assert citing == []
