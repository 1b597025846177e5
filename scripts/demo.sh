#!/usr/bin/env bash
# Quick start: set everything up, load the demo data, and run crowdqa (web server + Celery worker) on
# the embedded defaults: SQLite in var/ and a file-system Celery broker, so no Redis or PostgreSQL.
# Stop with Ctrl-C. HOST (default 127.0.0.1: this machine only) and PORT (default 8000) choose where it
# listens; researchers sign in as admin with the password it prints.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

# The demo may run on the built-in development key (system check crowdqa.E001 refuses it elsewhere).
export CROWDQA_DEMO="${CROWDQA_DEMO:-1}"
export DJANGO_SETTINGS_MODULE=config.settings
PORT="${PORT:-8000}"
HOST="${HOST:-127.0.0.1}"
PY=.venv/bin/python
mkdir -p var/log

export PUBLIC_BASE_URL="${PUBLIC_BASE_URL:-http://localhost:${PORT}}"
$PY manage.py migrate --noinput -v0
summary=$($PY manage.py load_demo | tail -n 1)
echo "$summary" | $PY -c 'import json, sys; b = json.load(sys.stdin)["work"]["batches"]; print("Demo data ready: corpora demo-syllabi and demo-textbook; local batches open for workers: " + ", ".join(k + " (batch " + str(v.get("id")) + ")" for k, v in b.items()))'
$PY manage.py collectstatic --noinput -v0
$PY manage.py ensure_admin | sed '$d'  # its last line is the JSON summary, for scripts
# A one-time login link for a local worker on the demo syllabus batch (each run prints a fresh one).
batch=$(echo "$summary" | $PY -c 'import json, sys; print(json.load(sys.stdin)["work"]["batches"]["syllabus_qa"]["id"])')
invite=$($PY manage.py invite_workers --batch "$batch" --count 1 --label "demo worker" | tail -n 1 \
  | $PY -c 'import json, sys; print(json.load(sys.stdin)["urls"][0])')

# Below the web workers' CPU priority, as deployed (docs/deployment.md): a burst of follow-ups waits for the
# HIT pages in flight instead of slowing them.
nice -n 10 .venv/bin/celery -A config worker -B --schedule var/celerybeat-schedule -Q default,gpu -n "demo@%h" --pool solo \
  --without-mingle --without-gossip --without-heartbeat \
  --loglevel INFO >var/log/worker.log 2>&1 &
worker=$!
trap 'kill "$worker" 2>/dev/null || true; wait "$worker" 2>/dev/null || true' EXIT INT TERM
echo "crowdqa is running on ${HOST}:${PORT}: sign in at http://localhost:${PORT}/accounts/login/ as admin"
echo "  (password in var/admin-password.txt; logs: var/log/access.log and var/log/worker.log)"
echo "Work on the demo HITs as a local crowd worker: ${invite}"
.venv/bin/gunicorn config.wsgi --bind "${HOST}:${PORT}" --workers 2 --access-logfile var/log/access.log --log-level warning
