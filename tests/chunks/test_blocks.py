"""Block-level decoding: byte-identical to python-blosc's whole-chunk decoding on
every codec, filter, typesize and odd size, on every fixture chunk; lying
block tables and stream sizes refused; the chunk engine's point reads,
small slices and gathers equal numpy's on disk and in memory."""

from __future__ import annotations

import random
import struct

import blosc
import numpy as np
import pytest

import bcolz_store as bz
from bcolz_store.chunks import engine as engine_module
from bcolz_store.chunks.block_reads import BlockReads
from bcolz_store.chunks.blocks import BlockCache, BytesSource, ChunkBlocks, decodable
from bcolz_store.errors import CodecError, FormatError
from bcolz_store.format.blosc1 import block_table, block_table_prefix

CODECS = ["lz4", "lz4hc", "zstd", "zlib", "blosclz"]


@pytest.fixture
def small_chunks_by_blocks(monkeypatch):
    """Chunks of any size are read by blocks (the default decodes small ones whole)."""
    monkeypatch.setattr(engine_module, "BLOCK_READ_MIN_BYTES", 0)


def _data(rng, nitems: int, typesize: int, kind: int) -> np.ndarray:
    """Bytes of ``nitems`` elements: a random walk's bytes, small integers, or noise."""
    n = nitems * typesize
    if kind == 0:
        return rng.standard_normal(n // 8 + 1).cumsum().view(np.uint8)[:n].copy()
    if kind == 1:
        return rng.integers(0, 4, n).astype(np.uint8)
    return rng.integers(0, 256, n).astype(np.uint8)


class _RemoteSource(BytesSource):
    """A source whose reads cost a request each: its raw streams are read whole
    and kept."""

    remote = True

    def __init__(self, data):
        super().__init__(data)
        self.reads = []

    def read_many(self, ranges) -> list:
        self.reads.append(list(ranges))
        return super().read_many(ranges)


def _check_ranges(chunk: bytes, raw: np.ndarray, typesize: int, rng, count: int = 12,
                  source=BytesSource) -> int:
    table = block_table(chunk)
    if not decodable(table):
        return 0
    blocks = ChunkBlocks(table, source(chunk), BlockCache(1 << 20), key=0)
    nitems = raw.size // typesize
    spans = [(0, nitems), (nitems - 1, nitems), (0, 1)]
    for _ in range(count):
        lo = int(rng.integers(0, nitems))
        spans.append((lo, int(min(nitems, lo + rng.choice([1, 3, 100, 5000, 10**6])))))
    for lo, hi in spans:
        out = np.empty((hi - lo) * typesize, np.uint8)
        blocks.read_into(lo * typesize, out)
        assert out.tobytes() == raw[lo * typesize:hi * typesize].tobytes(), (lo, hi)
    return len(spans)


@pytest.mark.parametrize("cname", CODECS)
@pytest.mark.parametrize("shuffle", [0, 1, 2])
def test_block_reads_equal_whole_chunk_decoding(cname, shuffle):
    rng = np.random.default_rng(hash((cname, shuffle)) % 2**32)
    checked = 0
    for typesize in (1, 2, 3, 4, 8, 12, 16, 17, 32):
        for nitems in (1, 7, 127, 1000, 33333, 262144 // typesize):
            for clevel in (0, 1, 5, 9) if nitems * typesize < 100_000 else (5,):
                raw = _data(rng, nitems, typesize, (nitems + clevel) % 3)
                chunk = blosc.compress(raw.tobytes(), typesize, clevel, shuffle, cname)
                checked += _check_ranges(chunk, raw, typesize, rng, count=4)
    if cname == "blosclz" or shuffle == 2:
        assert checked <= 9 * 6 * 4 * 7   # only raw (memcpyed) chunks are decoded here
    else:
        assert checked > 1000


@pytest.mark.parametrize("cname", ["lz4", "zstd", "zlib"])
def test_a_remote_source_keeps_its_raw_streams(cname):
    rng = np.random.default_rng(len(cname))
    checked = 0
    for typesize in (1, 4, 8, 12):
        for nitems in (1000, 262144 // typesize):
            raw = _data(rng, nitems, typesize, nitems % 3)
            chunk = blosc.compress(raw.tobytes(), typesize, 5, 1, cname)
            checked += _check_ranges(chunk, raw, typesize, rng, count=6, source=_RemoteSource)
    assert checked
    raw = rng.standard_normal(32768).cumsum()          # noise in the low bytes: raw streams
    chunk = blosc.compress(raw.tobytes(), 8, 5, 1, cname)
    table = block_table(chunk)
    source = _RemoteSource(chunk)
    blocks = ChunkBlocks(table, source, BlockCache(1 << 22), key=0)
    for n, lo in enumerate((17, 18, 4000)):
        out = np.empty(8, np.uint8)
        blocks.read_into(lo * 8, out)
        assert out.tobytes() == raw[lo:lo + 1].tobytes()
        if not n:
            first = len(source.reads)
    assert not any(source.reads[first:]), source.reads[first:]    # all in the cache


def test_which_chunks_are_decoded_by_blocks():
    raw = np.arange(100_000, dtype=np.int64)
    for cname, shuffle, expected in [("lz4", 1, True), ("lz4hc", 0, True), ("zstd", 1, True),
                                     ("zlib", 1, True), ("blosclz", 1, False),
                                     ("lz4", 2, False)]:
        chunk = blosc.compress(raw.tobytes(), 8, 5, shuffle, cname)
        assert decodable(block_table(chunk)) is expected, (cname, shuffle)


def test_every_fixture_chunk(fixtures_dir):
    rng = np.random.default_rng(7)
    checked = 0
    for path in sorted(fixtures_dir.rglob("__*.blp")):
        data = path.read_bytes()
        chunk = data[16:]
        raw = np.frombuffer(blosc.decompress(chunk), np.uint8)
        typesize = block_table(chunk).header.typesize
        if raw.size % typesize:
            continue
        checked += _check_ranges(chunk, raw, typesize, rng) > 0
    assert checked >= 20


def _lz4_chunk():
    raw = np.random.default_rng(3).standard_normal(131_072).cumsum()
    return bytearray(blosc.compress(raw.tobytes(), 8, 5, 1, "zstd")), raw


@pytest.mark.parametrize("value", [0, -1, 4, 16, 19, 2**31 - 1, -(2**31)])
def test_a_lying_block_start_is_refused(value):
    chunk, _raw = _lz4_chunk()
    assert block_table(bytes(chunk)).nblocks > 1
    struct.pack_into("<i", chunk, 16 + 4, value)          # block 1's start
    with pytest.raises(FormatError):
        block_table(bytes(chunk))


def test_two_blocks_at_one_start_are_refused():
    chunk, _raw = _lz4_chunk()
    first = struct.unpack_from("<i", chunk, 16)[0]
    struct.pack_into("<i", chunk, 20, first)
    with pytest.raises(FormatError, match="another block"):
        block_table(bytes(chunk))


@pytest.mark.parametrize("value", [0, -5, 10**9])
def test_a_lying_stream_size_is_refused(value):
    chunk, _raw = _lz4_chunk()
    table = block_table(bytes(chunk))
    struct.pack_into("<i", chunk, table.starts[0], value)
    blocks = ChunkBlocks(table, BytesSource(bytes(chunk)), BlockCache(1 << 20))
    with pytest.raises(FormatError, match="stream 0"):
        blocks.read_into(0, np.empty(8, np.uint8))


def test_a_corrupt_stream_is_a_codec_error():
    chunk, _raw = _lz4_chunk()
    table = block_table(bytes(chunk))
    start = table.starts[0] + 4
    chunk[start:start + 64] = b"\xff" * 64
    blocks = ChunkBlocks(table, BytesSource(bytes(chunk)), BlockCache(1 << 20))
    with pytest.raises(CodecError):
        blocks.read_into(0, np.empty(8, np.uint8))


def test_a_truncated_table_is_refused():
    chunk, _raw = _lz4_chunk()
    need = block_table_prefix(chunk)
    assert need > 20
    with pytest.raises(FormatError, match="truncated"):
        block_table(bytes(chunk[:need - 1]), partial=True)


def test_the_cache_stays_within_its_budget():
    cache = BlockCache(100)
    for i in range(10):
        cache.put(i, b"x" * 30)
    assert cache.nbytes <= 100 and cache.get(9) is not None and cache.get(0) is None
    cache.resize(30)
    assert cache.nbytes == 30
    cache.put("big", b"y" * 31)
    assert cache.get("big") is None


@pytest.mark.parametrize("cname,shuffle", [("lz4", 1), ("zstd", 1), ("zlib", 0),
                                           ("blosclz", 1), ("lz4", 2)])
@pytest.mark.parametrize("stored", [True, False])
def test_engine_reads_by_blocks(tmp_path, cname, shuffle, stored, small_chunks_by_blocks):
    rng = np.random.default_rng(11)
    data = rng.standard_normal(70_000).cumsum()
    cparams = bz.cparams(clevel=5, shuffle=shuffle, cname=cname)
    kw = {"rootdir": str(tmp_path / "a"), "mode": "w"} if stored else {}
    a = bz.carray(data, chunklen=16_384, cparams=cparams, **kw)
    if stored:
        a.flush()
        a = bz.open(str(tmp_path / "a"), mode="r")
    for _ in range(200):
        i = int(rng.integers(0, len(data)))
        assert a[i] == data[i]
        j = int(rng.integers(0, len(data) - 50))
        np.testing.assert_array_equal(a[j:j + 37], data[j:j + 37])
    idx = rng.integers(0, len(data), 30)
    np.testing.assert_array_equal(a[idx], data[idx])
    engine = a._engine
    used = bool(engine.blocks._tables) and any(engine.blocks._tables.values())
    assert used is (cname != "blosclz" and shuffle != 2)


def test_block_reads_follow_writes(tmp_path, small_chunks_by_blocks):
    data = np.arange(50_000, dtype=np.float64)
    a = bz.carray(data, chunklen=4_096, rootdir=str(tmp_path / "a"), mode="w")
    assert a[5_000] == 5_000.0 and a[9_000] == 9_000.0     # tables of chunks 1 and 2 kept
    a[4_096:8_192] = -1.0
    a[8_500] = 7.5
    assert a[5_000] == -1.0 and a[8_500] == 7.5
    a.trim(5_000)                                         # the last 5,000 go
    a.append(np.full(10_000, 3.0))
    assert a[44_999] == 44_999.0 and a[45_000] == 3.0 and a[49_500] == 3.0
    a.flush()
    b = bz.open(str(tmp_path / "a"), mode="r")
    assert b[5_000] == -1.0 and b[8_500] == 7.5 and b[54_999] == 3.0


def test_verify_reads_whole_files(tmp_path, small_chunks_by_blocks):
    data = np.arange(50_000, dtype=np.int64)
    bz.carray(data, chunklen=4_096, rootdir=str(tmp_path / "a"), mode="w").flush()
    a = bz.open(str(tmp_path / "a"), mode="r", verify=True)
    assert a[12_345] == 12_345
    assert not any(a._engine.blocks._tables.values())


def test_loops_over_items_decode_the_chunk_once(tmp_path, small_chunks_by_blocks):
    data = np.arange(20_000, dtype=np.int64)
    a = bz.carray(data, chunklen=4_096, rootdir=str(tmp_path / "a"), mode="w")
    a.flush()
    a = bz.open(str(tmp_path / "a"), mode="r")
    assert [a[i] for i in range(100, 110)] == list(range(100, 110))
    assert 0 in a._engine.cache


def test_block_reads_is_checked_against_the_metadata(tmp_path, small_chunks_by_blocks):
    data = np.arange(50_000, dtype=np.int64)
    bz.carray(data, chunklen=4_096, rootdir=str(tmp_path / "a"), mode="w").flush()
    other = blosc.compress(np.arange(100, dtype=np.int64).tobytes(), 8, 5, 1, "lz4")
    path = tmp_path / "a" / "data" / "__3.blp"
    path.write_bytes(path.read_bytes()[:16] + other)
    a = bz.open(str(tmp_path / "a"), mode="r")
    with pytest.raises(FormatError, match="announces 800 bytes"):
        a[3 * 4_096 + 5]
    assert isinstance(a._engine.blocks, BlockReads)


def test_random_reads_against_numpy_many_dtypes(tmp_path, small_chunks_by_blocks):
    rng = random.Random(5)
    for dtype in ["i1", "i2", "<f4", ">f8", "U3", "S5", "c16", "M8[s]", "(3,)i4",
                  "i4,f8"]:
        arr = np.zeros(30_000, dtype=dtype)
        raw = arr.view(np.uint8).reshape(-1)
        raw[:] = np.random.default_rng(1).integers(0, 4, raw.size)
        a = bz.carray(arr, chunklen=5_000, rootdir=str(tmp_path / dtype), mode="w")
        a.flush()
        a = bz.open(str(tmp_path / dtype), mode="r")
        for _ in range(40):
            i = rng.randrange(len(arr))
            assert np.array(a[i], dtype=arr.dtype).tobytes() == arr[i:i + 1].tobytes()
            j = rng.randrange(len(arr) - 9)
            assert a[j:j + 9].tobytes() == arr[j:j + 9].tobytes()


def test_small_chunks_are_decoded_whole_and_cached(tmp_path):
    data = np.arange(20_000, dtype=np.int64)
    a = bz.carray(data, chunklen=4_096, rootdir=str(tmp_path / "a"), mode="w")
    a.flush()
    a = bz.open(str(tmp_path / "a"), mode="r")
    assert a[5_000] == 5_000 and 1 in a._engine.cache and not a._engine.blocks._tables


@pytest.mark.parametrize("typesize", [3, 5, 16])
def test_a_chunk_of_another_typesize_reads_as_the_whole_chunk_does(tmp_path, typesize):
    """A chunk file whose Blosc typesize is not the one bcolz writes for the atom
    (another writer's) gives the same items by block reads as by whole-chunk
    reads, never a bare ValueError of the block decoder."""
    from bcolz_store.format.bloscpack import split_chunk_file
    root = tmp_path / "c"
    bz.carray(np.arange(100_000, dtype="i8"), chunklen=20_000, rootdir=str(root), mode="w")
    path = root / "data" / "__1.blp"
    raw = path.read_bytes()
    body = bytes(split_chunk_file(raw))
    path.write_bytes(raw[:len(raw) - len(body)] +
                     blosc.compress(blosc.decompress(body), typesize=typesize, clevel=5,
                                    shuffle=blosc.SHUFFLE, cname="lz4"))
    c = bz.open(str(root))
    assert c[25_000] == 25_000
    assert c[[20_001, 39_999]].tolist() == [20_001, 39_999]
    assert c[20_000:40_000].tolist() == list(range(20_000, 40_000))


def test_a_block_decoder_failure_is_a_format_error_naming_the_file(tmp_path, monkeypatch,
                                                                    small_chunks_by_blocks):
    root = tmp_path / "c"
    bz.carray(np.arange(50_000, dtype="i8"), chunklen=4_096, rootdir=str(root), mode="w")

    def refuse(self, start, out):
        raise ValueError("cannot reshape array")
    monkeypatch.setattr(ChunkBlocks, "read_into", refuse)
    with pytest.raises(FormatError, match=r"__3\.blp.*cannot reshape") as caught:
        bz.open(str(root))[3 * 4_096 + 5]
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
