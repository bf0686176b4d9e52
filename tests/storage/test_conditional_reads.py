"""Point reads on S3 by byte ranges, conditional on each chunk file's md5.

A remote reader notices another writer's commit by the md5 of the chunk files
it reads.  It reads a few Blosc blocks of a chunk file instead of the whole
file by asking S3 for the ranges only while the object's ETag is the md5 the
checksum file records (``If-Match``): a point read costs at most two requests
(the headers and block table, the block), a chunk rewritten by a writer is
refused (412), and the whole-file read that follows raises
:class:`DatasetChangedError`.  A dataset without a checksum file is read by
ranges with nothing to check, as whole files are; a store whose refusals
prove useless (ETags that are no md5) stops being asked.
"""

from __future__ import annotations

import collections
import hashlib

import numpy as np
import pytest

import bcolz_store
from bcolz_store.chunks.block_reads import TABLE_READ_BYTES
from bcolz_store.chunks.blocks import shared_cache
from bcolz_store.errors import DatasetChangedError, DatasetNotFoundError
from bcolz_store.format.blosc1 import block_table
from bcolz_store.format.bloscpack import BLOSCPACK_HEADER_LENGTH
from bcolz_store.storage.dataset_reads import USELESS_REFUSALS
from bcolz_store.storage.fsspec import FsspecStore

CHUNK = "data/__0.blp"
N, CHUNKLEN = 200_000, 131_072
CODECS = {"lz4": 1, "zstd": 4}          # Blosc blocks per full chunk


class Traffic:
    """The requests a store's S3 client sends (GetObject by key), and the bytes
    their answers bring."""

    def __init__(self, store):
        self.requests = collections.Counter()
        self.keys = collections.Counter()
        self.conditional = 0            # GetObject requests with If-Match
        self.bytes = 0
        events = store.fs.s3.meta.events
        events.register("before-send.s3", self._sent)
        events.register("after-call.s3.GetObject", self._answered)

    def _sent(self, event_name, request=None, **kwargs):
        operation = event_name.rsplit(".", 1)[-1]
        self.requests.update([operation])
        if operation == "GetObject":
            self.keys.update([request.url.split("?")[0].split(".bcolz/", 1)[-1]])
            self.conditional += "If-Match" in request.headers

    def _answered(self, parsed=None, **kwargs):
        self.bytes += int((parsed or {}).get("ContentLength") or 0)

    @property
    def gets(self) -> int:
        return self.requests["GetObject"]

    @property
    def chunk_gets(self) -> int:
        """GetObject requests of chunk files."""
        return sum(n for key, n in self.keys.items() if key.startswith("data/"))

    def clear(self) -> None:
        self.requests.clear()
        self.keys.clear()
        self.conditional = 0
        self.bytes = 0


def random_walk(n: int = N, seed: int = 7) -> np.ndarray:
    return np.cumsum(np.random.default_rng(seed).standard_normal(n))


def write(url: str, options: dict, cname: str) -> np.ndarray:
    data = random_walk()
    bcolz_store.carray(data, rootdir=url, mode="w", chunklen=CHUNKLEN, storage_options=options,
                       cparams=bcolz_store.cparams(clevel=5, shuffle=1, cname=cname)).flush()
    return data


def reopen(url: str, options: dict):
    """A reader, and the Traffic of its store's client."""
    reader = bcolz_store.open(url, mode="r", storage_options=options)
    return reader, Traffic(reader.dataset.store)


def blocks_of(store, key: str = CHUNK):
    whole = store.get(key, 1 << 30)
    return whole, block_table(memoryview(whole)[BLOSCPACK_HEADER_LENGTH:])


# ------------------------------------------------------------ the store

