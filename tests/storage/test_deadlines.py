"""Loops that wait on a store or on other writers end: each retries only while
what it waits for can still happen, within a bound, and then raises the
library's error naming the path."""

from __future__ import annotations

import time

import numpy as np

import bcolz_store
from bcolz_store.storage.fsspec import FsspecStore


def test_a_checksum_file_that_is_not_the_states_own_does_not_stall_a_writer(s3_bucket):
    """A writer loading a state reads the checksum file again while newer
    commits replace it; one that no commit replaced (it does not match the
    consolidated metadata of the same generation) is not a newer commit's,
    and was read hundreds of times over before the writer went on."""
    url, options = s3_bucket
    store = FsspecStore(f"{url}/c", storage_options=options)
    bcolz_store.carray(np.arange(10), rootdir=store, mode="w", chunklen=4)
    sums = store.get("bcolz_store.md5", 10_000)
    store.put("bcolz_store.md5", sums + b"0" * 32 + b"  data/__9.blp\n")
    started = time.monotonic()
    c = bcolz_store.open(store, mode="a")
    c.append([10])
    c.flush()
    assert time.monotonic() - started < 5
    assert bcolz_store.open(store, mode="r")[:].tolist() == list(range(11))


class _Spinning(Exception):
    pass


def test_an_s3_listing_that_never_ends_is_refused(s3_bucket, monkeypatch):
    """A truncated page whose continuation token is the one just sent (or
    none) would be asked for again forever."""
    import pytest

    from bcolz_store.errors import FormatError
    url, options = s3_bucket
    store = FsspecStore(f"{url}/c", storage_options=options)
    store.put("meta/sizes", b"{}")
    calls = []

    def call_s3(method, **params):
        calls.append(params)
        if len(calls) > 50:
            raise _Spinning()
        return {"Contents": [], "IsTruncated": True, "NextContinuationToken": "same"}
    # the filesystem is fsspec's cached instance, shared with later tests: patched for this test only
    monkeypatch.setattr(store.fs, "call_s3", call_s3)
    with pytest.raises(FormatError, match="does not end"):
        store.list_times("")
    assert len(calls) <= 2


def test_a_local_write_that_makes_no_progress_raises(tmp_path, monkeypatch):
    import errno
    import os

    import pytest

    from bcolz_store.storage import io
    calls = []

    def writev(fd, views):
        calls.append(fd)
        if len(calls) > 50:
            raise _Spinning()
        return 0
    monkeypatch.setattr(os, "writev", writev)
    path = str(tmp_path / "f")
    with pytest.raises(OSError) as info:
        io.write_file(path, [b"abc"])
    assert info.value.errno == errno.EIO and info.value.filename == path
    assert len(calls) == 1
