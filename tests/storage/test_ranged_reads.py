"""Byte ranges of one chunk file, from the store up to the dataset view.

The stores' own ranged reads are part of the Store contract
(:class:`bcolz_store.testing.store.StoreTests`); here: a dataset view reads
ranges straight from its store only where a whole-file chunk read would
(no ``verify``, nothing staged, no record waiting to be applied; where
contents are checked, only on condition that the file has its recorded md5), the chunk files of a carray map a missing file to
:class:`ChunkNotFoundError`, a reader still notices a writer's commit, and on
S3 a range costs one request.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bcolz_store
from bcolz_store.chunks.chunk import StoredChunkFiles
from bcolz_store.errors import (ChunkNotFoundError, DatasetChangedError, DatasetNotFoundError,
                                FormatError)
from bcolz_store.storage.base import PrefixStore, Store
from bcolz_store.storage.dataset import DatasetStore
from bcolz_store.storage.dataset_reads import DatasetReads
from bcolz_store.storage.fsspec import FsspecStore
from bcolz_store.storage.local import LocalStore
from bcolz_store.storage.memory import MemoryStore
from bcolz_store.storage.ranges import MAX_GAP, check_ranges, coalesce, split_groups
from bcolz_store.storage.zip import ZipStore

from tests.helpers.s3 import count_requests
from tests.test_api_docs import problems

CHUNK = "data/__0.blp"


@pytest.fixture
def dataset(tmp_path):
    """A carray of 4 full chunks on disk: ``(path, its data)``."""
    path = str(tmp_path / "a.bcolz")
    data = np.arange(40_000, dtype="i8")
    bcolz_store.carray(data, chunklen=10_000, rootdir=path, mode="w").flush()
    return path, data


def chunk_file(path: str, n: int = 0) -> bytes:
    with open(f"{path}/data/__{n}.blp", "rb") as fh:
        return fh.read()


# ------------------------------------------------------------ grouping ranges

def test_coalesce_groups_near_ranges_and_keeps_far_ones_apart():
    assert coalesce([(0, 10), (20, 30)]) == [(0, 30)]
    assert coalesce([(MAX_GAP + 100, MAX_GAP + 200), (0, 100)]) == \
        [(0, 100), (MAX_GAP + 100, MAX_GAP + 200)]
    assert coalesce([(0, 100), (100 + MAX_GAP - 1, 100 + MAX_GAP)]) == [(0, 100 + MAX_GAP)]
    assert coalesce([(5, 5)]) == [(5, 6)]              # a request asks for a byte at least
    assert coalesce([(0, 50), (10, 20)]) == [(0, 50)]  # inside another
    ranges = [(30, 40), (0, 4), (2, 8), (7, 7)]
    data = bytes(range(100))
    groups = coalesce(ranges)
    assert split_groups(ranges, groups, [data[a:b] for a, b in groups]) == \
        [data[a:b] for a, b in ranges]


def test_check_ranges_takes_any_iterable_of_pairs():
    assert check_ranges(iter([(np.int32(1), 2)])) == [(1, 2)]
    assert check_ranges([]) == []
    for bad in ([(1, 2, 3)], [1], "ab", 3, [(2, 1)], [(0.5, 1)]):
        with pytest.raises(ValueError):
            check_ranges(bad)


# ------------------------------------------------------------ the dataset view

def test_a_reader_reads_ranges_straight_from_the_store(dataset):
    path, _ = dataset
    whole = chunk_file(path)
    view = bcolz_store.open(path, mode="r").dataset
    assert view.get_chunk_range(CHUNK, 0, 32) == whole[:32]
    assert view.get_chunk_range(CHUNK, 100, 10 ** 9) == whole[100:]
    assert view.get_chunk_ranges(CHUNK, [(16, 32), (0, 16), (40, 40)]) == \
        [whole[16:32], whole[:16], b""]
    assert view.reads.get_chunk_range(CHUNK, 3, 9) == whole[3:9]
    assert view.get_chunk_range(CHUNK, 0, 32) == view.get_chunk(CHUNK, 1 << 30)[:32]


def test_a_table_column_reads_its_own_chunk_files(tmp_path):
    path = str(tmp_path / "t.bcolz")
    bcolz_store.ctable([np.arange(10_000), np.arange(10_000.0)], names=["x", "y"],
                       rootdir=path, mode="w", chunklen=1000).flush()
    table = bcolz_store.open(path, mode="r")
    column = table.cols["y"].dataset
    with open(f"{path}/y/data/__1.blp", "rb") as fh:
        whole = fh.read()
    assert column.get_chunk_range("data/__1.blp", 0, 48) == whole[:48]


def test_verify_and_content_checks_fall_back_to_the_whole_file(dataset):
    path, _ = dataset
    view = bcolz_store.open(path, mode="r", verify=True).dataset
    assert view.get_chunk_range(CHUNK, 0, 32) is None
    assert view.get_chunk_ranges(CHUNK, [(0, 4)]) is None
    view.verify = False
    assert view.get_chunk_range(CHUNK, 0, 4) == chunk_file(path)[:4]
    view.reads.check_contents = True           # a remote store's reader
    assert view.get_chunk_range(CHUNK, 0, 4) is None
    assert view.reads.get_chunk_ranges(CHUNK, [(0, 4)]) is None


def test_a_metadata_key_falls_back(dataset):
    path, _ = dataset
    view = bcolz_store.open(path, mode="r").dataset
    assert view.get_chunk_range("meta/sizes", 0, 4) is None


def test_a_staged_change_falls_back_to_the_staged_content(dataset):
    path, _ = dataset
    writer = bcolz_store.open(path, mode="a")
    view = writer.dataset
    assert view.get_chunk_range(CHUNK, 0, 4) == chunk_file(path)[:4]
    view.set(CHUNK, b"staged chunk file")
    assert view.get_chunk_range(CHUNK, 0, 6) is None            # the key is staged
    assert view.get_chunk_range("data/__1.blp", 0, 6) is None   # another key: all the same
    assert view.get_chunk(CHUNK, 100) == b"staged chunk file"
    view.discard()
    assert view.get_chunk_range(CHUNK, 0, 4) == chunk_file(path)[:4]


STOPS_BEFORE_APPLYING = """
import os, sys, bcolz_store
c = bcolz_store.open(sys.argv[1], mode="a")
c.dataset.journal.state.apply = lambda *args, **kwargs: os._exit(0)   # dies once committed
c[0] = -1
c.flush()
"""


def test_a_record_waiting_to_be_applied_falls_back(dataset):
    """A writer committed and died before applying its record: a reader reads
    through the record, never the stale file at its bcolz name."""
    path, _ = dataset
    package_parent = str(Path(bcolz_store.__file__).resolve().parents[1])
    subprocess.run([sys.executable, "-c", STOPS_BEFORE_APPLYING, path], check=True,
                   env=dict(os.environ, PYTHONPATH=package_parent), timeout=120)
    reader = bcolz_store.open(path, mode="r")
    assert reader.dataset.interrupted_commit
    assert reader.dataset.lookup(CHUNK)[0]               # its content is in a blob
    assert reader.dataset.get_chunk_range(CHUNK, 0, 32) is None
    assert reader.dataset.get_chunk_range("data/__1.blp", 0, 32) is None
    assert reader.chunks.read_file_range(0, 0, 32) is None
    assert reader[0] == -1 and reader[1] == 1


def test_bad_ranges_are_refused_even_where_the_view_falls_back(dataset):
    path, _ = dataset
    for verify in (False, True):
        view = bcolz_store.open(path, mode="r", verify=verify).dataset
        with pytest.raises(ValueError):
            view.get_chunk_range(CHUNK, 5, 4)
        with pytest.raises(ValueError):
            view.get_chunk_ranges(CHUNK, [(0, 4), (-1, 2)])


def test_missing_and_non_file_chunks(dataset):
    path, _ = dataset
    reader = bcolz_store.open(path, mode="r")
    with pytest.raises(DatasetNotFoundError):
        reader.dataset.get_chunk_range("data/__9.blp", 0, 4)
    with pytest.raises(ChunkNotFoundError, match="__9.blp"):
        reader.chunks.read_file_range(9, 0, 4)
    with pytest.raises(FormatError, match="directory"):
        reader.dataset.get_chunk_range("data", 0, 4)


# ------------------------------------------------------------ the chunk files

def test_chunk_files_read_ranges(dataset):
    path, _ = dataset
    whole = chunk_file(path, 2)
    chunks = bcolz_store.open(path, mode="r").chunks
    assert isinstance(chunks, StoredChunkFiles)
    assert chunks.read_file_range(2, 0, 32) == whole[:32]
    assert chunks.read_file_ranges(2, [(32, 40), (0, 16)]) == [whole[32:40], whole[:16]]
    assert chunks.read_file_range(2, 0, 32) == chunks.read_file(2, 1 << 30)[:32]
    assert bcolz_store.open(path, mode="r", verify=True).chunks.read_file_ranges(2, [(0, 4)]) \
        is None


def test_a_reader_still_notices_a_writers_commit(dataset):
    """Ranged reads leave ``check_reading`` as it was: the reader asks it after
    a read (a range it read may belong to the new state), and a failed read
    asks it at once, so a file the writer removed is a DatasetChangedError,
    not a missing chunk."""
    path, _ = dataset
    reader = bcolz_store.open(path, mode="r")
    assert reader.chunks.read_file_range(3, 0, 16) == chunk_file(path, 3)[:16]
    reader.dataset.check_reading()                 # nothing happened
    writer = bcolz_store.open(path, mode="a")
    writer[30_000] = -5
    writer.flush()
    assert reader.chunks.read_file_range(3, 0, 16) is not None
    with pytest.raises(DatasetChangedError, match="refresh"):
        reader.dataset.check_reading()
    writer.trim(25_000)                            # chunk 3 is gone
    writer.flush()
    with pytest.raises(DatasetChangedError):
        reader.chunks.read_file_range(3, 0, 16)


# ------------------------------------------------------------ docstrings

@pytest.mark.parametrize("cls", [Store, PrefixStore, LocalStore, MemoryStore, ZipStore,
                                 FsspecStore, DatasetReads, DatasetStore, StoredChunkFiles])
def test_the_ranged_reads_are_documented(cls):
    names = ["get_range", "get_ranges", "get_ranges_if_md5", "get_chunk_range",
             "get_chunk_ranges", "read_file_range", "read_file_ranges"]
    found = []
    for name in names:
        member = vars(cls).get(name)
        if member is not None and cls is not PrefixStore:
            found += problems(f"{cls.__name__}.{name}", member)
    assert found == []


# ------------------------------------------------------------ S3


def test_ranged_reads_on_s3_cost_one_request_per_group(s3_bucket):
    url, options = s3_bucket
    store = FsspecStore(f"{url}/ranges.bcolz", storage_options=options)
    data = bytes(range(256)) * 2048                    # 512 KiB
    store.put(CHUNK, data)
    seen = count_requests(store)
    assert store.get_range(CHUNK, 16, 48) == data[16:48]
    assert seen == {"GetObject": 1}, seen
    seen.clear()
    assert store.get_ranges(CHUNK, [(0, 300), (4096, 8192)]) == [data[:300], data[4096:8192]]
    assert seen == {"GetObject": 1}, seen
    seen.clear()
    far = [(0, 32), (400_000, 400_100)]
    assert store.get_ranges(CHUNK, far) == [data[a:b] for a, b in far]
    assert sum(seen.values()) <= 2 and set(seen) == {"GetObject"}, seen
    seen.clear()
    assert store.get_range(CHUNK, len(data), len(data) + 10) == b""
    with pytest.raises(DatasetNotFoundError):
        store.get_range("data/__1.blp", 0, 10)
    assert sum(seen.values()) == 2, seen
    seen.clear()
    child = store.child("data")
    assert child.get_range("__0.blp", 5, 9) == data[5:9]
    assert seen == {"GetObject": 1}, seen


def test_reading_one_item_of_a_chunk_on_s3_takes_two_requests(s3_bucket):
    """The headers and block-start table, then the bytes of one block."""
    url, options = s3_bucket
    path = f"{url}/item.bcolz"
    bcolz_store.carray(np.arange(200_000, dtype="i8"), chunklen=100_000, rootdir=path,
                       mode="w", storage_options=options).flush()
    store = FsspecStore(path, storage_options=options)
    whole = store.get(CHUNK, 1 << 30)
    seen = count_requests(store)
    head = store.get_range(CHUNK, 0, 16 + 16 + 4 * 64)
    assert int.from_bytes(head[16 + 4:16 + 8], "little") == 100_000 * 8   # Blosc's nbytes
    start = int.from_bytes(head[32:36], "little") + 16              # block 0, in the file
    block = store.get_range(CHUNK, start, start + 64)
    assert block == whole[start:start + 64]
    assert seen == {"GetObject": 2}, seen


def test_an_s3_reader_reads_ranges_of_the_chunk_it_loaded(s3_bucket):
    """A remote reader notices commits by the md5 of the chunk files it
    reads: its view reads a part of one only on condition that the file
    still has the md5 recorded for it (see test_conditional_reads.py)."""
    url, options = s3_bucket
    path = f"{url}/checked.bcolz"
    bcolz_store.carray(np.arange(1000), rootdir=path, mode="w", storage_options=options).flush()
    reader = bcolz_store.open(path, mode="r", storage_options=options)
    assert reader.dataset.reads.check_contents
    whole = reader.dataset.get_chunk(CHUNK, 1 << 30)
    assert reader.dataset.get_chunk_range(CHUNK, 0, 16) == whole[:16]
    writer = bcolz_store.open(path, mode="a", storage_options=options)
    writer[0] = 5
    writer.flush()
    assert reader.dataset.get_chunk_range(CHUNK, 0, 16) is None
    with pytest.raises(DatasetChangedError):
        reader.dataset.get_chunk(CHUNK, 1 << 30)
