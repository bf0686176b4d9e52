"""Background threads for writes, and fsync helpers.

Blobs of 64 kB and more are written, checksummed and (on local folders)
fsynced on background threads while the caller compresses the next chunk.
``"cpu"`` threads write and checksum (md5 releases the GIL), ``"io"`` threads
wait for fsync, so that a slow disk never holds up checksumming.  There are
as many ``"cpu"`` threads as :func:`bcolz_store.set_nthreads` asks for (at
least 2), and at least 4 ``"io"`` threads.  The pools are made on first use
(importing the package starts no thread), remade when the number of threads
changes (work already given to the old threads finishes there), and a forked child makes
its own (it inherits none of the parent's threads).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

from .. import threads

__all__ = ["fsync_all", "fsync_dir", "fsync_file", "pool"]

_pools = {}
_pools_lock = threading.Lock()


def pool(kind: str) -> ThreadPoolExecutor:
    """The process's ``"cpu"`` or ``"io"`` thread pool."""
    workers = max(threads.get_nthreads(), 2 if kind == "cpu" else 4)
    with _pools_lock:
        found = _pools.get(kind)
        if found is None or found[0] != workers:
            # The old pool is dropped, not shut down: what was submitted to
            # it finishes, and its threads end once nothing refers to it.
            made = ThreadPoolExecutor(max_workers=workers,
                                      thread_name_prefix=f"bcolz_store-{kind}")
            _pools[kind] = (workers, made)
            return made
        return found[1]


def _forget_pools_in_child() -> None:
    """A forked child has none of the parent's threads: it starts its own pools."""
    global _pools_lock
    _pools.clear()
    _pools_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools_in_child)


def fsync_file(path: str) -> None:
    """fsync the file ``path``."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: str) -> None:
    """fsync the folder ``path`` (where the file system allows it)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def fsync_all(fsync_one, paths) -> None:
    """fsync several files or folders at once (the file system can merge them)."""
    paths = list(paths)
    if len(paths) == 1:
        fsync_one(paths[0])
    elif paths:
        list(pool("io").map(fsync_one, paths))
