"""Several writers on one dataset: appends that never conflict, conflicts that
name both operations, and a commit protocol that loses or doubles nothing.

The processes of :mod:`benchmarks.contention` append at once, with no lock
and with ``lock=True``, locally and on S3 (moto on 127.0.0.1); the other
tests take one step of the protocol each: a commit record whose answer was
lost, a writer that applies another's record late, an idle writer, a lock
taken before the state is loaded.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import bcolz_store
from bcolz_store.errors import ConcurrentWriteError, ConflictError
from bcolz_store.storage.commit import Committer
from bcolz_store.storage.journal import Journal
from bcolz_store.storage.records import record_key

from benchmarks import contention

JOURNAL = ".bcolz_store-journal"


def _records(root) -> list:
    return sorted(n for n in os.listdir(Path(root) / JOURNAL) if n.startswith("commit-"))


@pytest.fixture
def real_lease(monkeypatch):
    """The default lease of the commit lock (stores without OS locks), in this
    process and in the writers it starts."""
    monkeypatch.setenv("BCOLZ_STORE_LOCK_LEASE", "30")
    monkeypatch.setattr(Journal, "lock_lease", 30.0)


@pytest.mark.parametrize("kind", ["carray", "ctable"])
@pytest.mark.parametrize("lock", [False, True])
def test_writers_appending_at_once_locally(real_lease, kind, lock):
    figures = contention.run(kind, writers=3, appends=20, lock=lock)
    assert figures["problems"] == [] and figures["tracebacks"] == []
    assert figures["errors"] == {} and figures["commits"] == 60


@pytest.mark.parametrize("kind", ["carray", "ctable"])
def test_writers_appending_at_once_on_s3(real_lease, s3_bucket, kind):
    url, options = s3_bucket
    figures = contention.run(kind, f"{url}/{kind}.bcolz", options, writers=3, appends=6)
    assert figures["problems"] == [] and figures["tracebacks"] == []
    assert figures["errors"] == {} and figures["commits"] == 18


def test_appends_are_rebased_a_setitem_conflicts_naming_both(tmp_path):
    path = str(tmp_path / "a")
    bcolz_store.carray(np.arange(10), rootdir=path, mode="w", chunklen=4)
    first, second = bcolz_store.open(path), bcolz_store.open(path)
    first.append([100, 101, 102])
    first.flush()
    second.append([200])
    second.flush()
    assert second.dataset.journal.rebases == 1
    assert bcolz_store.open(path, mode="r")[:].tolist() == list(range(10)) + [100, 101, 102, 200]
    first.refresh()
    first.trim(2)
    with pytest.raises(ConflictError, match="trim.*append conflicts") as info:
        second.append([300])
        second.flush()
    assert info.value.ours == ("append",) and info.value.theirs == ("trim",)
    assert bcolz_store.open(path, mode="r")[:].tolist() == list(range(10)) + [100, 101]
    second.append([300])          # back at the newest state: appends again
    second.flush()
    assert bcolz_store.open(path, mode="r")[-1] == 300
    assert bcolz_store.verify(path).ok


def test_a_table_append_rebased_keeps_every_column(tmp_path):
    path = str(tmp_path / "t")
    bcolz_store.ctable([np.arange(3), np.array(["a", "b", "c"], dtype=object)],
                       names=["x", "s"], dtype={"s": bcolz_store.vlen(str)},
                       rootdir=path, mode="w", chunklen=2)
    first, second = bcolz_store.open(path), bcolz_store.open(path)
    first.append((5, "q"))
    second.append([[6, 7], ["r", None]])
    first.append((8, "z"))
    back = bcolz_store.open(path, mode="r")
    assert back.cols["x"][:].tolist() == [0, 1, 2, 5, 6, 7, 8]
    assert back.cols["s"][:].tolist() == ["a", "b", "c", "q", "r", None, "z"]
    assert bcolz_store.verify(path).ok


def test_flush_refresh_close_commit_nothing_when_nothing_is_pending(tmp_path):
    path = str(tmp_path / "t")
    bcolz_store.ctable([np.arange(10)], names=["a"], rootdir=path, mode="w")
    first, idle = bcolz_store.open(path), bcolz_store.open(path)
    first.append([[1]])             # auto-flushed: committed
    before = _records(path)
    first.flush()                   # the row was committed already: nothing to do
    first.refresh()
    idle.refresh()                  # the documented way out of a conflict never raises one
    idle.flush()
    idle.close()
    assert _records(path) == before
    first.append([[2]])             # an idle writer invalidates nobody
    assert bcolz_store.open(path, mode="r").cols["a"][:].tolist() == list(range(10)) + [1, 2]


def test_a_lost_answer_to_the_commit_record_is_success(tmp_path, monkeypatch):
    """The record's conditional write succeeded, its answer was lost and the
    retry got 'exists': the record carries this writer's token, so the
    commit stands and is reported as made (not as ConcurrentWriteError)."""
    path = str(tmp_path / "a")
    c = bcolz_store.carray(np.arange(5), rootdir=path, mode="w")
    store = c.dataset.store
    real = store.put_if_absent

    def lost_answer(key, data):
        real(key, data)
        raise ConcurrentWriteError(f"{key}: exists already (the retry of a lost answer)")
    monkeypatch.setattr(store, "put_if_absent", lost_answer)
    c.append([5, 6])
    c.flush()
    monkeypatch.undo()
    assert bcolz_store.open(path, mode="r")[:].tolist() == list(range(7))
    assert c.dataset.journal.rebases == 0
    assert bcolz_store.verify(path).ok


def test_a_commit_whose_application_failed_is_finished_by_the_next_writer(tmp_path):
    """The record stands, applying it fails (every try): flush() raises the
    medium's error, and the row is committed once: the failing writer is back
    at the committed state with it, and another writer that opens finishes
    the application (no lease to wait for: the failing writer released the
    commit lock)."""
    path = str(tmp_path / "a")
    bcolz_store.carray(np.arange(5), rootdir=path, mode="w")
    first = bcolz_store.open(path)
    state = first.dataset.journal.state
    real_apply = state.apply
    calls = []

    def failing_apply(entries, newer_than=None):
        calls.append(newer_than)
        raise OSError(5, "injected: the disk failed while applying")
    state.apply = failing_apply
    first.append([5])
    with pytest.raises(OSError, match="injected"):
        first.flush()
    assert calls[:4] == [None, 2, 2, 2]             # APPLY_TRIES, then the roll-back
    state.apply = real_apply
    started = time.monotonic()
    second = bcolz_store.open(path)
    assert time.monotonic() - started < 2
    assert second[:].tolist() == list(range(6))
    assert bcolz_store.open(path, mode="r")[:].tolist() == list(range(6))
    first.refresh()
    assert first[:].tolist() == list(range(6))
    assert bcolz_store.verify(path).ok


def test_a_late_roll_forward_never_writes_over_a_newer_commit(tmp_path):
    """A writer that read generation g+1's record and applies it late, after
    g+1 was applied and g+2 committed, writes nothing (it used to put g+1's
    small files back over g+2's)."""
    path = str(tmp_path / "a")
    c = bcolz_store.carray(np.arange(5), rootdir=path, mode="w", chunklen=4)
    state = c.dataset.journal.state
    generation = state.generation
    c.append([5])
    c.flush()                                   # generation + 1
    entries = state.read_record(record_key(generation + 1))[0]
    c.append([6])
    c.flush()                                   # generation + 2
    late = bcolz_store.open(path).dataset.journal.state
    late.apply(entries, newer_than=generation + 1)
    assert bcolz_store.open(path, mode="r")[:].tolist() == list(range(7))
    assert bcolz_store.verify(path).ok


def test_a_writer_waits_for_a_live_writer_to_apply_its_record(tmp_path, monkeypatch):
    """A record not yet applied is its writer's to apply (it holds the commit
    lock): a writer opening meanwhile waits for it, it does not apply it too."""
    path = str(tmp_path / "a")
    c = bcolz_store.carray(np.arange(5), rootdir=path, mode="w")
    state = c.dataset.journal.state
    real_apply = state.apply
    opened = {}
    threads = []

    def slow_apply(entries, newer_than=None):
        import threading

        def other():
            started = time.monotonic()
            other_writer = bcolz_store.open(path)
            opened["seconds"] = time.monotonic() - started
            opened["len"] = len(other_writer)
        threads.append(threading.Thread(target=other))
        threads[0].start()
        time.sleep(0.5)                         # the other writer is waiting now
        real_apply(entries, newer_than)
    state.apply = slow_apply
    c.append([5])
    c.flush()
    threads[0].join()
    assert opened["len"] == 6 and 0.3 < opened["seconds"] < 5


LOCKED_WRITER = """
import sys, bcolz_store
c = bcolz_store.open(sys.argv[1], mode="a", lock=True)   # waits for the parent's lock
c.append([999])
c.flush()
c.close()
"""


def test_lock_is_taken_before_the_state_is_loaded(tmp_path):
    path = str(tmp_path / "a")
    bcolz_store.carray(np.arange(5), rootdir=path, mode="w")
    holder = bcolz_store.open(path, mode="a", lock=True)
    package_parent = str(Path(bcolz_store.__file__).resolve().parents[1])
    proc = subprocess.Popen([sys.executable, "-c", LOCKED_WRITER, path],
                            env=dict(os.environ, PYTHONPATH=package_parent),
                            stderr=subprocess.PIPE)
    time.sleep(1.5)                 # the child is waiting for the lock
    holder.append([5, 6])
    holder.flush()
    holder.close()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()[-2000:]
    assert bcolz_store.open(path, mode="r")[:].tolist() == list(range(7)) + [999]


def test_full_reads_beside_a_writer_committing_every_35_ms_complete(real_lease):
    figures = contention.readers("ctable", rows=50_000, appends=60)
    assert figures["wrong"] == 0 and figures["errors"] == {}
    assert figures["reads"] >= 5 and figures["completed_share"] >= 0.95


def test_a_reader_keeps_its_state_beside_appends_not_beside_a_trim(tmp_path):
    """Appends leave every full chunk as it was and the leftover's first
    items too: a reader on a local disk reads its own state on; a trim
    changes what it would read: DatasetChangedError.  (A reader on S3
    refuses any commit: there a commit's files change before it is
    applied.)"""
    options = {}
    path = str(tmp_path / "r")
    for kind in ("carray", "vlen"):
        dtype = {} if kind == "carray" else {"dtype": "vlen-str"}
        values = np.arange(10) if kind == "carray" else [str(i) for i in range(10)]
        target = f"{path}-{kind}"
        bcolz_store.carray(values, rootdir=target, mode="w", chunklen=4, **dtype, **options)
        reader = bcolz_store.open(target, mode="r", **options)
        writer = bcolz_store.open(target, mode="a", **options)
        more = [10, 11, 12] if kind == "carray" else ["10", "11", "12"]
        writer.append(more)             # the leftover's file grows from 2 items to 4
        writer.flush()
        got = reader[:]
        assert list(got) == list(values) and len(reader) == 10
        before_trim = bcolz_store.open(target, mode="r", **options)
        writer.trim(5)                  # 13 items -> 8: the leftover's file goes
        with pytest.raises(bcolz_store.DatasetChangedError):
            before_trim[:]


@pytest.mark.parametrize("where", ["local", "memory-remote"])
def test_a_checksum_file_written_in_the_background_is_in_place_before_its_record(
        tmp_path, monkeypatch, where):
    """A checksum file of 64 KiB or more is staged on a background thread; the
    commit record used to be created before that write ended, so applying it
    found no blob to move, kept the old checksum file, and ``verify()`` then
    reported the newest chunks damaged (2 in 3 runs of 8 writers x 500 appends
    to a ctable)."""
    import bcolz_store.storage.journal as journal_module
    from bcolz_store.storage.memory import MemoryStore
    real = journal_module.write_blob

    def slow_write_blob(store, blob, parts, sync, key, digest):
        if key.endswith("bcolz_store.md5"):
            time.sleep(0.2)          # the background write ends after the record exists
        return real(store, blob, parts, sync, key, digest)
    monkeypatch.setattr(journal_module, "write_blob", slow_write_blob)
    if where == "local":
        root = str(tmp_path / "c")
    else:
        root = MemoryStore("background")
        root.remote = True          # (contents up to 64 KiB travel in the record)
    c = bcolz_store.carray(np.arange(3000), chunklen=1, rootdir=root, mode="w")
    c.append(np.arange(3000, 3010))
    c.flush()
    c[5] = -1
    report = bcolz_store.verify(root)
    assert report.ok, report.problems()[:3]
    back = bcolz_store.open(root, mode="r")[:]
    assert back[5] == -1 and back[-1] == 3009 and len(back) == 3010


def test_a_rebase_loads_again_while_commits_change_the_state_under_it(tmp_path, monkeypatch):
    """On S3, 2 of 8 writers appending 500 times stopped with
    DatasetChangedError ('writers kept committing while reading'): the reload
    of a rebase found the state changing under every attempt.  A rebase now
    loads again within ``Journal.retry_timeout``."""
    from bcolz_store.errors import DatasetChangedError
    root = str(tmp_path / "c")
    bcolz_store.carray(np.arange(3), chunklen=4, rootdir=root, mode="w")
    a = bcolz_store.open(root, mode="a")
    b = bcolz_store.open(root, mode="a")
    b.append([10, 11])
    b.flush()
    real = Journal.reload_committed
    failures = []

    def reload_committed(self):
        if not failures:
            failures.append(1)
            raise DatasetChangedError("writers kept committing while reading")
        return real(self)
    monkeypatch.setattr(Journal, "reload_committed", reload_committed)
    a.append([20, 21, 22])
    a.flush()
    assert failures
    assert bcolz_store.open(root, mode="r")[:].tolist() == [0, 1, 2, 10, 11, 20, 21, 22]


@pytest.mark.parametrize("where", ["memory", "s3"])
def test_lock_true_on_an_object_store_makes_writers_wait(where, request, monkeypatch):
    """lock=True on an object store: the object .bcolz_store.lock, held (and
    renewed) until close(); a second writer waits for it, and gets it once
    the first closes.  The lock object is not a bcolz file (verify() is ok)."""
    from bcolz_store.errors import LockTimeoutError
    if where == "s3":
        url, options = request.getfixturevalue("s3_bucket")
        path, kwargs = f"{url}/locked.bcolz", {"storage_options": options}
    else:
        path, kwargs = f"memory://locked-{os.getpid()}/c", {}
    bcolz_store.carray(np.arange(3), rootdir=path, mode="w", chunklen=4, **kwargs)
    first = bcolz_store.open(path, mode="a", lock=True, **kwargs)
    with pytest.raises(LockTimeoutError, match="another writer holds the lock"):
        bcolz_store.open(path, mode="a", lock=0.5, **kwargs)
    first.append([3, 4])
    first.close()
    second = bcolz_store.open(path, mode="a", lock=5, **kwargs)
    second.append([5])
    second.close()
    assert bcolz_store.open(path, mode="r", **kwargs)[:].tolist() == list(range(6))
    assert bcolz_store.verify(path, **kwargs).ok


@pytest.mark.parametrize("store", ["local", "memory"])
def test_an_append_is_rebased_over_more_commits_than_records_are_kept(tmp_path, store):
    """A writer whose state is 40 commits old (records stay 32): its append is
    rebased all the same, since bcolz_store.json says no commit since reshaped
    the dataset (reshaped_at); after a trim among them, it conflicts."""
    from bcolz_store.storage.committed import RETAIN_RECORDS
    from bcolz_store.storage.memory import MemoryStore
    path = str(tmp_path / "a") if store == "local" else MemoryStore(str(tmp_path))
    bcolz_store.carray(np.arange(3), rootdir=path, mode="w", chunklen=4)
    stale, busy = bcolz_store.open(path), bcolz_store.open(path)
    for i in range(RETAIN_RECORDS + 8):
        busy.append([100 + i])
        busy.flush()
    busy[0] = -1                                      # an assignment: appends follow it
    stale.append([7, 8])
    stale.flush()
    expected = [-1, 1, 2] + [100 + i for i in range(RETAIN_RECORDS + 8)] + [7, 8]
    assert bcolz_store.open(path, mode="r")[:].tolist() == expected
    stale2 = bcolz_store.open(path)
    for _ in range(RETAIN_RECORDS + 1):
        busy.append([0])
        busy.flush()
    busy.trim(1)
    stale2.append([9])
    with pytest.raises(ConflictError, match="unknown operations"):
        stale2.flush()
    assert bcolz_store.verify(path).ok


@pytest.mark.parametrize("kind", ["carray", "ctable"])
@pytest.mark.parametrize("store", ["local", "remote"])
def test_a_rebase_stages_again_when_a_commit_lands_between_reload_and_replay(
        tmp_path, kind, store):
    """A rebase reloads the newest state, then stages the captured rows on it,
    reading the leftover chunk; a commit landing in between made that read
    raise ConcurrentWriteError to the user (once in the 8 x 500 ctable run on
    S3).  Here the first replay meets such a commit and raises as that read
    did: the rebase loads again and stages the rows on the newer state."""
    from bcolz_store.storage.memory import MemoryStore
    path = str(tmp_path / "a") if store == "local" else MemoryStore(str(tmp_path))

    def make(values):
        values = np.asarray(values, dtype="i8")
        return values if kind == "carray" else [values, values * 2]

    if kind == "carray":
        bcolz_store.carray(np.arange(3), rootdir=path, mode="w", chunklen=8)
    else:
        bcolz_store.ctable([np.arange(3), np.arange(3) * 2], names=["a", "b"], rootdir=path,
                           mode="w", chunklen=8)
    a, b = bcolz_store.open(path, mode="a"), bcolz_store.open(path, mode="a")
    b.append(make([10]))
    b.flush()
    real = Committer._plan_rebase
    landed = []

    def plan_rebase(self, *args):
        replay = real(self, *args)

        def first_meets_a_commit():
            if not landed:
                landed.append(1)
                b.append(make([11]))
                b.flush()
                raise ConcurrentWriteError("the leftover chunk changed under the reload")
            return replay()
        return first_meets_a_commit
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Committer, "_plan_rebase", plan_rebase)
        a.append(make([20, 21]))
        a.flush()
    assert landed and a.dataset.journal.rebases == 1
    out = bcolz_store.open(path, mode="r")
    got = out[:] if kind == "carray" else out["a"][:]
    assert got.tolist() == [0, 1, 2, 10, 11, 20, 21]
    if kind == "ctable":
        assert out["b"][:].tolist() == [0, 2, 4, 20, 22, 40, 42]
    assert bcolz_store.verify(path).ok
