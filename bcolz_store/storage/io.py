"""Background threads for writes, file writes, and fsync helpers.

Blobs of 64 kB and more are written, checksummed and (on local folders)
fsynced on background threads while the caller compresses the next chunk.
``"cpu"`` threads write and checksum (md5 releases the GIL), ``"io"`` threads
wait for fsync, so that a slow disk never holds up checksumming.  A file is
written with one ``writev`` of its parts (no copy of them), and its fsync is
given the open file, so no thread opens it again.  There are
as many ``"cpu"`` threads as :func:`bcolz_store.set_nthreads` asks for (at
least 2), and at least 4 ``"io"`` threads.  The pools are made on first use
(importing the package starts no thread), remade when the number of threads
changes (work already given to the old threads finishes there), and a forked child makes
its own (it inherits none of the parent's threads).
"""

from __future__ import annotations

import errno
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from .. import threads

__all__ = ["fsync_all", "fsync_dir", "fsync_file", "pool", "write_file"]

_WRITE_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
                | getattr(os, "O_BINARY", 0))

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


def write_file(path: str, parts, sync: bool = False):
    """Write the bytes-like ``parts``, one after the other, as the file
    ``path`` (created, or emptied first).

    Parameters
    ----------
    path : str
    parts : list of bytes-like
    sync : bool, default False
        Start an fsync of the file on an ``"io"`` thread, which then closes it.

    Returns
    -------
    concurrent.futures.Future or None
        With ``sync``, the fsync's Future (its result raises what fsync
        raised); else None, the file closed.

    Raises
    ------
    OSError
        When the file cannot be created or written.
    """
    fd = os.open(path, _WRITE_FLAGS, 0o666)
    try:
        _write_all(fd, parts, path)
        if sync:
            return pool("io").submit(_sync_and_close, fd)
    except BaseException:
        os.close(fd)
        raise
    os.close(fd)
    return None


def _write_all(fd: int, parts, path: str) -> None:
    """Write every byte of ``parts`` to ``fd`` (a short write continues)."""
    views = [memoryview(part).cast("B") for part in parts]
    views = [view for view in views if len(view)]
    while views:
        if hasattr(os, "writev"):
            done = os.writev(fd, views)
        else:                                   # pragma: no cover - Windows
            done = os.write(fd, views[0])
        if not done:        # (a regular file never answers so; the loop would not end)
            raise OSError(errno.EIO, "a write made no progress", path)
        while views and done >= len(views[0]):
            done -= len(views.pop(0))
        if done:
            views[0] = views[0][done:]


def _sync_and_close(fd: int) -> None:
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