def test_conditional_ranges_on_s3_cost_one_request_per_group(s3_bucket):
    url, options = s3_bucket
    store = FsspecStore(f"{url}/cond.bcolz", storage_options=options)
    data = bytes(range(256)) * 2048                    # 512 KiB
    store.put(CHUNK, data)
    md5 = hashlib.md5(data).hexdigest()
    seen = Traffic(store)
    assert store.get_ranges_if_md5(CHUNK, [(16, 48)], md5) == [data[16:48]]
    assert seen.requests == {"GetObject": 1} and seen.bytes == 32
    seen.clear()
    near = [(4096, 8192), (0, 300)]
    assert store.get_ranges_if_md5(CHUNK, near, md5) == [data[4096:8192], data[:300]]
    assert seen.requests == {"GetObject": 1}, seen.requests
    seen.clear()
    far = [(0, 32), (400_000, 400_100), (430_000, 500_000)]
    assert store.get_ranges_if_md5(CHUNK, far, md5) == [data[a:b] for a, b in far]
    assert seen.requests == {"GetObject": 2}, seen.requests
    seen.clear()
    assert store.get_ranges_if_md5(CHUNK, [(0, 32)], hashlib.md5(b"other").hexdigest()) is None
    assert store.get_ranges_if_md5(CHUNK, far, "0" * 32) is None
    assert seen.requests == {"GetObject": 3} and seen.bytes == 0, seen.requests
    seen.clear()
    assert store.get_ranges_if_md5(CHUNK, [(0, 4)], "no md5") is None
    assert store.get_ranges_if_md5(CHUNK, [], md5) == []
    assert seen.gets == 0
    assert store.get_ranges_if_md5(CHUNK, [(len(data) - 2, len(data) + 10)], md5) == \
        [data[-2:]]
    assert store.get_ranges_if_md5(CHUNK, [(len(data), len(data) + 10)], md5) is None
    with pytest.raises(DatasetNotFoundError, match="__1.blp"):
        store.get_ranges_if_md5("data/__1.blp", [(0, 4), (300_000, 300_004)], md5)
    assert store.child("data").get_ranges_if_md5("__0.blp", [(5, 9)], md5) == [data[5:9]]
    store.put(CHUNK, data[::-1])
    assert store.get_ranges_if_md5(CHUNK, [(0, 4)], md5) is None


def test_other_filesystems_make_no_promise():
    store = FsspecStore("memory://conditional-none")
    store.put(CHUNK, b"0123456789")
    assert store.get_ranges_if_md5(CHUNK, [(0, 4)],
                                   hashlib.md5(b"0123456789").hexdigest()) is None


# ------------------------------------------------------------ point reads

@pytest.mark.parametrize("cname", sorted(CODECS))
def test_a_point_read_on_s3_costs_two_requests_and_two_blocks(s3_bucket, cname):
    """Two requests of the chunk file; the first read of a chunk of a freshly
    opened dataset also reads its checksum file, once (as a whole-file read
    does: it is what the chunk files are checked against)."""
    url, options = s3_bucket
    path = f"{url}/walk-{cname}.bcolz"
    data = write(path, options, cname)
    store = FsspecStore(path, storage_options=options)
    whole, table = blocks_of(store)
    assert table.nblocks == CODECS[cname]
    checksums = len(store.get("bcolz_store.md5", 1 << 20))
    biggest = sorted((e - s for s, e in zip(table.starts, table.ends)), reverse=True)
    prefix = min(len(whole), BLOSCPACK_HEADER_LENGTH + TABLE_READ_BYTES)
    rng = np.random.default_rng(len(cname))
    for attempt in range(4):                           # each on a fresh reader
        reader, seen = reopen(path, options)
        assert reader.dataset.reads.check_contents
        loaded = attempt % 2
        if loaded:
            reader.dataset.recorded_checksums()
            seen.clear()
        i = int(rng.integers(0, CHUNKLEN))
        assert reader[i] == data[i]
        assert seen.chunk_gets <= 2, seen.keys
        assert seen.keys - collections.Counter({CHUNK: 2}) == \
            (collections.Counter() if loaded else collections.Counter({"bcolz_store.md5": 1}))
        assert seen.bytes <= prefix + sum(biggest[:2]) + (0 if loaded else checksums), \
            (seen.bytes, len(whole))
        if CODECS[cname] > 1:
            assert seen.bytes < len(whole) // 2
        assert set(seen.requests) == {"GetObject"}, seen.requests
        seen.clear()
        j = int(rng.integers(0, CHUNKLEN))
        assert reader[j] == data[j]                    # the same chunk: one request
        assert seen.requests == {"GetObject": 1}, seen.requests
    np.testing.assert_array_equal(reader[:], data)


def test_reads_after_the_first_of_a_chunk_cost_one_request(s3_bucket):
    url, options = s3_bucket
    path = f"{url}/walk.bcolz"
    data = write(path, options, "zstd")
    reader, seen = reopen(path, options)
    blocksize = CHUNKLEN // CODECS["zstd"]
    assert reader[5] == data[5] and seen.chunk_gets == 2
    for block in (3, 1, 2):
        reader[N - 1]                                   # the leftover: another chunk
        seen.clear()
        i = block * blocksize + 17
        assert reader[i] == data[i]
        assert seen.gets == 1, seen.requests           # the table is known
    assert reader.dataset.reads.conditional_reads


def test_chunks_of_one_block_are_read_whole_in_one_request(s3_bucket):
    """Once a chunk turned out to be one Blosc block (float64 with lz4), the
    first read of another chunk fetches its whole file in one request instead
    of its table and then its block."""
    url, options = s3_bucket
    path = f"{url}/walk-one-block.bcolz"
    data = write(path, options, "lz4")
    reader, seen = reopen(path, options)
    assert reader[5] == data[5] and seen.chunk_gets == 2
    seen.clear()
    i = CHUNKLEN + 77                                  # the second chunk, never read
    assert reader[i] == data[i]
    assert seen.chunk_gets == 1, seen.keys
    j = CHUNKLEN + 5000
    seen.clear()
    assert reader[j] == data[j] and seen.gets == 0     # its streams were all kept


