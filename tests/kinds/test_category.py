"""The categorical column kind: Arrow dictionary rows written as codes into
fixed categories, read back as indices + the categories as the dictionary."""

from __future__ import annotations

import numpy as np
import pytest

import bcolz_store
from bcolz_store.kinds.arrow import from_pyarrow, to_pyarrow
from bcolz_store.kinds.category.kind import CategoryKind
from bcolz_store.testing.kinds import KindTests, arrow_equal

pa = pytest.importorskip("pyarrow")

SYMBOLS = [f"sym{i:03d}" for i in range(300)]


def _dict_array(n=1234, seed=0, symbols=SYMBOLS, index=pa.int16(), binary=False):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, len(symbols), n)
    mask = rng.random(n) < 0.1
    values = pa.array([s.encode() for s in symbols] if binary else symbols)
    return pa.DictionaryArray.from_arrays(pa.array(codes, type=index, mask=mask), values)


class TestCategoryKind(KindTests):
    @pytest.fixture
    def kind_class(self):
        return CategoryKind

    @pytest.fixture
    def arrow_array(self):
        return _dict_array()


def _decoded(c, start=0, stop=None):
    return to_pyarrow(pa, c.to_buffers(start, stop), c.kind.arrow_type(pa))


@pytest.mark.parametrize("binary", [False, True])
def test_round_trip_across_chunks_and_reopening(tmp_path, binary):
    arr = _dict_array(binary=binary)
    c = bcolz_store.carray(arr, chunklen=100, rootdir=str(tmp_path / "c"), mode="w")
    assert c.kind == CategoryKind(np.dtype("int16"), "bytes" if binary else "str", False)
    assert c.category.categories == ([s.encode() for s in SYMBOLS] if binary else SYMBOLS)
    c.flush()
    back = bcolz_store.open(str(tmp_path / "c"))
    for start, stop in [(0, None), (0, 100), (95, 205), (1200, 1234), (7, 8), (50, 50)]:
        got = _decoded(back, start, stop)
        got.validate(full=True)
        assert got.type == pa.dictionary(pa.int16(), pa.binary() if binary else pa.string())
        assert arrow_equal(got, arr[start:stop])
        assert got.null_count == arr[start:stop].null_count
    assert back[:].tolist() == arr.to_pylist()
    assert pa.table(back).column(0).to_pylist() == arr.to_pylist()


def test_other_dictionaries_map_onto_the_categories(tmp_path):
    c = bcolz_store.carray(_dict_array(), chunklen=100, rootdir=str(tmp_path / "c"), mode="w")
    # another order, another index width, unused entries, a null entry
    other = pa.DictionaryArray.from_arrays(
        pa.array([3, 0, None, 2, 1, 4], type=pa.uint8()),
        pa.array(["sym299", "sym000", "sym005", "sym017", None, "unused"]))
    c.append(other)
    assert c[-6:].tolist() == ["sym017", "sym299", None, "sym005", "sym000", None]
    assert c.codes[-6:].tolist() == [17, 299, -1, 5, 0, -1]
    c.append(pa.array(["sym001", None, "sym002"]))          # plain strings
    c.append(pa.chunked_array([other.slice(0, 2), other.slice(3, 2)]))
    assert c[-7:].tolist() == ["sym001", None, "sym002", "sym017", "sym299", "sym005",
                               "sym000"]
    c.flush()
    assert bcolz_store.open(str(tmp_path / "c"))[-7:].tolist() == c[-7:].tolist()


def test_a_row_that_is_not_a_category_is_refused_before_anything_changes(tmp_path):
    c = bcolz_store.carray(_dict_array(n=50), chunklen=100, rootdir=str(tmp_path / "c"),
                           mode="w")
    c.append(pa.array(["sym001"]))          # not yet committed: kept after the refusal
    bad = pa.DictionaryArray.from_arrays(pa.array([0, 1], type=pa.int8()),
                                         pa.array(["sym003", "pink"]))
    with pytest.raises(ValueError, match="'pink' is not one of the 300 categories"):
        c.append(bad)
    with pytest.raises(ValueError, match="'pink' is not one of the 300 categories"):
        c.append(pa.array(["sym003", "pink"]))
    assert len(c) == 51 and c[-1] == "sym001"
    with pytest.raises(bcolz_store.errors.KindMismatchError):
        c.append(pa.array([b"sym003"]))       # binary rows for str categories


def test_ctable_of_an_arrow_table_with_a_categorical_column(tmp_path):
    arr = _dict_array(n=3000)
    table = pa.table({"i": np.arange(3000), "sym": arr})
    t = bcolz_store.ctable(table, rootdir=str(tmp_path / "t"), mode="w")
    assert isinstance(t.cols["sym"].kind, CategoryKind)
    t.append(pa.table({"i": [3000, 3001], "sym": pa.array(["sym010", None])}
                      ).cast(pa.schema([("i", pa.int64()), ("sym", pa.string())])))
    back = pa.table(t)
    assert back.column("sym").to_pylist() == arr.to_pylist() + ["sym010", None]
    t.flush()
    found = bcolz_store.open(str(tmp_path / "t"))
    assert [r.i for r in found.where("sym == 'sym010'")] == \
        [i for i, v in enumerate(back.column("sym").to_pylist()) if v == "sym010"]


def test_read_buffers_append_as_they_are():
    c = bcolz_store.carray(_dict_array(n=500), chunklen=64)
    d = bcolz_store.carray(_dict_array(n=10, seed=3), chunklen=64)
    d.append(c.to_buffers(100, 300))
    assert d[10:].tolist() == c[100:300].tolist()
    buffers = from_pyarrow(pa, _dict_array(n=20, seed=4))
    d.append(buffers)
    assert d[-20:].tolist() == _dict_array(n=20, seed=4).to_pylist()


def test_write_from_python_items_matches_pyarrow():
    items = _dict_array(n=2000, seed=5).to_pylist()
    c = bcolz_store.carray(items, dtype=bcolz_store.category(SYMBOLS), chunklen=128)
    assert c[:].tolist() == items
    with pytest.raises(ValueError, match="'pink' is not one of"):
        bcolz_store.carray(items + ["pink"], dtype=bcolz_store.category(SYMBOLS))


def test_indices_outside_the_dictionary_are_refused_and_null_slots_ignored():
    c = bcolz_store.carray(_dict_array(n=20), chunklen=8)
    values = pa.array(["sym001", "sym002"])
    # a null row's index slot may hold anything: not looked at
    idx = np.array([1, 77, 0], dtype=np.int8)
    arr = pa.DictionaryArray.from_buffers(
        pa.dictionary(pa.int8(), pa.string()), 3,
        [pa.py_buffer(np.packbits([1, 0, 1], bitorder="little")), pa.py_buffer(idx)], values)
    c.append(arr)
    assert c[-3:].tolist() == ["sym002", None, "sym001"]
    bad = pa.DictionaryArray.from_buffers(
        pa.dictionary(pa.int8(), pa.string()), 2,
        [None, pa.py_buffer(np.array([0, 5], dtype=np.int8))], values)
    with pytest.raises(ValueError, match="indices outside 0..1"):
        c.append(from_pyarrow(pa, bad))
    assert len(c) == 23
