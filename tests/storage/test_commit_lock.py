"""The commit lock (bcolz_store/storage/commit_lock.py): an OS lock on local
disks, a lock object with a lease elsewhere.

Local: a writer killed while it holds the lock never blocks the next one (the
kernel releases it), and a lock file that a hostile dataset ships as a
symlink, a FIFO or a folder is refused.  Lock objects: a dead holder is taken
over after the lease and no sooner, a live holder keeps the lock through a
long pause thanks to its heartbeat, a holder that lost the lock stops writing
and does not remove its successor's lock.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import bcolz_store
from bcolz_store.errors import FormatError, LockTimeoutError
from bcolz_store.storage.commit_lock import LockLostError, ObjectCommitLock
from bcolz_store.storage.local import LocalStore
from bcolz_store.storage.memory import MemoryStore

KEY = ".bcolz_store-journal/commit.lock"


def test_a_writer_killed_holding_the_local_lock_blocks_nobody(tmp_path):
    root = tmp_path / "c"
    bcolz_store.carray(np.arange(10), rootdir=str(root), mode="w")
    code = (
        "import sys, time\n"
        "from bcolz_store.storage.local import LocalStore\n"
        f"lock = LocalStore({str(root)!r}).commit_lock({KEY!r}, 30.0)\n"
        "with lock.hold(10):\n"
        "    print('held', flush=True)\n"
        "    time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline().strip() == b"held"
        with pytest.raises(LockTimeoutError):
            with LocalStore(str(root)).commit_lock(KEY, 30.0).hold(0.2):
                pass
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        started = time.monotonic()
        c = bcolz_store.open(str(root), mode="a")
        c.append([10])
        c.flush()
        assert time.monotonic() - started < 2       # no lease: the kernel released it
    finally:
        if proc.poll() is None:
            proc.kill()
    assert bcolz_store.open(str(root), mode="r")[:].tolist() == list(range(11))


@pytest.mark.parametrize("what", ["symlink", "fifo", "folder"])
def test_a_shipped_lock_file_that_is_not_a_file_is_refused(tmp_path, what):
    root = tmp_path / "c"
    bcolz_store.carray(np.arange(10), rootdir=str(root), mode="w")
    lock = root / KEY
    lock.unlink()
    outside = tmp_path / "outside"
    outside.write_bytes(b"keep me")
    if what == "symlink":
        os.symlink(outside, lock)
    elif what == "fifo":
        os.mkfifo(lock)
    else:
        lock.mkdir()
    c = bcolz_store.open(str(root), mode="a")
    c.append([10])
    with pytest.raises(FormatError, match="commit lock"):
        c.flush()
    assert outside.read_bytes() == b"keep me"
    assert bcolz_store.open(str(root), mode="r")[:].tolist() == list(range(10))


def _object_lock(store, lease=0.5, heartbeat=False):
    lock = ObjectCommitLock(store, KEY, lease)
    lock.heartbeat = heartbeat
    return lock


def test_a_dead_holder_is_taken_over_after_the_lease_and_no_sooner():
    store = MemoryStore()
    dead = _object_lock(store)
    dead._acquire(1.0)                      # taken, never renewed nor released
    taker = _object_lock(store)
    started = time.monotonic()
    with taker.hold(5.0):
        waited = time.monotonic() - started
        assert 0.5 <= waited < 2.0
        with pytest.raises(LockLostError, match="took over"):
            dead.confirm()                  # a third of the lease passed: it renews, and fails
        held = store.get(KEY, 4096)
        dead._release()                     # does not remove the new holder's lock
        assert store.get(KEY, 4096) == held
        taker.confirm()
    assert not store.exists(KEY)


def test_the_heartbeat_keeps_a_live_holder_through_a_long_pause():
    store = MemoryStore()
    holder = _object_lock(store, lease=0.3, heartbeat=True)
    with holder.hold(1.0):
        time.sleep(1.0)                     # more than three leases without a request
        holder.confirm()
        with pytest.raises(LockTimeoutError):
            with _object_lock(store, lease=0.3).hold(0.8):
                pass
    assert not store.exists(KEY)


def test_a_writer_that_died_after_its_record_is_rolled_forward_after_the_lease(monkeypatch):
    """On a store without OS locks a writer killed between its record and the
    end of applying it leaves the lock object behind: the next writer waits
    the lease, takes the lock over and applies the record, once."""
    from bcolz_store.storage.journal import Journal
    monkeypatch.setattr(Journal, "lock_lease", 0.5)
    store = MemoryStore()
    c = bcolz_store.carray(np.arange(5), rootdir=store, mode="w", chunklen=4)
    journal = c.dataset.journal
    monkeypatch.setattr(ObjectCommitLock, "_release", lambda self: None)     # dies holding it
    monkeypatch.setattr(ObjectCommitLock, "heartbeat", False)                 # (all of it)

    def die(*args, **kwargs):
        raise SystemExit("killed")          # after the record, before applying
    monkeypatch.setattr(journal.state, "apply", die)
    c.append([5, 6])
    with pytest.raises(SystemExit):
        c.flush()
    monkeypatch.undo()
    monkeypatch.setattr(Journal, "lock_lease", 0.5)
    assert store.exists(KEY)
    started = time.monotonic()
    again = bcolz_store.open(store, mode="a")
    assert time.monotonic() - started >= 0.5
    assert again[:].tolist() == list(range(7))
    again.append([7])
    again.flush()
    assert bcolz_store.open(store, mode="r")[:].tolist() == list(range(8))
    assert bcolz_store.verify(store).ok


def test_a_child_forked_while_the_local_lock_is_held_does_not_keep_it(tmp_path):
    """flock belongs to the open file, which a forked child shares: the child
    closes its copy at once, so the lock is free when the parent releases it
    even while the child lives on."""
    store = LocalStore(str(tmp_path / "c"))
    store.makedirs("")
    lock = store.commit_lock(KEY, 30.0)
    read, write = os.pipe()
    with lock.hold(1.0):
        pid = os.fork()
        if pid == 0:                        # the child: lives on for a while
            os.close(read)
            os.write(write, b"x")
            time.sleep(5)
            os._exit(0)
        os.close(write)
        assert os.read(read, 1) == b"x"
    try:
        with store.commit_lock(KEY, 30.0).hold(1.0):
            pass
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def test_a_child_forked_while_a_lock_object_is_held_does_not_release_it(tmp_path):
    """A forked child holds none of its parent's lock objects: releasing
    its copy (closing an inherited ``lock=True`` container does) leaves the
    parent's lock object in place."""
    store = LocalStore(str(tmp_path / "c"))
    store.makedirs("")
    lock = ObjectCommitLock(store, "lock-object", 30.0)
    lock.heartbeat = False
    with lock.hold(1.0):
        held = store.get("lock-object", 4096)
        pid = os.fork()
        if pid == 0:
            lock._release()
            os._exit(0)
        os.waitpid(pid, 0)
        assert store.get("lock-object", 4096) == held
        lock.confirm()
    assert not store.exists("lock-object")


