"""The list kind: list and map columns encoded and decoded from Arrow buffers
with numpy over all items (bcolz_store/kinds/list/)."""

import numpy as np
import pytest

import bcolz_store
from bcolz_store.errors import FormatError
from bcolz_store.format.list_items import encode_items
from bcolz_store.kinds.arrow import from_pyarrow, to_pyarrow
from bcolz_store.kinds.base import kind_for_arrow
from bcolz_store.kinds.list import ListKind
from bcolz_store.kinds.list.arrow_types import arrow_list_type
from bcolz_store.kinds.list.codec import decode_raw, encode_raw
from bcolz_store.testing.kinds import CHUNKLEN, KindTests, arrow_equal

pa = pytest.importorskip("pyarrow")


def _lists(n, seed=0):
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 9, n)
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int32)
    values = pa.array(rng.integers(-10**6, 10**6, int(offsets[-1])).astype(np.int32),
                      mask=rng.random(int(offsets[-1])) < 0.1)
    return pa.ListArray.from_arrays(pa.array(offsets), values,
                                    mask=pa.array(rng.random(n) < 0.1))


def _maps(n, seed=1):
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 5, n)
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int32)
    total = int(offsets[-1])
    keys = pa.array([f"key{i}" for i in range(50)]).take(rng.integers(0, 50, total))
    values = pa.array(rng.integers(-10**9, 10**9, total), mask=rng.random(total) < 0.1)
    return pa.MapArray.from_arrays(pa.array(offsets), keys, values,
                                   mask=pa.array(rng.random(n) < 0.1))


class TestListKind(KindTests):
    @pytest.fixture
    def kind_class(self):
        return ListKind

    @pytest.fixture
    def arrow_array(self):
        return _lists(1234)


class TestMapKind(KindTests):
    @pytest.fixture
    def kind_class(self):
        return ListKind

    @pytest.fixture
    def arrow_array(self):
        return _maps(1234)


class TestStrListKind(KindTests):
    @pytest.fixture
    def kind_class(self):
        return ListKind

    @pytest.fixture
    def arrow_array(self):
        words = ["", "a", "bc", None, "déjà", "x" * 40]
        rows = [None if i % 17 == 3 else [words[(i + j) % 6] for j in range(i % 5)]
                for i in range(1200)]
        return pa.array(rows, pa.large_list(pa.string()))


CASES = [
    pa.array([[1, 2, 3], [], None, [4, None, 6], [7] * 17, [None] * 9], pa.list_(pa.int32())),
    pa.array([["a", "bc"], None, [], ["", None, "xyz"]], pa.list_(pa.string())),
    pa.array([[("a", 1), ("b", None)], None, [], [("zz", 3)]], pa.map_(pa.string(), pa.int64())),
    pa.array([[1.5, None, float("nan")], [2.0, -0.0]], pa.large_list(pa.float64())),
    pa.array([[b"x\x00"], [b"", None]], pa.list_(pa.binary())),
    pa.array([[True, False, None], [True]], pa.list_(pa.bool_())),
    pa.array([[1, None], None, [3]], pa.list_(pa.timestamp("ms", "UTC"))),
    pa.array([[(1, "one")], [(2, None), (3, "")]], pa.map_(pa.int16(), pa.string())),
]


@pytest.mark.parametrize("arr", CASES, ids=lambda a: str(a.type))
@pytest.mark.parametrize("cut", [0, 1])
def test_the_bytes_are_those_of_the_item_by_item_encoding(arr, cut):
    arr = arr.slice(cut)
    typ = arrow_list_type(pa, arr.type, True)
    raw = encode_raw(from_pyarrow(pa, arr), typ, "test")
    items = np.empty(len(arr), dtype=object)
    items[:] = [v for v in arr.to_pylist()]
    assert list(raw) == list(encode_items(items, typ))
    back = to_pyarrow(pa, decode_raw(raw, typ, "test"), arr.type)
    back.validate(full=True)
    assert repr(back.to_pylist()) == repr(arr.to_pylist())      # (NaN as NaN)


def test_a_list_null_with_a_range_of_elements_is_missing():
    values = pa.array([1, 2, 3, 4], pa.int32())
    arr = pa.ListArray.from_arrays(pa.array([0, 2, 4], pa.int32()), values,
                                   mask=pa.array([True, False]))
    c = bcolz_store.carray(arr)
    assert c[0] is None and c[1].tolist() == [3, 4]
    got = to_pyarrow(pa, c.to_buffers(), c.kind.arrow_type(pa))
    assert got.to_pylist() == [None, [3, 4]]


def test_missing_elements_are_refused_where_none_may_be():
    typ = bcolz_store.list_("int32", item_nullable=False)
    c = bcolz_store.carray([[1]], dtype=typ)
    with pytest.raises(ValueError, match="may not be missing"):
        c.append(pa.array([[1, None]], pa.list_(pa.int32())))
    assert len(c) == 1


def test_missing_lists_are_refused_by_a_type_that_is_not_nullable():
    typ = bcolz_store.list_("int32", nullable=False)
    c = bcolz_store.carray([[1]], dtype=typ)
    with pytest.raises(ValueError, match="not nullable"):
        c.append(pa.array([[2], None], pa.list_(pa.int32())))
    assert len(c) == 1


def test_a_damaged_item_is_a_format_error():
    typ = bcolz_store.list_("int32")
    raw = encode_raw(from_pyarrow(pa, pa.array([[1, 2]], pa.list_(pa.int32()))), typ, "t")
    raw[0] = raw[0][:-1]
    with pytest.raises(FormatError, match="damaged"):
        decode_raw(raw, typ, "t")


def test_other_list_types_have_no_kind():
    assert kind_for_arrow(pa, pa.list_(pa.list_(pa.int32()))) is None
    assert kind_for_arrow(pa, pa.list_(pa.int32(), 3)) is None
    assert kind_for_arrow(pa, pa.list_(pa.date32())) is None
    assert isinstance(kind_for_arrow(pa, pa.map_(pa.string(), pa.int64())), ListKind)


def test_python_rows_and_arrow_rows_mix(tmp_path):
    c = bcolz_store.carray([[1, 2], None], dtype=bcolz_store.list_("int32"),
                           rootdir=str(tmp_path / "c"), mode="w", chunklen=CHUNKLEN)
    c.append(_lists(300, seed=5))
    c.append([[9]])
    c.flush()
    again = bcolz_store.open(str(tmp_path / "c"), mode="r")
    got = to_pyarrow(pa, again.to_buffers(), again.kind.arrow_type(pa))
    want = pa.concat_arrays([pa.array([[1, 2], None], pa.list_(pa.int32())), _lists(300, seed=5),
                             pa.array([[9]], pa.list_(pa.int32()))])
    assert arrow_equal(got, want)
