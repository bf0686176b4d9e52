"""The struct column kind: the KindTests contract, and the Arrow paths of
struct carrays field by field (fixed, nullable and text fields, nested
structs), against pyarrow."""

from __future__ import annotations

import numpy as np
import pytest

import bcolz_store
from bcolz_store.kinds import kind_for_arrow
from bcolz_store.testing.kinds import KindTests, arrow_equal

pa = pytest.importorskip("pyarrow")

from bcolz_store.kinds.struct.kind import StructKind  # noqa: E402

TYPE = pa.struct([pa.field("a", pa.int32()), pa.field("b", pa.string()),
                  pa.field("c", pa.float64(), nullable=False), pa.field("d", pa.bool_())])


def _rows(n, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        if i % 11 == 3:
            out.append(None)
            continue
        out.append({"a": None if i % 7 == 1 else int(rng.integers(-1000, 1000)),
                    "b": None if i % 5 == 2 else "w" * int(rng.integers(0, 9)) + str(i),
                    "c": float(i) / 4, "d": bool(i % 3)})
    return out


def _array(n=1234, typ=TYPE, seed=0):
    return pa.array(_rows(n, seed), type=typ)


class TestStructKind(KindTests):
    @pytest.fixture
    def kind_class(self):
        return StructKind

    @pytest.fixture
    def arrow_array(self):
        return _array()


def test_the_kind_of_a_struct_of_fixed_and_text_fields():
    kind = kind_for_arrow(pa, TYPE)
    assert isinstance(kind, StructKind)
    assert kind.dtype().names == ["a", "b", "c", "d"]
    assert kind_for_arrow(pa, pa.struct([("k", pa.dictionary(pa.int32(), pa.string()))])) is None
    assert not isinstance(kind_for_arrow(pa, pa.int32()), StructKind)   # (nullable's)


def test_fields_read_as_they_were_written_from_python(tmp_path):
    arr = _array(777, seed=3)
    ours = bcolz_store.carray(arr, chunklen=64, rootdir=str(tmp_path / "a"), mode="w")
    ours.flush()
    theirs = bcolz_store.carray(arr.to_pylist(), dtype=ours.column_type, chunklen=64,
                                rootdir=str(tmp_path / "p"), mode="w")
    theirs.flush()
    a, p = bcolz_store.open(str(tmp_path / "a")), bcolz_store.open(str(tmp_path / "p"))
    assert a[:].tolist() == p[:].tolist() == arr.to_pylist()
    for name in ("a", "b", "c", "d"):
        got, want = a.field(name)[:], p.field(name)[:]
        assert [None if v is np.ma.masked else v for v in
                (got.tolist() if not isinstance(got, np.ma.MaskedArray) else
                 np.ma.filled(got.astype(object), None).tolist())] == \
            [None if v is np.ma.masked else v for v in
             (want.tolist() if not isinstance(want, np.ma.MaskedArray) else
              np.ma.filled(want.astype(object), None).tolist())]


def test_slices_and_leftovers_against_pyarrow(tmp_path):
    arr = _array(1000, seed=5)
    c = bcolz_store.carray(arr.slice(0, 250), chunklen=64, rootdir=str(tmp_path / "c"),
                           mode="w")
    c.append(arr.slice(250, 1))
    c.append(arr.slice(251))
    c.flush()
    c = bcolz_store.open(str(tmp_path / "c"))
    typ = c.kind.arrow_type(pa)
    from bcolz_store.kinds.arrow import to_pyarrow
    for start, stop in [(0, 1000), (63, 65), (64, 128), (900, 1000), (10, 10), (999, 1000)]:
        got = to_pyarrow(pa, c.to_buffers(start, stop), typ)
        assert arrow_equal(got, arr.slice(start, stop - start)), (start, stop)
        assert got.is_null().to_pylist() == arr.slice(start, stop - start).is_null().to_pylist()


def test_a_nested_struct_field(tmp_path):
    inner = pa.struct([("x", pa.int64()), ("y", pa.large_string())])
    typ = pa.struct([("k", pa.int16()), ("inner", inner)])
    rows = [{"k": i, "inner": None if i % 4 == 0 else {"x": i * 10, "y": str(i)}}
            if i % 9 else None for i in range(400)]
    arr = pa.array(rows, type=typ)
    c = bcolz_store.carray(arr, chunklen=50, rootdir=str(tmp_path / "n"), mode="w")
    c.flush()
    c = bcolz_store.open(str(tmp_path / "n"))
    assert isinstance(c.kind, StructKind)
    assert c[:].tolist() == rows
    assert arrow_equal(pa.table(c).column(0), arr)


def test_nulls_in_a_field_that_holds_none_are_refused(tmp_path):
    c = bcolz_store.carray(_array(10), rootdir=str(tmp_path / "c"), mode="w")
    bad = pa.array([{"a": 1, "b": "x", "c": None, "d": True}],
                   type=pa.struct([("a", pa.int32()), ("b", pa.string()), ("c", pa.float64()),
                                   ("d", pa.bool_())]))
    with pytest.raises(ValueError, match="'c'.*no missing items"):
        c.append(bad)
    assert len(c) == 10


def test_a_missing_struct_where_none_is_held_is_refused():
    c = bcolz_store.carray([{"a": 1}], dtype=bcolz_store.struct([("a", "int32")]))
    assert isinstance(c.kind, StructKind)
    with pytest.raises(ValueError, match="no missing items"):
        c.append(pa.array([None, {"a": 2}], type=pa.struct([pa.field("a", pa.int32(),
                                                                     nullable=False)])))
    assert c[:].tolist() == [{"a": 1}]


def test_python_items_take_the_arrow_path_with_the_same_results(tmp_path):
    typ = bcolz_store.struct([("a", "int32", True), ("b", "str"), ("c", "float64")],
                             nullable=True)
    rows = [{"a": 1, "b": "x", "c": 1.0}, None, {"a": None, "b": None, "c": 2.5}] * 50
    c = bcolz_store.carray(rows, dtype=typ, chunklen=16, rootdir=str(tmp_path / "c"), mode="w")
    c.flush()
    c = bcolz_store.open(str(tmp_path / "c"))
    assert c[:].tolist() == rows
    assert c.field("a")[1] == 0 and c.field("b")[1] == ""     # a missing struct's fills


@pytest.mark.parametrize("bad, error", [
    ([{"a": 1, "b": b"x", "c": 1.0}], TypeError),               # bytes in a text field
    ([{"a": 1, "b": "x"}], ValueError),                        # a key missing
    ([{"a": 1, "b": "x", "c": 1.0, "z": 0}], ValueError),      # a key too many
    ([{"a": 1, "b": "x", "c": None}], ValueError),             # None in a field without
])
def test_python_items_the_carray_refuses_are_still_refused(bad, error):
    typ = bcolz_store.struct([("a", "int32", True), ("b", "str"), ("c", "float64")])
    with pytest.raises(error):
        bcolz_store.carray(bad, dtype=typ)


@pytest.mark.parametrize("text", ["string", "large_string", "string_view"])
def test_text_fields_of_every_arrow_width(text, tmp_path):
    typ = pa.struct([("a", pa.int32()), ("b", getattr(pa, text)())])
    rows = [{"a": i, "b": None if i % 3 == 0 else "x" * (i % 5)} for i in range(300)]
    arr = pa.array(rows, type=typ)
    c = bcolz_store.carray(arr, chunklen=64, rootdir=str(tmp_path / "c"), mode="w")
    c.append(arr)
    c.flush()
    c = bcolz_store.open(str(tmp_path / "c"))
    assert c[:].tolist() == rows * 2


@pytest.mark.parametrize("bad, error, match", [
    ({"a": 1, "x": "s"}, ValueError, r"missing 'b'.*unknown 'x'"),
    ({"a": 1}, ValueError, "missing 'b'"),
    ({"a": 1, "b": "x", "c": 2}, ValueError, "unknown 'c'"),
    ({"a": 1, "b": 2}, TypeError, "field 'b'"),
    ({"a": 1, "b": {"n": "x"}}, TypeError, "field 'b'")])
def test_new_carrays_of_python_dicts_check_their_keys(bad, error, match):
    """A dict among many good ones, keyed other than the fields (as many keys,
    one renamed; fewer; more) or of a wrong field type, is refused as the
    item conversion refuses it, not written by pyarrow with a null for the
    missing field."""
    kind = bcolz_store.struct([("a", "int32", True), ("b", "str")], nullable=True)
    good = [{"a": i, "b": str(i)} for i in range(50)] + [None]
    with pytest.raises(error, match=match):
        bcolz_store.carray(good + [bad] + good, dtype=kind)
    assert bcolz_store.carray(good, dtype=kind)[:].tolist() == good