class _RefusingStore(MemoryStore):
    """A store that refuses every create (read-only credentials)."""

    def put_if_absent(self, key, data):
        raise PermissionError(13, "access denied", self.path(key))


def test_a_store_that_refuses_the_lock_object_raises_instead_of_spinning():
    lock = _object_lock(_RefusingStore())
    started = time.monotonic()
    with pytest.raises(PermissionError, match="access denied"):
        with lock.hold(30.0):
            pass
    assert time.monotonic() - started < 5


def test_a_lock_object_too_large_to_be_one_is_refused():
    """A hostile dataset may ship anything at the lock's key."""
    store = MemoryStore()
    store.put(KEY, b"x" * 10_000)
    with pytest.raises(FormatError, match="not a commit lock object"):
        with _object_lock(store).hold(5.0):
            pass
    assert store.get(KEY, 20_000) == b"x" * 10_000


def test_a_foreign_small_lock_object_is_taken_over_after_the_lease():
    store = MemoryStore()
    store.put(KEY, b"not a lock of ours")
    started = time.monotonic()
    with _object_lock(store).hold(5.0):
        assert 0.5 <= time.monotonic() - started < 2.0
        assert store.get(KEY, 4096) != b"not a lock of ours"


def test_a_writer_that_lost_the_lock_while_applying_leaves_its_blobs(tmp_path, monkeypatch):
    """A writer that stalls past the lease while applying its commit stops
    (the new holder of the lock applies the record): it must not remove the
    blobs the record names, or the roll-forward finds them gone."""
    root = str(tmp_path / "c")
    c = bcolz_store.carray(np.arange(10), rootdir=root, mode="w", chunklen=1000)
    journal = c.dataset.journal

    def lost(*args, **kwargs):
        raise LockLostError("taken over")
    monkeypatch.setattr(journal.state, "apply", lost)
    values = np.arange(10, 100_010)             # full chunk files: blobs
    c.append(values)
    c.flush()                                   # committed; applying is left to others
    monkeypatch.undo()
    expected = np.arange(100_010)
    assert np.array_equal(bcolz_store.open(root, mode="a")[:], expected)
    assert np.array_equal(bcolz_store.open(root, mode="r")[:], expected)
    assert bcolz_store.verify(root).ok