@pytest.mark.parametrize("cname", sorted(CODECS))
def test_a_block_read_again_costs_nothing_until_evicted(s3_bucket, cname):
    """Every stream of a block read is kept, those stored raw too (the low
    bytes of a random walk's floats): reading it again costs no request;
    once evicted, one."""
    url, options = s3_bucket
    path = f"{url}/again-{cname}.bcolz"
    data = write(path, options, cname)
    reader, seen = reopen(path, options)
    assert reader[100] == data[100] and seen.chunk_gets == 2
    for i, requests in ((101, 0), (5000, 0), (102, 1)):
        if requests:
            shared_cache().drop()
        reader[N - 1]                                   # the leftover: another chunk
        seen.clear()
        assert reader[i] == data[i]
        assert seen.gets == requests, (i, seen.keys)


# ------------------------------------------------------------ another writer

@pytest.mark.parametrize("cname", sorted(CODECS))
@pytest.mark.parametrize("before", ["nothing", "checksums", "table"])
def test_a_chunk_rewritten_by_a_writer_is_a_changed_dataset(s3_bucket, cname, before):
    """The reader read nothing before the commit (it finds out by the
    checksum file), or only the checksum file, or also the chunk's table and
    a block: the conditional read of the rewritten chunk is refused, and the
    whole file's read raises."""
    url, options = s3_bucket
    path = f"{url}/rewritten.bcolz"
    data = write(path, options, cname)
    reader, seen = reopen(path, options)
    last_block = CHUNKLEN - 3                          # in the last Blosc block
    if before != "nothing":
        reader.dataset.recorded_checksums()
    if before == "table":
        assert reader[10] == data[10]                  # the table and block 0 are read
        assert reader[N - 1] == data[N - 1]            # then the leftover's chunk
        shared_cache().drop()                          # decoded blocks evicted
    writer = bcolz_store.open(path, mode="a", storage_options=options)
    writer[CHUNKLEN - 2] = -1.0
    writer[20] = -2.0
    writer.flush()
    seen.clear()
    for _ in range(2):
        with pytest.raises(DatasetChangedError, match="refresh"):
            reader[last_block]
    if before != "nothing":
        assert seen.conditional >= 1, seen.keys     # refused (412), then the whole file
    assert reader.dataset.reads.conditional_reads
    reader.refresh()
    assert reader[last_block] == data[last_block]
    assert reader[CHUNKLEN - 2] == -1.0 and reader[20] == -2.0
    expected = data.copy()
    expected[[CHUNKLEN - 2, 20]] = [-1.0, -2.0]
    np.testing.assert_array_equal(reader[:], expected)


def test_a_slice_of_a_rewritten_chunk_is_a_changed_dataset(s3_bucket):
    url, options = s3_bucket
    path = f"{url}/sliced.bcolz"
    data = write(path, options, "zstd")
    reader, _ = reopen(path, options)
    np.testing.assert_array_equal(reader[100:200], data[100:200])
    writer = bcolz_store.open(path, mode="a", storage_options=options)
    writer[100:110] = 0.0
    writer.flush()
    with pytest.raises(DatasetChangedError):
        reader[CHUNKLEN - 100:CHUNKLEN - 50]


def test_a_writer_reads_ranges_of_the_chunks_it_did_not_touch(s3_bucket):
    url, options = s3_bucket
    path = f"{url}/writer.bcolz"
    data = write(path, options, "zstd")
    writer = bcolz_store.open(path, mode="a", storage_options=options)
    seen = Traffic(writer.dataset.store)
    assert writer[70_000] == data[70_000]
    assert seen.gets == 2, seen.requests
    writer[3] = 9.0
    assert writer[3] == 9.0 and writer[70_001] == data[70_001]
    writer.flush()
    assert bcolz_store.open(path, mode="r", storage_options=options)[3] == 9.0


# ------------------------------------------------------------ no checksum to check

