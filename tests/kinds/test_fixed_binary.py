"""Fixed-size binary columns (Arrow ``fixed_size_binary(n)``): the kind's contract
(:class:`~bcolz_store.testing.kinds.KindTests`) and its own paths: every byte
kept (trailing NULs too), nulls, chunk boundaries, reopening, the
``meta/storage`` entry, and the Arrow and Parquet conversions."""

from __future__ import annotations

import json

import numpy as np
import pytest

import bcolz_store
from bcolz_store.errors import FormatError
from bcolz_store.kinds.arrow import to_pyarrow
from bcolz_store.kinds.fixed_binary.kind import FixedBinaryKind
from bcolz_store.testing.kinds import KindTests, arrow_equal

pa = pytest.importorskip("pyarrow")


def _items(n: int, width: int = 16, seed: int = 0) -> list:
    """``n`` items of ``width`` random bytes, every 7th ending in NUL bytes."""
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, (n, width), dtype=np.uint8)
    raw[::7, width // 2:] = 0
    return [bytes(row) for row in raw]


def _array(n: int = 1234, width: int = 16, nulls: bool = True):
    items = _items(n, width)
    return pa.array([None if nulls and i % 5 == 3 else v for i, v in enumerate(items)],
                    pa.binary(width))


class TestFixedBinaryKind(KindTests):
    @pytest.fixture
    def kind_class(self):
        return FixedBinaryKind

    @pytest.fixture
    def arrow_array(self):
        return _array()


class TestWithoutNulls(KindTests):
    @pytest.fixture
    def kind_class(self):
        return FixedBinaryKind

    @pytest.fixture
    def arrow_array(self):
        return _array(1001, 5, nulls=False)


def test_trailing_nul_bytes_are_kept(tmp_path):
    arr = pa.array([b"ab\x00\x00", b"\x00\x00\x00\x00", None, b"\x00\x01\x02\x00"],
                   pa.binary(4))
    c = bcolz_store.carray(arr, rootdir=str(tmp_path / "c"), mode="w")
    c.flush()
    again = bcolz_store.open(str(tmp_path / "c"))
    assert again.dtype == np.dtype("V4")
    got = again[:]
    assert isinstance(got, np.ma.MaskedArray)
    assert got.mask.tolist() == [False, False, True, False]
    assert [bytes(v) for v in got.data[[0, 1, 3]]] == [b"ab\x00\x00", b"\x00" * 4,
                                                       b"\x00\x01\x02\x00"]
    assert got.tolist() == [b"ab\x00\x00", b"\x00" * 4, None, b"\x00\x01\x02\x00"]
    stream = pa.RecordBatchReader.from_stream(again).read_all().column(0)
    assert stream.type == pa.binary(4)
    assert stream.to_pylist() == arr.to_pylist()


def test_the_storage_entry_and_the_plain_layout(tmp_path):
    c = bcolz_store.carray(_array(300, 8), chunklen=100, rootdir=str(tmp_path / "c"), mode="w")
    c.flush()
    storage = json.loads((tmp_path / "c" / "meta" / "storage").read_text())
    assert storage["dtype"] == "|V8"                   # the real bcolz reads raw bytes
    assert storage["fixed_binary"] == {"version": 1, "byte_width": 8, "nullable": True}
    assert "nullable" in storage and (tmp_path / "c" / "valid" / "meta").is_dir()
    plain = bcolz_store.carray(np.zeros(3, "V2"), rootdir=str(tmp_path / "p"), mode="w")
    plain.flush()
    storage = json.loads((tmp_path / "p" / "meta" / "storage").read_text())
    assert storage["fixed_binary"] == {"version": 1, "byte_width": 2, "nullable": False}
    assert not (tmp_path / "p" / "valid").exists()


def test_a_carray_written_without_the_entry_is_of_the_kind(tmp_path):
    """A ``V{n}`` carray of the layout before the kind (no entry) reads the same."""
    c = bcolz_store.carray(np.array([b"a\x00\x00", b"\x00bc"], "V3"),
                           rootdir=str(tmp_path / "c"), mode="w")
    c.flush()
    path = tmp_path / "c" / "meta" / "storage"
    storage = json.loads(path.read_text())
    del storage["fixed_binary"]
    path.write_text(json.dumps(storage))
    again = bcolz_store.open(str(tmp_path / "c"))
    assert again.kind == FixedBinaryKind(3, nullable=False)
    assert to_pyarrow(pa, again.to_buffers(), pa.binary(3)).to_pylist() == [b"a\x00\x00",
                                                                             b"\x00bc"]


@pytest.mark.parametrize("entry, match", [
    ({"version": 2, "byte_width": 3, "nullable": False}, "version 2"),
    ({"version": 1, "byte_width": 4, "nullable": False}, "byte_width 4"),
    ({"version": 1, "byte_width": 3, "nullable": True}, "nullable True"),
    ([1], "must be an object")])
def test_an_entry_this_code_cannot_read_is_refused(tmp_path, entry, match):
    c = bcolz_store.carray(np.zeros(2, "V3"), rootdir=str(tmp_path / "c"), mode="w")
    c.flush()
    path = tmp_path / "c" / "meta" / "storage"
    storage = json.loads(path.read_text())
    storage["fixed_binary"] = entry
    path.write_text(json.dumps(storage))
    with pytest.raises(FormatError, match=match):
        bcolz_store.open(str(tmp_path / "c"))


@pytest.mark.parametrize("start, stop", [(0, 1), (99, 101), (100, 200), (250, 1234),
                                         (1199, 1234), (7, 7)])
def test_slices_equal_pyarrow_across_chunks_after_reopening(tmp_path, start, stop):
    arr = _array()
    c = bcolz_store.carray(arr, chunklen=100, rootdir=str(tmp_path / "c"), mode="w")
    c.flush()
    again = bcolz_store.open(str(tmp_path / "c"), mode="r")
    got = to_pyarrow(pa, again.to_buffers(start, stop), pa.binary(16))
    assert arrow_equal(got, arr.slice(start, stop - start))
    part = again[start:stop]
    assert part.tolist() == arr.slice(start, stop - start).to_pylist()


def test_appends_of_arrow_and_numpy_rows(tmp_path):
    arr = _array(450, 4)
    c = bcolz_store.carray(arr.slice(0, 130), chunklen=64, rootdir=str(tmp_path / "c"),
                           mode="w")
    c.append(arr.slice(130, 200))                      # Arrow rows: the kind's buffers
    c.append(np.ma.masked_array(np.array([b"\x00\x00\x00\x01"] * 3, "V4"),
                                mask=[False, True, False]))
    c.append(pa.chunked_array([arr.slice(330), arr.slice(330, 0)]))
    c.flush()
    again = bcolz_store.open(str(tmp_path / "c"))
    want = arr.slice(0, 330).to_pylist() + [b"\x00\x00\x00\x01", None, b"\x00\x00\x00\x01"] \
        + arr.slice(330).to_pylist()
    got = pa.RecordBatchReader.from_stream(again).read_all().column(0)
    assert got.to_pylist() == want
    assert again[:].tolist() == want


def test_missing_rows_in_a_carray_without_nulls_are_refused():
    c = bcolz_store.carray(np.zeros(3, "V2"))
    with pytest.raises(ValueError, match="not nullable"):
        c.append(pa.array([b"ab", None], pa.binary(2)))
    assert len(c) == 3


def test_rows_of_another_width_are_not_taken_as_the_kinds():
    c = bcolz_store.carray(pa.array([b"abc"], pa.binary(3)))
    assert not c.kind.accepts(pa, pa.binary(4))
    with pytest.raises(ValueError, match="not 3-byte items"):
        c.kind.encode(c._engine, bcolz_store.kinds.ArrowBuffers(1, None, None,
                                                                np.zeros(1, "V4")))


def test_a_width_below_one_is_refused():
    with pytest.raises(ValueError, match="at least 1 byte"):
        FixedBinaryKind(0)


def test_the_kind_makes_the_carray_of_its_dtype():
    kind = FixedBinaryKind(6)
    c = bcolz_store.carray([b"abc\x00\x00\x00"], dtype=kind.dtype())
    assert c.kind == FixedBinaryKind(6, nullable=False)
    assert bytes(c[0]) == b"abc\x00\x00\x00"


def test_a_table_with_trailing_nuls_converts_from_arrow_and_parquet(tmp_path):
    import pyarrow.parquet as pq
    from bcolz_store.converters.arrow import from_arrow, from_parquet, to_parquet
    table = pa.table({"f": _array(500, 4), "g": _array(500, 3, nulls=False),
                      "i": pa.array(np.arange(500))})
    for name, made in (("a", lambda p: from_arrow(table, p)),
                       ("b", lambda p: bcolz_store.ctable(table, rootdir=p, mode="w")),
                       ("c", lambda p: (pq.write_table(table, tmp_path / "t.parquet"),
                                        from_parquet(tmp_path / "t.parquet", p))[1])):
        made(str(tmp_path / name)).flush()
        t = bcolz_store.open(str(tmp_path / name))
        assert isinstance(t["f"].kind, FixedBinaryKind), name
        back = pa.table(t)
        assert back.column("f").type == pa.binary(4), name
        assert back.column("f").to_pylist() == table.column("f").to_pylist(), name
        assert back.column("g").to_pylist() == table.column("g").to_pylist(), name
        to_parquet(t, tmp_path / f"{name}.parquet")
        again = pq.read_table(tmp_path / f"{name}.parquet")
        assert again.column("f").type == pa.binary(4), name
        assert again.column("f").to_pylist() == table.column("f").to_pylist(), name


def test_python_items_with_none_are_built_by_pyarrow_and_keep_every_byte(tmp_path):
    items = _items(700, 5)
    objs = [None if i % 4 == 1 else v for i, v in enumerate(items)]
    c = bcolz_store.carray(objs, dtype="V5", chunklen=64, rootdir=str(tmp_path / "c"),
                           mode="w")
    c.flush()
    again = bcolz_store.open(str(tmp_path / "c"))
    assert again.kind == FixedBinaryKind(5, nullable=True)
    assert again[:].tolist() == objs
    assert to_pyarrow(pa, again.to_buffers(), pa.binary(5)).to_pylist() == objs
    # items of another width: pyarrow refuses them, and numpy's path takes them as before
    assert bcolz_store.carray([b"abcd", None], dtype="V3")[:].tolist() == [b"abc", None]
    assert bcolz_store.carray([b"ab", None], dtype="V3")[:].tolist() == [b"ab\x00", None]


def test_the_real_bcolz_reads_the_raw_bytes(tmp_path):
    real = pytest.importorskip("bcolz")
    arr = pa.array([b"ab\x00\x00", None, b"\x00\x01\x02\x03"], pa.binary(4))
    bcolz_store.carray(arr, rootdir=str(tmp_path / "c"), mode="w").flush()
    theirs = real.open(str(tmp_path / "c"), mode="r")
    assert theirs.dtype == np.dtype("V4")
    assert theirs[:].tolist() == [b"ab\x00\x00", b"\x00" * 4, b"\x00\x01\x02\x03"]
