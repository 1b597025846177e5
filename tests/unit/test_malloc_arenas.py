"""The web server's malloc arenas (``config/malloc_arenas.py``, ``on_starting`` in ``gunicorn.conf.py``).

Each case runs in a fresh interpreter, as the gunicorn master is: it loads ``gunicorn.conf.py``, calls the
master's ``on_starting`` hook, starts 8 threads that each allocate (a gthread worker's threads), and
counts the arenas glibc made (``malloc_info``'s ``<heap>`` elements, malloc_info(3)).
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import ctypes, ctypes.util, runpy, sys, tempfile, threading
conf = runpy.run_path(sys.argv[1])
conf["on_starting"](None)
barrier = threading.Barrier(8)
def work():
    barrier.wait()
    kept = [bytes(4096 + i) for i in range(200)]  # past pymalloc's small objects: malloc's
    barrier.wait()
threads = [threading.Thread(target=work) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = (ctypes.c_char_p, ctypes.c_char_p)
libc.malloc_info.argtypes = (ctypes.c_int, ctypes.c_void_p)
libc.fclose.argtypes = (ctypes.c_void_p,)
with tempfile.NamedTemporaryFile(suffix=".xml") as out:
    stream = libc.fopen(out.name.encode(), b"w")
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    print(open(out.name).read().count("<heap nr="))
"""

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="counts glibc's malloc arenas")


def _arenas(**environ: str) -> int:
    env = {k: v for k, v in os.environ.items() if k not in ("MALLOC_ARENA_MAX", "GUNICORN_MALLOC_ARENAS")}
    env.update(environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT / "gunicorn.conf.py")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return int(done.stdout.strip())


def test_gunicorn_master__caps_malloc_arenas_at_two_by_default() -> None:
    assert _arenas() == 2


def test_gunicorn_master__arenas_left_to_the_c_library_with_zero_or_malloc_arena_max() -> None:
    assert _arenas(GUNICORN_MALLOC_ARENAS="0") > 2  # glibc: one per thread, up to 8 per core
    assert _arenas(MALLOC_ARENA_MAX="3") == 3  # the environment's setting wins
