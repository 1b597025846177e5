#!/usr/bin/env bash
# Quick start: set everything up, load the demo data, and run crowdqa (web server + Celery worker) on
# the embedded defaults: SQLite in var/ and a file-system Celery broker, so no Redis or PostgreSQL.
# Stop with Ctrl-C. PORT (default 8000) and HOST (default 0.0.0.0) choose where it listens.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

export CROWDQA_PUBLIC_DASHBOARD="${CROWDQA_PUBLIC_DASHBOARD:-1}"
export DJANGO_SETTINGS_MODULE=config.settings
PORT="${PORT:-8000}"
HOST="${HOST:-0.0.0.0}"
PY=.venv/bin/python
mkdir -p var/log

$PY manage.py migrate --noinput -v0
$PY manage.py load_demo | tail -n 1
$PY manage.py collectstatic --noinput -v0
$PY manage.py ensure_admin

.venv/bin/celery -A config worker -B --schedule var/celerybeat-schedule -Q default,gpu -n "demo@%h" --pool solo \
  --without-mingle --without-gossip \
  --loglevel INFO >var/log/worker.log 2>&1 &
worker=$!
trap 'kill "$worker" 2>/dev/null || true; wait "$worker" 2>/dev/null || true' EXIT INT TERM
echo "crowdqa is running: http://localhost:${PORT}/  (admin: http://localhost:${PORT}/admin/, worker log: var/log/worker.log)"
.venv/bin/gunicorn config.wsgi --bind "${HOST}:${PORT}" --workers 2 --access-logfile - --log-level warning