def test_lock_true_on_an_object_store_stops_counting_once_lost():
    """A writer whose ``lock=True`` object was taken over (it stalled past
    the lease) no longer takes other writers' blob folders for garbage."""
    from bcolz_store.format.layout import LOCK_FILE
    store = MemoryStore()
    bcolz_store.carray(np.arange(5), rootdir=store, mode="w")
    c = bcolz_store.open(store, mode="a", lock=True)
    state = c.dataset.journal.state
    assert state.locked
    store.put(LOCK_FILE, b"someone else's")                 # taken over
    with pytest.raises(LockLostError):
        c._files.lock._lock._renew()                              # what the heartbeat does
    assert not c._files.lock.is_locked and not state.locked
    c.close()
    assert store.get(LOCK_FILE, 100) == b"someone else's"   # not removed


def test_a_commit_that_waited_out_the_lock_is_retried_the_documented_way(tmp_path):
    """LockTimeoutError is a ConcurrentWriteError: the documented loop
    (catch it, refresh(), write again) takes a commit that waited for the
    commit lock longer than ``retry_timeout``; nothing of it was committed."""
    from bcolz_store.errors import ConcurrentWriteError
    root = str(tmp_path / "c")
    bcolz_store.carray(np.arange(3), rootdir=root, mode="w")
    c = bcolz_store.open(root, mode="a")
    c.dataset.journal.retry_timeout = 0.3
    other = LocalStore(root).commit_lock(KEY, 30.0)
    with other.hold(1.0):
        c.append([3])
        with pytest.raises(ConcurrentWriteError, match="held the commit lock") as info:
            c.flush()
    assert isinstance(info.value, LockTimeoutError)
    assert bcolz_store.open(root, mode="r")[:].tolist() == [0, 1, 2]
    c.refresh()
    c.append([3])
    c.flush()
    assert bcolz_store.open(root, mode="r")[:].tolist() == [0, 1, 2, 3]


class _GhostLockStore(MemoryStore):
    """A store whose create of the lock object always answers "exists" while
    its reads find none (an object store that answers inconsistently)."""

    def __init__(self):
        super().__init__()
        self.creates = 0

    def put_if_absent(self, key, data):
        if key == KEY:
            self.creates += 1
            from bcolz_store.errors import ConcurrentWriteError
            raise ConcurrentWriteError(f"{self.path(key)}: exists already")
        super().put_if_absent(key, data)


def test_a_lock_object_said_to_exist_but_never_found_backs_off_and_times_out():
    import threading
    store = _GhostLockStore()
    outcome = []

    def take():
        try:
            with _object_lock(store).hold(0.5):
                outcome.append("held")
        except Exception as err:            # noqa: BLE001 - recorded for the assertions
            outcome.append(err)
    started = time.monotonic()
    thread = threading.Thread(target=take, daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), "the lock never gave up"
    assert time.monotonic() - started < 5
    assert len(outcome) == 1 and isinstance(outcome[0], LockTimeoutError)
    assert KEY in str(outcome[0])
    assert store.creates < 200                  # backed off, not a busy loop