def test_a_dataset_without_checksums_reads_by_ranges(s3_bucket):
    """As bcolz writes them: no ``bcolz_store.md5``, no consolidated metadata."""
    url, options = s3_bucket
    path = f"{url}/bcolz-like.bcolz"
    data = write(path, options, "zstd")
    store = FsspecStore(path, storage_options=options)
    for own in ("bcolz_store.md5", "bcolz_store.json", "meta/stats"):    # (bcolz writes
        store.delete(own)                                                   # no statistics)
    store.delete_prefix(".bcolz_store-journal/")
    assert store.list("") == ["__attrs__", "data/__0.blp", "data/__1.blp", "meta/sizes",
                              "meta/storage"]
    _, table = blocks_of(store)
    reader, seen = reopen(path, options)
    assert reader.dataset.recorded_checksums() is None
    seen.clear()
    i = 3 * CHUNKLEN // 4 + 5
    assert reader[i] == data[i]
    assert seen.requests == {"GetObject": 2}, seen.requests
    assert seen.bytes <= BLOSCPACK_HEADER_LENGTH + TABLE_READ_BYTES + max(
        e - s for s, e in zip(table.starts, table.ends))
    np.testing.assert_array_equal(reader[1000:1010], data[1000:1010])
    np.testing.assert_array_equal(reader[:], data)


# ------------------------------------------------------------ ETags that are no md5

class _NoPromises(FsspecStore):
    """An S3 store whose objects' ETags are no md5 (multipart uploads, SSE-KMS)."""

    asked = 0

    def get_ranges_if_md5(self, key, ranges, md5):
        type(self).asked += 1
        return None


def test_useless_refusals_turn_conditional_reads_off(s3_bucket):
    url, options = s3_bucket
    path = f"{url}/multipart.bcolz"
    data = write(path, options, "zstd")
    reader = bcolz_store.open(path, mode="r", storage_options=options)
    reads = reader.dataset.reads
    reads.store.__class__ = _NoPromises
    _NoPromises.asked = 0
    chunks = reader.chunks
    for _ in range(USELESS_REFUSALS):
        assert reads.conditional_reads
        assert chunks.read_file_range(0, 0, 16) is None     # refused...
        chunks.read_file(0, chunks.limit())                 # ...and the file had its md5
    assert not reads.conditional_reads
    assert chunks.read_file_range(0, 0, 16) is None         # not asked any more
    assert reader[12_345] == data[12_345]
    np.testing.assert_array_equal(reader[:], data)
    assert _NoPromises.asked == USELESS_REFUSALS


class _Changing(FsspecStore):
    """Refuses every conditional read: the file changed (a writer's commit)."""

    def get_ranges_if_md5(self, key, ranges, md5):
        return None


def test_refusals_of_changed_files_keep_conditional_reads_on(s3_bucket):
    url, options = s3_bucket
    path = f"{url}/changing.bcolz"
    write(path, options, "zstd")
    reader = bcolz_store.open(path, mode="r", storage_options=options)
    reader.dataset.recorded_checksums()
    writer = bcolz_store.open(path, mode="a", storage_options=options)
    writer[0] = 1.0
    writer.flush()
    reads = reader.dataset.reads
    reads.store.__class__ = _Changing
    for _ in range(USELESS_REFUSALS + 1):
        assert reader.chunks.read_file_range(0, 0, 16) is None
        with pytest.raises(DatasetChangedError):
            reader.chunks.read_file(0, reader.chunks.limit())
    assert reads.conditional_reads


def test_a_conditional_read_that_succeeds_resets_the_count(tmp_path):
    """On any store: the count is of refusals in a row."""
    path = str(tmp_path / "a.bcolz")
    bcolz_store.carray(np.arange(40_000, dtype="i8"), chunklen=10_000, rootdir=path,
                       mode="w").flush()
    reader = bcolz_store.open(path, mode="r")
    reads = reader.dataset.reads
    reads.check_contents = True             # as on a remote store
    store = reads.store
    honest = store.get_ranges
    answers = iter([None] * (USELESS_REFUSALS - 1) + ["honest"] + [None] * USELESS_REFUSALS)

    def conditional(key, ranges, md5):
        answer = next(answers)
        return None if answer is None else honest(key, ranges)
    store.get_ranges_if_md5 = conditional
    for n in range(2 * USELESS_REFUSALS):
        assert reads.conditional_reads, n
        got = reader.chunks.read_file_range(1, 0, 16)
        if got is None:
            reader.chunks.read_file(1, reader.chunks.limit())
        else:
            assert got == reader.chunks.read_file(1, reader.chunks.limit())[:16]
    assert not reads.conditional_reads


@pytest.mark.parametrize("cname", sorted(CODECS))
def test_a_refreshed_reader_reads_the_new_chunk(s3_bucket, cname):
    url, options = s3_bucket
    path = f"{url}/refreshed.bcolz"
    data = write(path, options, cname)
    reader, _ = reopen(path, options)
    assert reader[10] == data[10]                      # its table and block are known
    assert reader[N - 1] == data[N - 1]
    writer = bcolz_store.open(path, mode="a", storage_options=options)
    writer[10] = -5.0
    writer.flush()
    reader.refresh()
    assert reader[10] == -5.0
    assert reader[N - 1] == data[N - 1]
    assert reader[11] == data[11]
