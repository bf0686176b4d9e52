"""The contract every column kind (:class:`~bcolz_store.kinds.base.ColumnKind`) keeps.

A kind proves itself by inheriting :class:`KindTests` in its own test module
and supplying two fixtures: ``kind_class`` (the registered ColumnKind
subclass) and ``arrow_array`` (a pyarrow Array of the kind's Arrow type with
at least 1,000 rows, holding nulls where the kind has them)::

    import pyarrow as pa
    import pytest
    from bcolz_store.testing.kinds import KindTests
    from my_kinds import HexKind        # a ColumnKind subclass, registered

    class TestHexKind(KindTests):
        @pytest.fixture
        def kind_class(self):
            return HexKind

        @pytest.fixture
        def arrow_array(self):
            return pa.array(["a", None, "bcd"] * 400)

The inherited tests then check, with small chunks (``chunklen`` 100: several
chunks and a leftover): the kind is registered under its key and found for
the array's type; a carray made from the array is of the kind, in memory and
on disk, and gives the array back exactly through :meth:`carray.to_buffers`,
the Arrow C stream and ``pyarrow.table`` of a ctable, after reopening too;
slices across chunk boundaries decode to the array's slices; rows appended
as Arrow after creation land after the others; ``missing`` agrees with the
array's nulls; ``to_python`` agrees with ``c[:]``; an empty array makes an
empty carray; two writers on a ``memory://`` store append after each other;
a trim and an append after reopening leave exactly the array.

This module imports pytest and pyarrow; ``import bcolz_store`` never imports it.
"""

from __future__ import annotations

import numpy as np
import pytest

import bcolz_store
from ..kinds.arrow import to_pyarrow
from ..kinds.base import ColumnKind, kind_for_arrow, registered

__all__ = ["KindTests", "arrow_equal", "items_equal"]

pa = pytest.importorskip("pyarrow")

#: rows per chunk of the carrays the tests make (several chunks and a leftover)
CHUNKLEN = 100


