"""gunicorn settings read automatically when gunicorn starts in the repository root.

Slow clients: a sync worker serves one connection at a time from the first byte to the last, so a few
connections that trickle their headers or body a byte every few seconds hold every worker and the site
stops answering (``/health/`` included) until the worker timeout kills them. The ``gthread`` worker
keeps an event loop that accepts connections and only hands a connection to a thread once data has
arrived; a connection still trickling holds one thread, not the worker, so with ``threads`` threads per
worker the other requests keep being served. gunicorn has no header or body read timeout of its own:
on a public server a buffering reverse proxy with read timeouts stays in front (docs/deployment.md).

Access logs go through :class:`config.access_log.RedactingLogger`, so worker ids and signed HIT links
never reach them.
"""

import os

from config.env import env_bool

logger_class = "config.access_log.RedactingLogger"

# Set in the master before it loads the application: a web process installs no job result store and
# loads Celery only to publish a job (config/settings.py, config/jobs.py).
raw_env = ["CROWDQA_WEB_SERVER=1"]

# Threads share the worker's memory (one Django process per worker); each costs a thread stack and a
# database connection.
worker_class = "gthread"
# Behind the buffering reverse proxy that docs/deployment.md puts in front of a public server
# (CROWDQA_BEHIND_PROXY=1, as deploy/systemd/crowdqa.env sets) a request reaches gunicorn whole, so a
# thread never waits on a client, only on the database: two keep a worker's core busy (one runs Python
# while the other waits) and the requests beyond them wait in the listening socket's queue. More threads
# add only requests that share a worker's core and Python's lock, some waiting far longer than others:
# at 50 users on 2 cores, alternated in one run, submit p95 103-116 ms with 2 threads against 145-155
# with 8, page p95 96-108 against 125-134, at 1.08x the completed HITs per second
# (benchmarks/RESULTS.md). Without a proxy in front, 8: a client that trickles its request holds one
# thread, not the worker (tests/integration/test_slow_clients.py). GUNICORN_THREADS wins.
threads = int(os.environ.get("GUNICORN_THREADS") or (2 if env_bool("CROWDQA_BEHIND_PROXY", False) else 8))
# A worker takes no more connections than it has threads; the rest wait in the listening socket's queue,
# which every worker takes from in arrival order. Left at gunicorn's default (1,000), each worker accepts
# whatever reaches it first and shares its one core among all of them, so under load one worker can hold
# far more requests than another: at 50 users a submit's p95 was 1.9-2.3 times its median, 1.5 with
# these settings (benchmarks/load_vs_turkle.py --variant, figures in benchmarks/RESULTS.md).
worker_connections = threads
# Every response closes its connection, as gunicorn's sync workers and nginx's upstream connections do:
# a kept-alive connection would tie its client to one worker and hold one of its few connection slots.
# A connection that sends nothing within gunicorn's 5 s wait for data is closed.
keepalive = 0
# Request line and header limits (gunicorn's defaults, stated here): oversized headers are refused
# with 400 before Django sees them.
limit_request_line = 4094
limit_request_fields = 100
limit_request_field_size = 8190

# Each worker tells the master it is alive by touching a file (``os.utime``) on every turn of its event
# loop, several times per request. In the default temporary directory, on a disk-backed filesystem, each
# touch dirties an inode for the filesystem's journal (and can block behind it while PostgreSQL syncs
# its WAL to the same disk); gunicorn's documentation recommends a memory filesystem. Throughput at 50
# users did not measurably change: two paired runs, each setting once as the variant, gave 1.09x and
# 0.94x (benchmarks/RESULTS.md). None (gunicorn's default) where there is no /dev/shm.
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None

# The master loads the application and imports what every worker would import on its first requests
# (config/warmup.py), then forks the workers: those modules sit in pages the workers share instead of a
# copy per worker. Code changes then need a restart of the master (``systemctl restart``), not a HUP.
preload_app = os.environ.get("GUNICORN_PRELOAD", "1") != "0"


# glibc's malloc arenas, capped in the master before it forks (config/malloc_arenas.py): threads that run
# Python one at a time gain nothing from an arena each, and each arena keeps what was freed in it.
# GUNICORN_MALLOC_ARENAS=0 leaves the C library's default; MALLOC_ARENA_MAX, when set, wins.
malloc_arenas = int(os.environ.get("GUNICORN_MALLOC_ARENAS", "2") or 0)


def on_starting(server: object) -> None:
    """In the master, once, before any worker or thread is started."""
    from config.malloc_arenas import cap_malloc_arenas

    cap_malloc_arenas(malloc_arenas)


def when_ready(server: object) -> None:
    """In the master, after the application loaded and before the first worker is forked."""
    if getattr(server, "cfg", None) is not None and server.cfg.preload_app:
        from config.warmup import warm

        warm()
