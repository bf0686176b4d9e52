"""The vlen column kind: Arrow string and binary columns written straight into
vlen chunks and read straight back to Arrow buffers."""

import numpy as np
import pytest

import bcolz_store as bcolz
from bcolz_store.kinds.vlen.chunk import encode_chunk
from bcolz_store.kinds.vlen.chunk_buffers import decode_buffers, encode_buffers
from bcolz_store.errors import FormatError
from bcolz_store.kinds.arrow import from_pyarrow, to_pyarrow
from bcolz_store.kinds.vlen.kind import VlenKind
from bcolz_store.testing.kinds import KindTests, arrow_equal

pa = pytest.importorskip("pyarrow")


def _words(n, seed=0, nulls=True):
    rng = np.random.default_rng(seed)
    alphabet = list("abcdefghij") + ["é", "ß", "日本", "🙂"]
    out = []
    for i in range(n):
        k = int(rng.integers(0, 12))
        out.append("".join(rng.choice(alphabet, k).tolist()))
    if nulls:
        for i in rng.choice(n, n // 10, replace=False).tolist():
            out[i] = None
    return out


class TestVlenKind(KindTests):
    @pytest.fixture
    def kind_class(self):
        return VlenKind

    @pytest.fixture
    def arrow_array(self):
        return pa.array(_words(1500))


class TestVlenBytesKind(KindTests):
    @pytest.fixture
    def kind_class(self):
        return VlenKind

    @pytest.fixture
    def arrow_array(self):
        return pa.array([None if w is None else w.encode() + b"\0" for w in _words(1200, 3)],
                        pa.binary())


@pytest.mark.parametrize("kind", ["str", "bytes"])
@pytest.mark.parametrize("nulls", [False, True])
@pytest.mark.parametrize("level", [1, 6])
def test_chunk_bytes_are_those_of_the_items_encoding(kind, nulls, level):
    items = _words(3000, seed=level, nulls=nulls)
    if kind == "bytes":
        items = [None if w is None else w.encode("utf-8") for w in items]
    arr = pa.array(items, pa.string() if kind == "str" else pa.binary())
    for a, b in [(0, 3000), (17, 2017), (2999, 3000), (5, 5)]:
        rows = from_pyarrow(pa, arr.slice(a, b - a))
        got = encode_buffers(rows.offsets, rows.values, rows.validity, kind, level)
        assert got == encode_chunk(items[a:b], kind, level)


def test_missing_rows_with_bytes_are_dropped_as_the_items_encoding_does():
    # Arrow lets a null row point at bytes; a vlen chunk stores none for it
    offsets = np.array([0, 2, 5, 7], dtype=np.int32)
    data = np.frombuffer(b"abXYZcd", dtype=np.uint8)
    valid = np.array([True, False, True])
    got = encode_buffers(offsets, data, valid, "str", 3)
    assert got == encode_chunk(["ab", None, "cd"], "str", 3)
    ends, region, validity = decode_buffers(got, "str")
    assert ends.tolist() == [2, 2, 4] and region.tobytes() == b"abcd"
    assert validity.tolist() == [True, False, True]


def test_decoded_rows_are_checked_utf8():
    chunk = encode_chunk([b"ok", b"\xc3"], "bytes", 3)
    with pytest.raises(FormatError):
        decode_buffers(chunk.replace(b"bvlc", b"bvlc"), "str")
    # a str chunk whose item starts on a continuation byte: refused by the kind's decode
    offsets = np.array([0, 1, 2], dtype=np.int64)
    data = np.frombuffer("é".encode(), dtype=np.uint8)
    raw = encode_buffers(offsets, data, None, "str", 3)       # (not checked when encoding)
    with pytest.raises(FormatError, match="UTF-8"):
        decode_buffers(raw, "str")


def test_invalid_utf8_is_refused_before_anything_is_written():
    c = bcolz.carray(pa.array(["a", "b"]), chunklen=64)
    bad = pa.Array.from_buffers(pa.string(), 2, [None, pa.py_buffer(
        np.array([0, 1, 2], dtype=np.int32)), pa.py_buffer(b"a\xff")])
    with pytest.raises(ValueError, match="row 1 is not valid UTF-8"):
        c.append(bad)
    assert c[:].tolist() == ["a", "b"]


@pytest.mark.parametrize("chunklen", [64, 100, 1000])
def test_appends_across_leftovers_and_reopening(tmp_path, chunklen):
    items = _words(2500, seed=chunklen)
    arr = pa.array(items)
    c = bcolz.carray(arr.slice(0, 37), chunklen=chunklen, rootdir=str(tmp_path / "c"),
                     mode="w")
    c.append(arr.slice(37, 1000))
    c.append(["x", None])                       # Python items in between
    c.append(arr.slice(1037, 1463))
    c.flush()
    want = items[:1037] + ["x", None] + items[1037:]
    assert c[:].tolist() == want
    back = bcolz.open(str(tmp_path / "c"))
    assert back[:].tolist() == want
    got = to_pyarrow(pa, back.to_buffers(), pa.string())
    assert arrow_equal(got, pa.array(want))
    for a, b in [(0, 1), (chunklen - 1, chunklen + 1), (5, 2000), (2400, 2502), (7, 7)]:
        part = to_pyarrow(pa, back.to_buffers(a, b), pa.string())
        assert part.to_pylist() == want[a:b]


def test_chunks_written_from_arrow_equal_those_written_from_items(tmp_path):
    items = _words(1000, seed=5)
    a = bcolz.carray(pa.array(items), chunklen=128, rootdir=str(tmp_path / "a"), mode="w")
    b = bcolz.carray(items, dtype=bcolz.vlen("str"), chunklen=128,
                     rootdir=str(tmp_path / "b"), mode="w")
    a.flush()
    b.flush()
    files = sorted(p.name for p in (tmp_path / "a" / "data").iterdir())
    assert files == sorted(p.name for p in (tmp_path / "b" / "data").iterdir())
    for name in files:
        assert (tmp_path / "a" / "data" / name).read_bytes() == \
            (tmp_path / "b" / "data" / name).read_bytes()
    assert (tmp_path / "a" / "meta" / "stats").read_bytes() == \
        (tmp_path / "b" / "meta" / "stats").read_bytes()


def test_a_carray_without_missing_items_refuses_arrow_nulls():
    c = bcolz.carray(["a"], dtype=bcolz.vlen("str", nullable=False), chunklen=64)
    with pytest.raises(ValueError, match="missing"):
        c.append(pa.array(["b", None]))
    assert c[:].tolist() == ["a"]


def test_views_and_large_types_are_taken():
    for typ in (pa.large_string(), pa.string_view()):
        c = bcolz.carray(pa.array(["a", None, "bc"], typ))
        assert c.kind == VlenKind(bcolz.vlen("str")) and c[:].tolist() == ["a", None, "bc"]
    c = bcolz.carray(pa.array([b"a", None], pa.large_binary()))
    assert c[:].tolist() == [b"a", None]
    assert pa.table(c).column(0).type == pa.binary()


def test_chunklen_from_arrow_rows_is_that_of_the_same_items():
    for items in (["x" * 1000] * 5000, ["abc", None] * 50000, _words(20000, 9)):
        assert bcolz.carray(pa.array(items)).chunklen == \
            bcolz.carray(items, dtype=bcolz.vlen("str")).chunklen