def _plain(arr):
    """``arr`` (Array or ChunkedArray) as one Array with dictionaries decoded
    and view types as their large types."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], type=arr.type)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_string_view(arr.type):
        arr = arr.cast(pa.large_string())
    elif pa.types.is_binary_view(arr.type):
        arr = arr.cast(pa.large_binary())
    return arr


def arrow_equal(got, want) -> bool:
    """Whether two pyarrow arrays hold the same rows, nulls in the same places
    (dictionaries decoded; ``string`` and ``large_string`` alike)."""
    got, want = _plain(got), _plain(want)
    if got.type != want.type:
        try:
            got = got.cast(want.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return False
    return got.equals(want)


def _item(value):
    if value is None or value is np.ma.masked:
        return None
    if isinstance(value, np.ndarray):
        return [_item(v) for v in value]
    if isinstance(value, (list, tuple)):
        return [_item(v) for v in value]
    if isinstance(value, dict):
        return {k: _item(v) for k, v in value.items()}
    if isinstance(value, np.void) and value.dtype.names:
        return tuple(_item(value[name]) for name in value.dtype.names)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _rows(values) -> list:
    if isinstance(values, np.ma.MaskedArray):
        return [None if m else _item(v) for v, m in
                zip(values.data, np.ma.getmaskarray(values).reshape(len(values), -1).any(1))]
    return [_item(v) for v in values]


def items_equal(got, want) -> bool:
    """Whether two sequences of rows (numpy arrays, masked arrays, object
    arrays of Python items) hold equal items, missing ones alike."""
    return len(got) == len(want) and _rows(got) == _rows(want)


class KindTests:
    """The tests every column kind passes; a subclass supplies ``kind_class``
    and ``arrow_array`` (see the module's docstring)."""

    # ------------------------------------------------------------ helpers

    def make(self, arrow_array, tmp_path=None, name="c", rootdir=None):
        if rootdir is None and tmp_path is not None:
            rootdir = str(tmp_path / name)
        return bcolz_store.carray(arrow_array, chunklen=CHUNKLEN, rootdir=rootdir, mode="w")

    def decoded(self, c, start=0, stop=None):
        return to_pyarrow(pa, c.to_buffers(start, stop), c.kind.arrow_type(pa))

    # ------------------------------------------------------------ the registry

    def test_the_kind_is_registered_under_its_key(self, kind_class):
        assert issubclass(kind_class, ColumnKind)
        assert kind_class.key
        assert registered()[kind_class.key] is kind_class

    def test_the_kind_takes_its_arrow_type(self, kind_class, arrow_array):
        found = kind_for_arrow(pa, arrow_array.type)
        assert isinstance(found, kind_class)
        assert found.accepts(pa, arrow_array.type)

    def test_the_array_is_large_enough_to_test(self, arrow_array):
        assert len(arrow_array) >= 3 * CHUNKLEN + 1, "give at least 301 rows: chunks and a leftover"

    # ------------------------------------------------------------ round trips

    def test_a_carray_made_from_arrow_is_of_the_kind(self, kind_class, arrow_array):
        c = self.make(arrow_array)
        assert isinstance(c.kind, kind_class)
        assert len(c) == len(arrow_array)

    def test_buffers_give_the_array_back_in_memory(self, arrow_array):
        c = self.make(arrow_array)
        assert arrow_equal(self.decoded(c), arrow_array)

    def test_buffers_give_the_array_back_after_reopening(self, arrow_array, tmp_path):
        c = self.make(arrow_array, tmp_path)
        kind = c.kind
        c.flush()
        again = bcolz_store.open(str(tmp_path / "c"), mode="r")
        assert again.kind == kind
        assert arrow_equal(self.decoded(again), arrow_array)

    def test_the_arrow_stream_gives_the_array_back(self, arrow_array, tmp_path):
        self.make(arrow_array, tmp_path).flush()
        again = bcolz_store.open(str(tmp_path / "c"), mode="r")
        got = pa.RecordBatchReader.from_stream(again).read_all().column(0)
        assert arrow_equal(got, arrow_array)

    @pytest.mark.parametrize("where", [(0, 1), (0, CHUNKLEN), (CHUNKLEN - 1, CHUNKLEN + 1),
                                       (37, 3 * CHUNKLEN + 1), (3 * CHUNKLEN, None), (5, 5)])
    def test_slices_across_chunks_decode_to_the_array_slices(self, arrow_array, tmp_path, where):
        self.make(arrow_array, tmp_path).flush()
        c = bcolz_store.open(str(tmp_path / "c"), mode="r")
        start, stop = where
        stop = len(arrow_array) if stop is None else stop
        assert arrow_equal(self.decoded(c, start, stop), arrow_array.slice(start, stop - start))

    def test_rows_appended_as_arrow_land_after_the_others(self, arrow_array, tmp_path):
        cut = len(arrow_array) // 3 + 7
        c = self.make(arrow_array.slice(0, cut), tmp_path)
        c.append(arrow_array.slice(cut))
        c.flush()
        again = bcolz_store.open(str(tmp_path / "c"), mode="r")
        assert len(again) == len(arrow_array)
        assert arrow_equal(self.decoded(again), arrow_array)

    def test_a_ctable_column_of_the_kind_round_trips(self, kind_class, arrow_array, tmp_path):
        n = len(arrow_array)
        table = pa.table({"k": arrow_array, "f": pa.array(np.arange(n, dtype=np.float64))})
        bcolz_store.ctable(table, rootdir=str(tmp_path / "t"), mode="w").flush()
        t = bcolz_store.open(str(tmp_path / "t"), mode="r")
        assert isinstance(t["k"].kind, kind_class)
        got = pa.table(t)
        assert arrow_equal(got.column("k"), arrow_array)
        assert got.column("f").to_numpy().tolist() == list(range(n))

    def test_two_writers_on_a_memory_store_append_after_each_other(self, kind_class,
                                                                     arrow_array):
        """On an fsspec ``memory://`` store (the remote protocol S3 uses too),
        two writers opened at the same state append in turn: the second's
        rows land after the first's, and a fresh open reads every row."""
        fsspec = pytest.importorskip("fsspec")
        import uuid
        root = f"memory://kindtests-{uuid.uuid4().hex}"
        url = f"{root}/c"
        cut = len(arrow_array) // 2 + 3
        try:
            self.make(arrow_array.slice(0, cut), name=None, rootdir=url).flush()
            first = bcolz_store.open(url, mode="a")
            second = bcolz_store.open(url, mode="a")
            first.append(arrow_array.slice(cut, 10))
            first.flush()
            second.append(arrow_array.slice(cut + 10))
            second.flush()
            back = bcolz_store.open(url, mode="r")
            assert isinstance(back.kind, kind_class)
            assert len(back) == len(arrow_array)
            assert arrow_equal(self.decoded(back), arrow_array)
            assert bcolz_store.verify(url).ok
        finally:
            fs = fsspec.filesystem("memory")
            if fs.exists(root):
                fs.rm(root, recursive=True)

    def test_a_trim_and_an_append_after_reopening(self, arrow_array, tmp_path):
        """Rows trimmed from the end are gone after reopening, and rows
        appended then land where they were; ``verify`` finds nothing wrong."""
        self.make(arrow_array, tmp_path).flush()
        c = bcolz_store.open(str(tmp_path / "c"), mode="a")
        keep = len(arrow_array) - CHUNKLEN - 5
        c.trim(len(arrow_array) - keep)
        c.flush()
        c = bcolz_store.open(str(tmp_path / "c"), mode="a")
        assert arrow_equal(self.decoded(c), arrow_array.slice(0, keep))
        c.append(arrow_array.slice(keep))
        c.flush()
        again = bcolz_store.open(str(tmp_path / "c"), mode="r")
        assert arrow_equal(self.decoded(again), arrow_array)
        assert bcolz_store.verify(str(tmp_path / "c")).ok

    def test_an_empty_array_makes_an_empty_carray(self, kind_class, arrow_array):
        c = self.make(arrow_array.slice(0, 0))
        assert len(c) == 0
        assert isinstance(c.kind, kind_class)
        assert c.to_buffers().length == 0

    # ------------------------------------------------------------ items

    def test_missing_rows_are_the_arrays_nulls(self, arrow_array):
        c = self.make(arrow_array)
        got = c.kind.missing(c.to_buffers())
        assert got.dtype == bool
        assert got.tolist() == arrow_array.is_null().to_pylist()

    def test_python_items_are_what_reads_give(self, arrow_array, tmp_path):
        self.make(arrow_array, tmp_path).flush()
        c = bcolz_store.open(str(tmp_path / "c"), mode="r")
        assert items_equal(c.kind.to_python(c.to_buffers()), c[:])
        assert items_equal(c.kind.to_python(c.to_buffers(CHUNKLEN - 3, 2 * CHUNKLEN + 5)),
                           c[CHUNKLEN - 3:2 * CHUNKLEN + 5])
