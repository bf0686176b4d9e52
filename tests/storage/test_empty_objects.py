"""Zero-byte objects on S3 (moto): S3 answers a ranged read of an empty object
with 416, which reached callers as a bare OSError.  An empty object reads as
empty, so a dataset file that is one raises the library's FormatError naming
it, and an empty lock object is taken over after the lease like any lock
object that is not a live holder's."""

from __future__ import annotations

import time

import numpy as np
import pytest

import bcolz_store
from bcolz_store.errors import FormatError
from bcolz_store.storage.commit_lock import ObjectCommitLock
from bcolz_store.storage.fsspec import FsspecStore
from bcolz_store.storage.journal import Journal

COMMIT_LOCK = ".bcolz_store-journal/commit.lock"


@pytest.fixture
def store(s3_bucket):
    url, options = s3_bucket
    return FsspecStore(f"{url}/c", storage_options=options)


def test_an_empty_object_reads_as_empty(store):
    store.put("meta/sizes", b"")
    assert store.get("meta/sizes", 100) == b""
    got = store.get_many(["meta/sizes", "__attrs__"], 100)
    assert got["meta/sizes"] == b""


@pytest.mark.parametrize("key", ["data/__0.blp", "data/__2.blp", "bcolz_store.json"])
@pytest.mark.parametrize("mode", ["r", "a"])
def test_an_empty_dataset_file_is_a_format_error_naming_it(store, key, mode):
    bcolz_store.carray(np.arange(10), rootdir=store, mode="w", chunklen=4)
    store.put(key, b"")
    with pytest.raises(FormatError, match=key.replace(".", r"\.")):
        bcolz_store.open(store, mode=mode)[:]


def test_an_empty_commit_lock_object_is_taken_over_after_the_lease(store):
    store.put(COMMIT_LOCK, b"")
    lock = ObjectCommitLock(store, COMMIT_LOCK, 0.5)
    lock.heartbeat = False
    started = time.monotonic()
    with lock.hold(10.0):
        assert 0.5 <= time.monotonic() - started < 5
        assert store.get(COMMIT_LOCK, 4096) != b""
    assert not store.exists(COMMIT_LOCK)


def test_a_writer_commits_past_an_empty_commit_lock_object(store, monkeypatch):
    monkeypatch.setattr(Journal, "lock_lease", 0.5)
    bcolz_store.carray(np.arange(5), rootdir=store, mode="w")
    store.put(COMMIT_LOCK, b"")
    c = bcolz_store.open(store, mode="a")
    c.dataset.journal.retry_timeout = 10.0
    c.append([5])
    c.flush()
    assert bcolz_store.open(store, mode="r")[:].tolist() == list(range(6))


def test_lock_true_takes_over_an_empty_writer_lock_object(store, monkeypatch):
    from bcolz_store.format.layout import LOCK_FILE
    from bcolz_store.storage import committed
    monkeypatch.setattr(committed, "LOCK_LEASE", 0.5)
    bcolz_store.carray(np.arange(5), rootdir=store, mode="w")
    store.put(LOCK_FILE, b"")
    started = time.monotonic()
    with bcolz_store.open(store, mode="a", lock=5.0) as c:
        assert 0.5 <= time.monotonic() - started < 5
        c.append([5])
        c.flush()
    assert bcolz_store.open(store, mode="r")[:].tolist() == list(range(6))
