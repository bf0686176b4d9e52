"""What a durable write must do before its commit record exists, whichever
thread wrote the files: every blob the record names is written whole and
fsynced, and present; a flush that changes nothing writes nothing new."""

from __future__ import annotations

import errno
import json
import os
import threading

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import bcolz_store as bcolz
from bcolz_store import threads
from bcolz_store.storage.records import JOURNAL_PREFIX
from bcolz_store.storage.staging import Staging


@pytest.fixture
def nthreads_restored():
    previous = threads.get_nthreads()
    yield
    bcolz.set_nthreads(previous)


class Events:
    """The fsyncs (by path) and commit-record links of this process, in order."""

    def __init__(self, monkeypatch):
        self.events, self.lock, fds = [], threading.Lock(), {}
        real_open, real_fsync, real_link = os.open, os.fsync, os.link
        self.real_open = real_open

        def fake_open(path, flags, *args, **kwargs):
            fd = real_open(path, flags, *args, **kwargs)
            fds[fd] = os.path.realpath(os.fspath(path))
            return fd

        def fake_fsync(fd):
            real_fsync(fd)
            with self.lock:
                self.events.append(("fsync", fds.get(fd)))

        def fake_link(src, dst, *args, **kwargs):
            with self.lock:
                self.events.append(("link", os.path.realpath(os.fspath(dst))))
            return real_link(src, dst, *args, **kwargs)

        monkeypatch.setattr(os, "open", fake_open)
        monkeypatch.setattr(os, "fsync", fake_fsync)
        monkeypatch.setattr(os, "link", fake_link)

    def synced_before_record(self, root: str, generation: int) -> tuple:
        """(paths of the blobs record ``generation`` names, those fsynced before it was linked)."""
        record = os.path.realpath(os.path.join(
            root, JOURNAL_PREFIX, f"commit-{generation:012d}.json"))
        with open(record, "rb") as fh:
            entries = json.loads(fh.read())["entries"]
        blobs = {os.path.realpath(os.path.join(root, JOURNAL_PREFIX, blob))
                 for _key, blob in entries if isinstance(blob, str)}
        linked = [i for i, (what, path) in enumerate(self.events)
                  if what == "link" and path == record]
        assert linked, "the commit record was not created by a link"
        synced = {path for what, path in self.events[:linked[0]] if what == "fsync"}
        return blobs, blobs & synced


@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("kind", ["carray", "ctable"])
def test_every_blob_is_synced_before_the_commit_record(tmp_path, monkeypatch, kind, nthreads,
                                                       nthreads_restored):
    from bcolz_store.storage.journal import Journal
    monkeypatch.setattr(Journal, "fsync_default", True)     # (the test suite turns it off)
    bcolz.set_nthreads(nthreads)
    root = str(tmp_path / "d")
    data = np.cumsum(np.random.default_rng(3).standard_normal(700_000))
    events = Events(monkeypatch)
    if kind == "carray":
        bcolz.carray(data, rootdir=root, chunklen=65_536, mode="w")
    else:
        bcolz.ctable([data, np.arange(len(data)), (data * 10).astype("i2")],
                     names=["x", "i", "s"], rootdir=root, mode="w")
    blobs, synced = events.synced_before_record(root, 1)
    assert len(blobs) > 12 and synced == blobs
    monkeypatch.setattr(os, "open", events.real_open)
    back = bcolz.open(root)
    assert_array_equal((back if kind == "carray" else back.cols["x"])[:], data)
    assert bcolz.verify(root).ok


def test_a_commit_whose_blob_is_gone_commits_nothing(tmp_path):
    root = tmp_path / "c"
    c = bcolz.carray(np.arange(100.0), chunklen=10, rootdir=str(root), mode="w")
    c.append(np.arange(50.0))         # five full chunks: staged as blobs at once
    folders = [p for p in (root / ".bcolz_store-journal").iterdir() if p.is_dir()]
    blobs = [p for folder in folders for p in folder.iterdir()]
    assert blobs
    blobs[0].unlink()                 # as another writer that took this one for dead
    with pytest.raises(OSError) as err:
        c.flush()
    assert err.value.errno == errno.ENOENT and "is gone" in str(err.value)
    assert_array_equal(bcolz.open(str(root))[:], np.arange(100.0))
    assert bcolz.verify(str(root)).ok


def test_a_flush_with_nothing_new_stages_no_metadata(tmp_path, monkeypatch):
    root = str(tmp_path / "t")
    t = bcolz.ctable([np.arange(1000), np.arange(1000) * 0.5], names=["a", "b"], rootdir=root,
                     mode="w")
    staged = []
    real = Staging.holds

    def holds(self, key, content, committed=None):
        same = real(self, key, content, committed)
        staged.append((key, same))
        return same
    monkeypatch.setattr(Staging, "holds", holds)
    t.flush()
    assert staged and all(same for _key, same in staged)
    t.append([[5], [2.5]])
    t.flush()
    assert [key for key, same in staged if not same] == ["a/meta/sizes", "a/meta/stats",
                                                          "b/meta/sizes", "b/meta/stats"]
    monkeypatch.undo()
    back = bcolz.open(root)
    assert back.cols["a"][:].tolist() == list(range(1000)) + [5] and len(back) == 1001


def test_staging_holds_compares_staged_then_committed_content():
    s = Staging()
    assert not s.holds("meta/sizes", b"x")                       # nothing known
    assert s.holds("meta/sizes", b"x", {"meta/sizes": "9dd4e461268c8034f5c8564e155c67a6"})
    assert not s.holds("meta/sizes", b"y", {"meta/sizes": "9dd4e461268c8034f5c8564e155c67a6"})
    s.files["meta/sizes"], s.meta["meta/sizes"] = "blob", b"y"
    assert s.holds("meta/sizes", b"y", {"meta/sizes": "9dd4e461268c8034f5c8564e155c67a6"})
    s.files["meta/sizes"] = None                                  # a deletion is staged
    del s.meta["meta/sizes"]
    assert not s.holds("meta/sizes", b"x", {"meta/sizes": "9dd4e461268c8034f5c8564e155c67a6"})
