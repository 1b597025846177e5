"""Time the dataset importers on a fresh SQLite database (target: SyllabusQA in under a minute).

Usage: .venv/bin/python benchmarks/import_speed.py [--data ../shared/data]
Prints one line per import (first run and second, idempotent run) and a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from config.shared_data import shared_data_dir  # noqa: E402

IMPORTS = (("import_syllabusqa", "syllabusqa"), ("import_sciq", "sciq"), ("import_arc", "arc"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=shared_data_dir(), help="Folder holding the datasets.")
    args = parser.parse_args()
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "CROWDQA_VAR_DIR": tmp}
        env.pop("DATABASE_URL", None)
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=REPO, env=env, check=True)
        for command, folder in IMPORTS:
            for run in ("first", "second"):
                start = time.perf_counter()
                out = subprocess.run(
                    [sys.executable, "manage.py", command, str(args.data / folder)],
                    cwd=REPO,
                    env=env,
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                seconds = time.perf_counter() - start
                summary = json.loads(out.strip().splitlines()[-1])
                results.setdefault(command, {})[run] = round(seconds, 2)
                print(f"{command} ({run} run): {seconds:.1f} s, qa_pairs {summary['qa_pairs']}")
    print(json.dumps(results, sort_keys=True))


if __name__ == "__main__":
    main()
