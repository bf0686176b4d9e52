"""The opt-in writer lock: one writer at a time per dataset.

Readers never need it: they see committed states only (see
:mod:`bcolz_store.storage.journal`).  Writers that may run at the same time on
one dataset pass ``lock=True`` to ``open``, ``carray`` or ``ctable``; the lock is
the file ``ROOT/.bcolz_store.lock``, held with :mod:`filelock` (an OS-level
lock, released if the process dies) until ``close()``.
"""

from __future__ import annotations

import os

from ..errors import LockTimeoutError
from ..format.layout import LOCK_FILE

__all__ = ["DEFAULT_TIMEOUT", "LockTimeoutError", "acquire", "release"]

# Seconds a writer waits for another one before giving up.
DEFAULT_TIMEOUT = 60.0


def acquire(rootdir, wanted, timeout: float = DEFAULT_TIMEOUT):
    """Take the writer lock of ``rootdir`` when ``wanted``; return it (or None).

    Parameters
    ----------
    rootdir : str, os.PathLike, Store or None
    wanted : bool, float or a lock
        False: no lock.  True: wait up to ``timeout`` seconds.  A number: wait
        that many seconds.  A lock this function returned: kept (``open``
        takes the lock before loading the state, then hands it over).

    Raises
    ------
    LockTimeoutError
        When another writer keeps the lock past the timeout.
    ValueError
        When a lock is asked for an in-memory container or a non-local store.
    """
    if not wanted:
        return None
    if hasattr(wanted, "release") and hasattr(wanted, "is_locked"):
        return wanted
    if rootdir is None:
        raise ValueError("lock=True needs an on-disk container (a rootdir)")
    from .base import Store
    from .urls import is_url
    local = getattr(rootdir, "root", None) if isinstance(rootdir, Store) else rootdir
    if local is None or (isinstance(local, str) and is_url(local)
                         and not local.startswith("file://")):
        raise ValueError(f"{rootdir}: lock=True needs a local folder (on object stores, "
                         f"concurrent writers are told apart by conditional writes)")
    import filelock
    if not isinstance(wanted, bool):
        timeout = float(wanted)
    local = os.fspath(local)
    parent = os.path.abspath(local[len("file://"):] if local.startswith("file://") else local)
    os.makedirs(parent, exist_ok=True)
    lock = filelock.FileLock(os.path.join(parent, LOCK_FILE), timeout=timeout)
    try:
        lock.acquire()
    except filelock.Timeout as err:
        raise LockTimeoutError(f"{rootdir}: another writer holds the lock "
                               f"(waited {timeout} s)") from err
    return lock


def release(lock) -> None:
    """Release a lock taken by :func:`acquire` (None is fine)."""
    if lock is not None:
        lock.release()
