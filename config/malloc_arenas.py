"""Cap the C library's malloc arenas in a web server's processes (glibc's ``mallopt(M_ARENA_MAX)``).

Why: glibc gives each new thread that allocates an arena of its own, up to 8 per core, and each arena
keeps the memory freed in it. A gunicorn worker's threads run Python one at a time (the GIL), so they
gain nothing from arenas of their own; with two in all they reuse the free space of the heap the
worker inherited from the master instead of growing new arenas. Measured with 4 workers x 8 threads,
50 users claiming, opening and submitting HITs: a worker's RSS after load 68 MB against 70-71 with
glibc's default, the same throughput and latency (``benchmarks/web_worker_memory.py --claims``,
benchmarks/RESULTS.md).

``mallopt`` is glibc's documented call (mallopt(3)); ``MALLOC_ARENA_MAX`` in the environment does the
same when the process starts, and when it is set it is left to win. The limit applies to arenas made
after the call, so it is set in the master before any thread is started, and the workers it forks
inherit it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

#: glibc's ``M_ARENA_MAX`` (malloc.h)
M_ARENA_MAX = -8


def cap_malloc_arenas(count: int) -> bool:
    """Let this process's malloc use at most ``count`` arenas; True when the C library took the limit.

    Does nothing for ``count`` 0 (the C library's default), when ``MALLOC_ARENA_MAX`` is set, or where
    the C library has no ``mallopt`` or refuses the option (not glibc).
    """
    if count <= 0 or os.environ.get("MALLOC_ARENA_MAX"):
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    mallopt = getattr(ctypes.CDLL(name), "mallopt", None)
    if mallopt is None:
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt(M_ARENA_MAX, count) == 1
