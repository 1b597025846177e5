#!/usr/bin/env bash
# Run crowdqa's whole test suite (unit, integration with real Redis and Celery workers, browser) and the
# linter. Uses DATABASE_URL when set (CI sets PostgreSQL), else SQLite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
.venv/bin/ruff check .
.venv/bin/python -m pytest "$@"
