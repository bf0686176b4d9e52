"""The list kind: list and map columns encoded and decoded from Arrow buffers
with numpy over all items (bcolz_store/kinds/list/)."""

import numpy as np
import pytest

import bcolz_store
from bcolz_store.errors import FormatError
from bcolz_store.kinds.list.meta_items import encode_items
from bcolz_store.kinds.arrow import from_pyarrow, to_pyarrow
from bcolz_store.kinds.base import kind_for_arrow
from bcolz_store.kinds.list.kind import ListKind
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


# ------------------------------------------------------------------ layout version 2

@pytest.fixture
def layout_1(monkeypatch):
    """New list carrays written in layout version 1 (one vlen carray of encoded items)."""
    from bcolz_store.kinds.list.files import LIST_LAYOUT
    monkeypatch.setitem(LIST_LAYOUT, "new", 1)


class TestListKindLayout1(KindTests):
    """The kind over version-1 carrays, written under the switch."""

    @pytest.fixture(autouse=True)
    def _v1(self, layout_1):
        yield

    @pytest.fixture
    def kind_class(self):
        return ListKind

    @pytest.fixture
    def arrow_array(self):
        return _lists(1234)


def _storage(root):
    import json
    with open(f"{root}/meta/storage") as f:
        return json.load(f)


@pytest.mark.parametrize("arr", CASES, ids=lambda a: str(a.type))
def test_layout_2_keeps_arrow_rows_across_chunks_and_reopening(arr, tmp_path):
    root = str(tmp_path / "c")
    big = pa.concat_arrays([arr] * 40)
    c = bcolz_store.carray(big.slice(0, 7), rootdir=root, mode="w", chunklen=16)
    c.append(big.slice(7))
    c.flush()
    storage = _storage(root)
    assert storage["dtype"] == "<i8" and storage["list"]["version"] == 2
    want_children = ["keys", "values"] if pa.types.is_map(arr.type) else ["items"]
    assert storage["list"]["children"] == want_children
    again = bcolz_store.open(root, mode="r")
    got = to_pyarrow(pa, again.to_buffers(), again.kind.arrow_type(pa))
    got.validate(full=True)
    assert repr(got.to_pylist()) == repr(big.to_pylist())
    for start, stop in [(0, 1), (5, 40), (15, 17), (len(big) - 3, len(big))]:
        part = to_pyarrow(pa, again.to_buffers(start, stop), again.kind.arrow_type(pa))
        assert repr(part.to_pylist()) == repr(big.slice(start, stop - start).to_pylist())


def _plainly(items) -> list:
    """Items as comparable Python values (masked elements as None)."""
    out = []
    for item in items:
        if isinstance(item, np.ma.MaskedArray):
            out.append([None if m else v for v, m in zip(item.data.tolist(),
                                                          np.ma.getmaskarray(item).tolist())])
        elif isinstance(item, np.ndarray):
            out.append(item.tolist())
        else:
            out.append(item if item is None else list(item))
    return out


@pytest.mark.parametrize("typ, rows", [
    (bcolz_store.list_("int32"), [[1, 2], None, [], [3, None], [4] * 9]),
    (bcolz_store.list_("str"), [["a", None], [], None, ["déjà", ""], ["x"]]),
    (bcolz_store.map_("str", "int64"), [[("a", 1)], None, [], [("b", None), ("c", 2)], [("d", 3)]]),
])
def test_layout_2_reads_as_layout_1(typ, rows, tmp_path, monkeypatch):
    from bcolz_store.kinds.list.files import LIST_LAYOUT
    many = rows * 30
    c2 = bcolz_store.carray(many, dtype=typ, rootdir=str(tmp_path / "v2"), mode="w",
                            chunklen=16)
    monkeypatch.setitem(LIST_LAYOUT, "new", 1)
    c1 = bcolz_store.carray(many, dtype=typ, rootdir=str(tmp_path / "v1"), mode="w",
                            chunklen=16)
    assert _storage(str(tmp_path / "v1"))["list"]["version"] == 1
    assert _storage(str(tmp_path / "v2"))["list"]["version"] == 2
    for c in (c1, c2):
        c.append(many[:5])
        c[3] = rows[0]
        c[[0, 40, 100]] = [rows[1], rows[4], rows[3]]
        c[10:20:3] = [rows[2]] * 4
        c.trim(4)
        c.resize(len(c) + 2)
        c.flush()
    a = bcolz_store.open(str(tmp_path / "v1"))
    b = bcolz_store.open(str(tmp_path / "v2"))
    assert len(a) == len(b)
    assert repr(_plainly(a[:])) == repr(_plainly(b[:]))
    assert repr(_plainly(a[[5, 0, 77]])) == repr(_plainly(b[[5, 0, 77]]))
    assert repr(_plainly(a[17:93])) == repr(_plainly(b[17:93]))
    assert repr(_plainly([a[41]])) == repr(_plainly([b[41]]))
    assert np.array_equal(a.isnull(), b.isnull())
    with pytest.raises((TypeError, ValueError)):
        b.append([["not", "a", "row", object()]])
    assert len(b) == len(a)


