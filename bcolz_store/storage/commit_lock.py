"""The commit lock: one writer at a time applies commits to a dataset.

Creating a commit record is atomic (the commit point), but applying it
rewrites files in place under bcolz's names (``meta/sizes``, the leftover
chunk, the consolidated metadata).  Two writers applying at once, or one
applying an older record after a newer one was applied, would put an older
commit's files over a newer one's.  So the step from checking the generation
to the end of applying runs under this lock, and so does rolling forward a
record that a dead writer left unapplied.  Staging (compressing and writing
blobs) needs no lock, and readers never take it.

* :class:`FileCommitLock`, on a local disk: an OS lock (``flock``) on the
  file ``.bcolz_store-journal/commit.lock``.  The kernel releases it when its
  process dies, so a killed writer's commit is finished at once by the next
  writer, and a holder is always alive: no timing assumption.
* :class:`ObjectCommitLock`, on every other store: an object under the same
  key, created only if absent (S3's ``If-None-Match``), holding a nonce.  A
  writer that finds it held waits with a jittered exponential backoff; one
  that sees the same nonce there for a whole lease (:attr:`lease`, its own
  clock: no clocks are compared) takes the holder for dead and removes the
  object, only while it still holds that nonce (S3's conditional delete).
  The holder renews the nonce every third of a lease while it applies
  (:meth:`CommitLock.confirm`, before each write) and stops applying when it
  finds the lock taken.  The timing assumption: a live holder never spends
  more than two thirds of a lease between a confirmation and the write it
  guards.

Source: this library's own protocol (docs/durability.md), kartothek's lesson
(seeds/003) that state changes by atomic commits readers follow without locks.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import stat
import threading
import time
import uuid
import weakref

from ..errors import (ConcurrentWriteError, DatasetNotFoundError, FormatError, LockLostError,
                      LockTimeoutError)

__all__ = ["COMMIT_LOCK_NAME", "CommitLock", "FileCommitLock", "LockLostError",
           "ObjectCommitLock"]

#: The lock's name inside the journal folder.
COMMIT_LOCK_NAME = "commit.lock"
# A lock object holds a few dozen bytes; anything larger is not ours.
LOCK_OBJECT_LIMIT = 4096


class CommitLock:
    """A lock that one holder takes several times (:meth:`hold` nests)."""

    def __init__(self):
        self.depth = 0

    @property
    def held(self) -> bool:
        return self.depth > 0

    @property
    def intact(self) -> bool:
        """Held, and (for a lock that can be lost) not lost."""
        return self.held

    @contextlib.contextmanager
    def hold(self, timeout: float):
        """Hold the lock for the block (taken only by the outermost block).

        Raises
        ------
        LockTimeoutError
            When another writer held it for ``timeout`` seconds.
        """
        if self.depth == 0:
            self._acquire(timeout)
        self.depth += 1
        try:
            yield self
        finally:
            self.depth -= 1
            if self.depth == 0:
                self._release()

    def confirm(self) -> None:
        """Before a write made under the lock: make sure it is still held.

        Raises
        ------
        LockLostError
            When another writer took it over.
        """

    def _acquire(self, timeout: float) -> None:
        raise NotImplementedError

    def _release(self) -> None:
        raise NotImplementedError


def _backoff(attempt: int, base: float, cap: float) -> float:
    """Seconds before the next try: uniform in [0, min(cap, base * 2**attempt)]."""
    return random.uniform(0, min(cap, base * 2 ** min(attempt, 30)))


# File locks held in this process: a child forked while one is held shares
# its open file description, which would keep the lock held for as long as
# the child lives; the child closes its copies at once.
_HELD_FILES: "weakref.WeakSet" = weakref.WeakSet()
# Lock objects held in this process: a child forked meanwhile holds none of
# them (its release would remove the parent's lock object).
_HELD_OBJECTS: "weakref.WeakSet" = weakref.WeakSet()


def _close_inherited_locks() -> None:
    for lock in list(_HELD_FILES):
        fd, lock._fd = lock._fd, None
        lock.depth = 0
        if isinstance(fd, int):
            with contextlib.suppress(OSError):
                os.close(fd)
    for lock in list(_HELD_OBJECTS):
        lock._mutex = threading.Lock()      # a thread of the parent may have held it
        lock._content, lock._stop = None, None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_inherited_locks)


class FileCommitLock(CommitLock):
    """An OS lock on a file of a local disk (see the module docstring).

    Parameters
    ----------
    path : str
        The lock file; created if missing, never read, written or removed.
    prepare : callable, optional
        Called before the file is opened (makes and checks its folder).
    """

    def __init__(self, path: str, prepare=None):
        super().__init__()
        self.path = path
        self.prepare = prepare
        self._fd = None

    def _open(self) -> int:
        if self.prepare is not None:
            self.prepare()
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | \
            getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(self.path, flags, 0o644)
        except OSError as err:
            try:
                mode = os.lstat(self.path).st_mode
            except OSError:
                raise err from None
            if not stat.S_ISREG(mode):      # a symlink (O_NOFOLLOW), a folder...
                raise FormatError(f"{self.path}: the commit lock must be a regular file, "
                                  f"not a symlink, folder or device") from err
            raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise FormatError(f"{self.path}: the commit lock must be a regular file, not a "
                              f"FIFO or device")
        return fd

    def _acquire(self, timeout: float) -> None:
        try:
            import fcntl
        except ImportError:         # no flock (Windows): filelock's own OS lock
            import filelock
            self._fd = filelock.FileLock(self.path, timeout=timeout)
            try:
                self._fd.acquire()
            except filelock.Timeout as err:
                raise LockTimeoutError(f"{self.path}: another writer held the commit lock "
                                       f"for {timeout} s") from err
            return
        fd = self._open()
        started = time.monotonic()
        try:
            for attempt in range(1 << 62):
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() - started >= timeout:
                        raise LockTimeoutError(f"{self.path}: another writer held the "
                                               f"commit lock for {timeout} s") from None
                    time.sleep(_backoff(attempt, 0.0001, 0.002))
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        _HELD_FILES.add(self)

    def _release(self) -> None:
        fd, self._fd = self._fd, None
        _HELD_FILES.discard(self)
        if fd is None:
            return
        if isinstance(fd, int):
            os.close(fd)            # releases the flock
        else:
            fd.release()


class ObjectCommitLock(CommitLock):
    """A lock object in a store without OS locks (see the module docstring).

    Parameters
    ----------
    store : Store
        The dataset's store; its :meth:`~.base.Store.put_if_absent`,
        :meth:`~.base.Store.delete_if` and :meth:`~.base.Store.replace_if`
        are atomic on S3 and in memory, and check-then-act elsewhere.
    key : str
        The lock object's key.
    lease : float
        Seconds after which a nonce that has not changed is taken for a dead
        holder's.

    Attributes
    ----------
    heartbeat : bool
        Renew the nonce from a thread of its own every third of a lease while
        the lock is held (default), so that a slow request of the holder does
        not cost it the lock; without it, only :meth:`confirm` renews.
    """

    heartbeat = True

    def __init__(self, store, key: str, lease: float):
        super().__init__()
        self.store = store
        self.key = key
        self.lease = float(lease)
        self._content = None
        self._renewed = 0.0
        self._mutex = threading.Lock()     # the holder, its threads and the heartbeat
        self._stop = None

    @property
    def intact(self) -> bool:
        with self._mutex:
            return self.held and self._content is not None

    def _nonce(self) -> bytes:
        return json.dumps({"holder": uuid.uuid4().hex[:16],
                           "nonce": uuid.uuid4().hex}).encode("ascii")

    def _current(self):
        """The lock object's bytes (None when there is none)."""
        try:
            return self.store.get(self.key, LOCK_OBJECT_LIMIT)
        except DatasetNotFoundError:
            return None

    def _acquire(self, timeout: float) -> None:
        started = time.monotonic()
        seen, seen_since = None, 0.0
        free = True         # worth trying to create it (the last look found none)
        refused = 0         # creates in a row that failed, nothing there afterwards
        vanished = 0        # creates in a row answered "exists", nothing there afterwards
        for attempt in range(1 << 62):
            error = None
            if free:
                mine = self._nonce()
                try:
                    self.store.put_if_absent(self.key, mine)
                    return self._took(mine)
                except ConcurrentWriteError:
                    pass
                except OSError as err:
                    error = err     # the answer may be lost: the nonce is ours if it is there
            try:
                current, known = self._current(), True
            except FormatError as err:
                raise FormatError(f"{self.store.path(self.key)}: not a commit lock object "
                                  f"({err}); remove it if no writer is running") from err
            except OSError:
                current, known = seen, False
            now = time.monotonic()
            if known:
                if free and current == mine:
                    return self._took(mine)     # a lost answer, or a retry answered "exists"
                refused = refused + 1 if current is None and error is not None else 0
                if refused >= 4:
                    raise error                 # the medium refuses to create it
                free = current is None
                vanished = vanished + 1 if free and error is None else 0
                if vanished == 1:
                    continue                    # released since the create met it: at once
                # Again "exists" to the create and none to the read (a store that
                # answers inconsistently): backed off, within the timeout, below.
                if current is not None:
                    if current != seen:
                        seen, seen_since = current, now    # a new holder, or one that renewed
                    elif now - seen_since >= self.lease:
                        # The same nonce for a whole lease: its holder is dead.
                        with contextlib.suppress(OSError):
                            self.store.delete_if(self.key, current)
                        seen, free = None, True
                        continue
            if now - started >= timeout:
                why = "the store kept answering that it exists while reading it found " \
                    "none" if vanished else "another writer held the commit lock"
                raise LockTimeoutError(f"{self.store.path(self.key)}: {why} for {timeout} s")
            # Polled with one read at a time; created once the read finds none.
            time.sleep(_backoff(attempt, 0.002, min(0.1, self.lease / 4)))

    def _took(self, content: bytes) -> None:
        self._content = content
        self._renewed = time.monotonic()
        _HELD_OBJECTS.add(self)
        if self.heartbeat:
            self._stop = threading.Event()
            threading.Thread(target=self._beat, args=(self._stop,), daemon=True,
                             name="bcolz_store-commit-lock").start()

    def _beat(self, stop) -> None:
        """Renew every third of a lease until released (or lost)."""
        while not stop.wait(self.lease / 3):
            try:
                self._renew()
            except LockLostError:
                return
            except Exception:   # a failed request: tried again; confirm() judges the age
                continue

    def _renew(self) -> None:
        with self._mutex:
            if self._content is None:
                raise LockLostError(f"{self.store.path(self.key)}: the commit lock is not held")
            new = self._nonce()
            try:
                swapped = self.store.replace_if(self.key, new, self._content)
            except OSError:             # the answer may be lost: read what is there
                current = self._current()
                if current not in (new, self._content):
                    swapped = False
                elif current == new:
                    swapped = True
                else:
                    raise
            if not swapped:
                self._content = None
                raise LockLostError(f"{self.store.path(self.key)}: another writer took over "
                                    f"the commit lock (this writer stalled for more than "
                                    f"the lease, {self.lease} s)")
            self._content = new
            self._renewed = time.monotonic()

    def confirm(self) -> None:
        """Before a write under the lock: renew it unless that was done less
        than a third of a lease ago (by the heartbeat, or here).

        Raises
        ------
        LockLostError
            When another writer took the lock over, or it could not be renewed.
        """
        with self._mutex:
            content, renewed = self._content, self._renewed
        if content is None:
            raise LockLostError(f"{self.store.path(self.key)}: the commit lock is not held")
        if time.monotonic() - renewed < self.lease / 3:
            return
        try:
            self._renew()
        except (OSError, FormatError) as err:
            raise LockLostError(f"{self.store.path(self.key)}: the commit lock could not be "
                                f"renewed ({err})") from err

    def _release(self) -> None:
        if self._stop is not None:
            self._stop.set()
            self._stop = None
        with self._mutex:
            content, self._content = self._content, None
        if content is None:
            return
        try:
            self.store.delete_if(self.key, content)
        except OSError:
            pass        # left behind: the next writer takes it over after the lease
