"""Where gunicorn's workers keep their heartbeat file (``worker_tmp_dir`` in ``gunicorn.conf.py``).

A worker touches that file on every turn of its event loop; on a disk-backed filesystem each touch is
journal work (and can wait behind PostgreSQL's WAL syncs on the same disk), so the file belongs on a
memory filesystem, as gunicorn's documentation recommends.
"""

from __future__ import annotations

import os
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _filesystem_of(path: str) -> str:
    """The type of the filesystem ``path`` is on, from the longest matching mount point."""
    best, kind = "", ""
    for line in Path("/proc/mounts").read_text().splitlines():
        _, mount, fstype, *_ = line.split()
        if (path == mount or path.startswith(mount.rstrip("/") + "/")) and len(mount) > len(best):
            best, kind = mount, fstype
    return kind


@pytest.mark.skipif(not Path("/proc/mounts").exists(), reason="reads the mount table of Linux")
def test_heartbeat_file__on_a_memory_filesystem() -> None:
    conf = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    if not os.path.isdir("/dev/shm"):
        assert conf["worker_tmp_dir"] is None  # gunicorn's default: the temporary directory
        return
    assert conf["worker_tmp_dir"] == "/dev/shm"
    assert _filesystem_of(conf["worker_tmp_dir"]) == "tmpfs"