def test_layout_2_refuses_what_the_type_does_not_hold(tmp_path):
    c = bcolz_store.carray([[1]], dtype=bcolz_store.list_("int32", nullable=False,
                                                          item_nullable=False),
                           rootdir=str(tmp_path / "c"), mode="w")
    with pytest.raises(ValueError, match="not nullable"):
        c.append(pa.array([[2], None], pa.list_(pa.int32())))
    with pytest.raises(ValueError, match="may not be missing"):
        c.append(pa.array([[1, None]], pa.list_(pa.int32())))
    with pytest.raises(ValueError):
        c.append([None])
    assert len(c) == 1 and c[0].tolist() == [1]


def test_layout_1_fixtures_keep_their_layout_on_append(tmp_path):
    import shutil
    from pathlib import Path
    src = Path(__file__).resolve().parents[2].parent / "shared/fixtures/bcolz_store-0.1.0"
    if not (src / "carray_list_i4").exists():
        pytest.skip("no 0.1.0 fixtures")
    root = tmp_path / "c"
    shutil.copytree(src / "carray_list_i4", root)
    c = bcolz_store.open(str(root), mode="a")
    before = _plainly(c[:])
    c.append([[1, 2]])
    c.flush()
    assert _storage(str(root))["list"]["version"] == 1
    assert repr(_plainly(bcolz_store.open(str(root))[:])) == repr(before + [[1, 2]])


def test_nested_and_fixed_size_lists_stay_layout_1(tmp_path):
    for typ in (bcolz_store.list_(bcolz_store.list_("int32")),
                bcolz_store.list_("int32", size=2)):
        root = str(tmp_path / str(abs(hash(repr(typ)))))
        rows = [[[1], [2, 3]], []] if typ.size is None else [[1, 2], [3, 4]]
        bcolz_store.carray(rows, dtype=typ, rootdir=root, mode="w").flush()
        assert _storage(root)["list"]["version"] == 1


def test_layout_2_damaged_offsets_are_a_format_error(tmp_path):
    root = str(tmp_path / "c")
    c = bcolz_store.carray([[1, 2], [3], [4, 5, 6]], dtype=bcolz_store.list_("int32"),
                           rootdir=root, mode="w")
    c.flush()
    # the offsets rewritten as a plain int64 carray that runs past the items
    bad = bcolz_store.carray(np.array([2, 1, 9], dtype="<i8"), rootdir=str(tmp_path / "b"),
                             mode="w")
    bad.flush()
    import shutil
    shutil.rmtree(f"{root}/data")
    shutil.copytree(str(tmp_path / "b" / "data"), f"{root}/data")
    for extra in ("bcolz_store.json", "bcolz_store.md5"):
        (tmp_path / "c" / extra).unlink(missing_ok=True)
    again = bcolz_store.open(root)
    with pytest.raises(FormatError, match="damaged list offsets"):
        again[:]
    with pytest.raises(FormatError, match="damaged list offsets"):
        again[[2]]


class _CountingInt32Kind:
    """A column kind of plain int32 carrays that counts its calls (a child's
    own kind, found by kinds.base.kind_of)."""

    key = "test-int32"
    calls: list = []

    @classmethod
    def of_meta(cls, meta):
        plain = meta.kind is None
        return cls() if plain and meta.atom == np.dtype("int32") else None

    @classmethod
    def of_arrow(cls, pa, typ):
        return None

    @classmethod
    def of_dtype(cls, dtype):
        return None

    def encode(self, engine, buffers):
        self.calls.append("encode")
        engine.append(np.asarray(buffers.values, dtype="int32"))

    def decode(self, engine, start, stop):
        from bcolz_store.kinds.buffers import ArrowBuffers
        self.calls.append("decode")
        return ArrowBuffers(stop - start, None, None, engine.read_range(start, stop))


def test_layout_2_children_go_through_their_own_kind(tmp_path, monkeypatch):
    from bcolz_store.kinds import base
    monkeypatch.setitem(base._REGISTRY, "test-int32", _CountingInt32Kind)
    monkeypatch.setattr(_CountingInt32Kind, "calls", [])
    typ = bcolz_store.list_("int32", item_nullable=False)
    root = str(tmp_path / "c")
    c = bcolz_store.carray([[1, 2], None, [3]], dtype=typ, rootdir=root, mode="w")
    c.append(pa.array([[4], None, [5, 6], []], pa.list_(pa.int32())))
    c.flush()
    assert "encode" in _CountingInt32Kind.calls
    again = bcolz_store.open(root)
    got = to_pyarrow(pa, again.to_buffers(1, 6), again.kind.arrow_type(pa))
    assert got.to_pylist() == [None, [3], [4], None, [5, 6]]
    assert "decode" in _CountingInt32Kind.calls
    assert [None if v is None else v.tolist() for v in again[:]] == \
        [[1, 2], None, [3], [4], None, [5, 6], []]
