"""Fuzz every endpoint that takes input at scale: requests sent, status classes per endpoint, every 5xx.

Runs the property-based fuzz of ``tests/security/fuzzing.py`` (hypothesis strategies of hostile
requests: NUL bytes and lone surrogates in every field, bodies in other charsets, malformed multipart,
JSON with NaN) through Django's test client with CSRF enforced, on a throw-away test database
(``test_<name>`` of ``DATABASE_URL``; SQLite when unset). Nothing is asserted: it prints what came back.
Target: 0 responses >= 500 in at least 10,000 requests.

    DATABASE_URL=postgres://postgres@127.0.0.1:5440/crowdqa_bench DJANGO_SECRET_KEY=... \\
        .venv/bin/python benchmarks/fuzz_endpoints.py --requests 10000
"""

from __future__ import annotations

import argparse
import collections
import logging
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.test_settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402
from hypothesis import HealthCheck, given  # noqa: E402
from hypothesis import settings as hsettings  # noqa: E402

from tests.security.fuzzing import WEBHOOK_SECRET, FuzzRequest, build_world, requests, send  # noqa: E402


def run(total: int, seed: int) -> int:
    """Send ``total`` fuzzed requests; print the table and every 5xx. Returns the number of 5xx."""
    world = build_world()
    per_endpoint: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    failures: list[tuple[int, str, str]] = []

    @hsettings(
        max_examples=total,
        deadline=None,
        database=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(request=requests())
    def one(request: FuzzRequest) -> None:
        try:
            status, path = send(world, request)
        except Exception as exc:  # noqa: BLE001 - an exception the test client re-raises is a 500
            status, path = 500, f"{type(exc).__name__}: {exc}"[:300]
        per_endpoint[request.endpoint.name][f"{status // 100}xx"] += 1
        if status >= 500:
            failures.append((status, path, request.describe()))

    import random

    random.seed(seed)
    started = time.perf_counter()
    one()
    seconds = time.perf_counter() - started
    sent = sum(sum(c.values()) for c in per_endpoint.values())
    print(f"database: {connection.vendor}; {sent} requests in {seconds:.0f} s")
    print(f"{'endpoint':<16} {'requests':>8} {'2xx':>6} {'3xx':>6} {'4xx':>6} {'5xx':>6}")
    for name in sorted(per_endpoint):
        c = per_endpoint[name]
        print(f"{name:<16} {sum(c.values()):>8} {c['2xx']:>6} {c['3xx']:>6} {c['4xx']:>6} {c['5xx']:>6}")
    print(f"responses >= 500: {len(failures)}")
    for status, path, described in failures:
        print(f"  {status} {path}\n    {described}")
    return len(failures)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)  # refusals log warnings by design; the table says what happened
    settings.PROLIFIC_WEBHOOK_SECRET = WEBHOOK_SECRET
    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        failures = run(args.requests, args.seed)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
