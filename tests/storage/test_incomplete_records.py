"""Commit records that can never be completed (their blobs are gone without
having been applied): the next writer sets them aside at once and commits,
readers read the last committed state, and a record whose blobs were applied
in part is still rolled forward."""

from __future__ import annotations

import os
import shutil
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import bcolz_store
from bcolz_store.errors import IntegrityWarning
from bcolz_store.storage.apply import apply_record
from bcolz_store.storage.journal import Journal
from bcolz_store.storage.memory import MemoryStore
from bcolz_store.storage.records import JOURNAL_PREFIX, record_key

JOURNAL = ".bcolz_store-journal"


class _Died(BaseException):
    pass


def _dead_writers_record(rootdir):
    """A carray 0..4 whose writer created the record of appending 5..9 and
    died before applying it; returns (its state's generation, the record's entries)."""
    c = bcolz_store.carray(np.arange(5), rootdir=rootdir, mode="w", chunklen=4)
    state = c.dataset.journal.state
    generation = state.generation

    def die(*args, **kwargs):
        raise _Died()
    state.apply = die
    c.append(np.arange(5, 10))
    with pytest.raises(_Died):
        c.flush()
    return generation, state.read_record(record_key(generation + 1))[0]


@pytest.fixture
def short_timeout(monkeypatch):
    monkeypatch.setattr(Journal, "retry_timeout", 20.0)


def _append_and_check(rootdir, generation):
    started = time.monotonic()
    with pytest.warns(IntegrityWarning, match="can never be completed") as caught:
        writer = bcolz_store.open(rootdir, mode="a")
    assert f"commit-{generation + 1:012d}.json" in str(caught[0].message)
    assert writer[:].tolist() == list(range(5))
    writer.append([100])
    writer.flush()
    assert time.monotonic() - started < 5          # no rebasing until a timeout
    assert bcolz_store.open(rootdir, mode="r")[:].tolist() == list(range(5)) + [100]
    assert bcolz_store.verify(rootdir).ok


def test_a_record_whose_blob_folder_is_gone_is_set_aside(tmp_path, short_timeout):
    root = tmp_path / "c"
    generation, entries = _dead_writers_record(str(root))
    for folder in (root / JOURNAL).iterdir():
        if folder.is_dir():
            shutil.rmtree(folder)                   # the blobs the record names
    assert bcolz_store.open(str(root), mode="r")[:].tolist() == list(range(5))
    _append_and_check(str(root), generation)
    aside = [n for n in os.listdir(root / JOURNAL) if n.startswith("unfinishable-")]
    assert len(aside) == 1 and aside[0].startswith(f"unfinishable-commit-{generation + 1:012d}-")
    # kept by the garbage collection, even under lock=True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bcolz_store.open(str(root), mode="a", lock=True).close()
    assert (root / JOURNAL / aside[0]).exists()


def test_a_record_whose_data_blob_is_gone_is_set_aside_in_memory(short_timeout):
    store = MemoryStore()
    generation, entries = _dead_writers_record(store)
    data = [blob for key, blob in entries if key.startswith("data/") and isinstance(blob, str)]
    store.delete(JOURNAL_PREFIX + data[-1])         # never moved: its target does not exist
    _append_and_check(store, generation)


def test_a_record_applied_in_part_is_still_rolled_forward(tmp_path, short_timeout):
    """Blobs moved by a writer that died while applying are gone but applied:
    the record is completed, not set aside."""
    root = str(tmp_path / "c")
    generation, entries = _dead_writers_record(root)
    store = bcolz_store.storage.local.LocalStore(root)
    steps = []

    def confirm():
        steps.append(None)
        if len(steps) > 2:                          # data and metadata moved, then died
            raise _Died()
    with pytest.raises(_Died):
        apply_record(store, entries, confirm, False)
    assert any(not (Path(root) / JOURNAL / blob).exists() for _key, blob in entries)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        writer = bcolz_store.open(root, mode="a")
    assert writer[:].tolist() == list(range(10))
    writer.append([100])
    writer.flush()
    assert bcolz_store.open(root, mode="r")[:].tolist() == list(range(10)) + [100]
    assert bcolz_store.verify(root).ok
    assert not any(n.startswith("unfinishable-") for n in os.listdir(Path(root) / JOURNAL))


def test_a_record_whose_blob_is_gone_on_s3_is_set_aside(s3_bucket, short_timeout):
    """On S3 blobs are copied, and removed only once the record is applied:
    one that is gone before can never be."""
    from bcolz_store.storage.fsspec import FsspecStore
    url, options = s3_bucket
    store = FsspecStore(f"{url}/c", storage_options=options)
    base = np.random.default_rng(1).random(5)
    c = bcolz_store.carray(base, rootdir=store, mode="w", chunklen=20_000)
    state = c.dataset.journal.state
    generation = state.generation

    def die(*args, **kwargs):
        raise _Died()
    state.apply = die
    c.append(np.random.default_rng(2).random(50_000))     # chunk files too large to inline
    with pytest.raises(_Died):
        c.flush()
    entries = state.read_record(record_key(generation + 1))[0]
    blobs = [blob for _key, blob in entries if isinstance(blob, str)]
    assert blobs
    store.delete(JOURNAL_PREFIX + blobs[0])
    started = time.monotonic()
    with pytest.warns(IntegrityWarning, match="can never be completed"):
        writer = bcolz_store.open(store, mode="a")
    assert writer[:].tolist() == base.tolist()
    writer.append([100.0])
    writer.flush()
    assert time.monotonic() - started < 10
    assert bcolz_store.open(store, mode="r")[:].tolist() == base.tolist() + [100.0]


def test_a_record_whose_sync_failed_stands_with_its_blobs(tmp_path, monkeypatch):
    """Once the record exists the commit stands (docs/durability.md): a
    failure to sync its folder is raised, and leaves the blobs the record
    names for whoever applies it, never a record that can never be completed."""
    import errno

    from bcolz_store.storage.local import LocalStore
    monkeypatch.setattr(Journal, "fsync_default", True)
    root = str(tmp_path / "c")
    c = bcolz_store.carray(np.arange(5), rootdir=root, mode="w", chunklen=4)
    assert c.dataset.journal.sync_blobs
    real = LocalStore.sync_folders

    def sync_folders(self, keys):
        if any(key.startswith(JOURNAL_PREFIX + "commit-") for key in keys):
            raise OSError(errno.EIO, "injected: the record's folder could not be synced")
        return real(self, keys)
    monkeypatch.setattr(LocalStore, "sync_folders", sync_folders)
    c.append(np.arange(5, 10))
    with pytest.raises(OSError, match="injected"):
        c.flush()
    monkeypatch.undo()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = bcolz_store.open(root, mode="a")
        assert again[:].tolist() == list(range(10))
    assert bcolz_store.verify(root).ok
