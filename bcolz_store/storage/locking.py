"""The opt-in writer lock: one writer at a time per dataset.

Readers never need it: they see committed states only (see
:mod:`bcolz_store.storage.journal`).  Writers that may run at the same time on
one dataset pass ``lock=True`` to ``open``, ``carray`` or ``ctable``, and hold
the lock until ``close()``:

* on a local disk, the file ``ROOT/.bcolz_store.lock``, held with
  :mod:`filelock` (an OS-level lock, released if the process dies);
* on an object store (S3, or any fsspec filesystem), the object
  ``ROOT/.bcolz_store.lock``, created only if absent and renewed by a
  heartbeat thread while it is held (:class:`~.commit_lock.ObjectCommitLock`):
  a writer whose process dies leaves it behind, and the next writer takes it
  over once it has seen it unrenewed for the lease (``BCOLZ_STORE_LOCK_LEASE``
  seconds, 30 by default).

Without ``lock=True`` several writers still never lose or double a commit
(appends are rebased, other changes raise ``ConflictError``); the lock makes
them wait for each other instead.
"""

from __future__ import annotations

import os

from ..errors import LockTimeoutError
from ..format.layout import LOCK_FILE

__all__ = ["DEFAULT_TIMEOUT", "LockTimeoutError", "RemoteLock", "acquire", "release"]

# Seconds a writer waits for another one before giving up.
DEFAULT_TIMEOUT = 60.0


def acquire(rootdir, wanted, timeout: float = DEFAULT_TIMEOUT, storage_options=None):
    """Take the writer lock of ``rootdir`` when ``wanted``; return it (or None).

    Parameters
    ----------
    rootdir : str, os.PathLike, Store or None
        A local folder, a URL (opened with ``storage_options``) or a store.
    wanted : bool, float or a lock
        False: no lock.  True: wait up to ``timeout`` seconds.  A number: wait
        that many seconds.  A lock this function returned: kept (``open``
        takes the lock before loading the state, then hands it over).

    Raises
    ------
    LockTimeoutError
        When another writer keeps the lock past the timeout.
    ValueError
        When a lock is asked for an in-memory container or a read-only store.
    """
    if not wanted:
        return None
    if hasattr(wanted, "release") and hasattr(wanted, "is_locked"):
        return wanted
    if rootdir is None:
        raise ValueError("lock=True needs an on-disk container (a rootdir)")
    from .base import Store
    from .urls import is_url, open_store
    if not isinstance(wanted, bool):
        timeout = float(wanted)
    store = rootdir if isinstance(rootdir, Store) else None
    local = getattr(rootdir, "root", None) if store is not None else rootdir
    if store is None and isinstance(local, str) and is_url(local) and \
            not local.startswith("file://"):
        store = open_store(local, False, storage_options)
    if store is not None and getattr(store, "root", None) is None:
        if store.readonly:
            raise ValueError(f"{store.url}: lock=True needs a writable store")
        return RemoteLock(store, timeout)
    import filelock
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


class RemoteLock:
    """The writer lock of a dataset on an object store: the object
    ``.bcolz_store.lock``, held (with a heartbeat) until :meth:`release`.

    Parameters
    ----------
    store : Store
        The dataset's store.
    timeout : float
        Seconds to wait for another writer.

    Raises
    ------
    LockTimeoutError
        When another writer held it for ``timeout`` seconds.
    """

    def __init__(self, store, timeout: float):
        from .committed import LOCK_LEASE
        from .commit_lock import ObjectCommitLock
        self.store = store
        self._lock = ObjectCommitLock(store, LOCK_FILE, LOCK_LEASE)
        self._held = self._lock.hold(timeout)
        try:
            self._held.__enter__()
        except LockTimeoutError as err:
            raise LockTimeoutError(f"{store.url}: another writer holds the lock "
                                   f"(waited {timeout} s)") from err

    @property
    def is_locked(self) -> bool:
        """Held, and not taken over by another writer (after this one
        stalled for longer than the lease)."""
        return self._lock.intact

    def release(self) -> None:
        """Release the lock (nothing happens when it is released already)."""
        if self._lock.held:
            self._held.__exit__(None, None, None)
