"""Nullable carrays and ctable columns: values as a plain bcolz carray, validity
in ROOT/valid (docs/format.md, "Nullable columns (bcolz_store only)")."""

import json
import pickle
import shutil

import numpy as np
import pytest

import bcolz_store as bcolz
from bcolz_store.errors import BcolzStoreError, FormatError

DTYPES = ["bool", "int8", "int64", "uint16", "float32", "float64", "complex128",
          "M8[ns]", "m8[s]", "S4", "U3", "V16", [("a", "i4"), ("b", "f8")]]


def _sample(dtype, n):
    dtype = np.dtype(dtype)
    if dtype.names:
        out = np.zeros(n, dtype=dtype)
        out["a"], out["b"] = np.arange(n), np.arange(n) * 0.5
        return out
    if dtype.kind in "SU":
        return np.array([str(i % 100) for i in range(n)], dtype=dtype)
    if dtype.kind == "V":
        return np.frombuffer(bytes(range(256)) * (n * 16 // 256 + 1), dtype="V16", count=n)
    if dtype.kind in "Mm":
        return np.arange(1, n + 1).astype(dtype)
    return (np.arange(n) % 7).astype(dtype)


def _masked(dtype, n=23):
    data = _sample(dtype, n)
    return np.ma.MaskedArray(data, mask=[i % 4 == 1 for i in range(n)])


def _same(got, want):
    assert isinstance(got, np.ma.MaskedArray)
    assert got.dtype == want.dtype and len(got) == len(want)
    gm, wm = np.ma.getmaskarray(got), np.ma.getmaskarray(want)
    assert (gm == wm).all()
    if got.dtype.names is None:
        assert (got.data[~gm] == want.data[~wm]).all() or \
            np.array_equal(got.data[~gm], want.data[~wm], equal_nan=True)
    else:
        rows = ~np.ascontiguousarray(gm).view(np.uint8).reshape(len(gm), -1).any(1)
        assert (got.data[rows] == want.data[rows]).all()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_fixed_dtype_round_trips(tmp_path, dtype):
    want = _masked(dtype)
    c = bcolz.carray(want, chunklen=5, rootdir=str(tmp_path / "c"), mode="w")
    assert c.nullable and c.dtype == want.dtype
    c.append(_masked(dtype, 4))
    c.flush()
    full = np.ma.concatenate([want, _masked(dtype, 4)])
    _same(c[:], full)
    r = bcolz.open(str(tmp_path / "c"))
    _same(r[:], full)
    _same(r[3:17], full[3:17])
    _same(r[::3], full[::3])
    _same(r[[5, 1, 20]], full[[5, 1, 20]])
    assert r[1] is np.ma.masked
    mask = np.arange(len(full)) % 2 == 0
    _same(r[mask], full[mask])
    assert r.isnull().tolist() == [i % 4 == 1 for i in range(23)] + [i % 4 == 1 for i in range(4)]


def test_fill_values_in_null_slots(tmp_path):
    for dtype, fill in [("f8", "NaN"), ("M8[us]", "NaT"), ("i4", "zeros"), ("S2", "zeros")]:
        root = tmp_path / dtype.replace("[", "").replace("]", "")
        c = bcolz.carray([None, _sample(dtype, 1)[0]], dtype=dtype, rootdir=str(root), mode="w",
                         nullable=True)
        storage = json.loads((root / "meta" / "storage").read_text())
        assert storage["nullable"] == {"validity": "valid", "fill": fill, "grow": "null"}
        raw = c._engine.values.read_range(0, 1)
        if fill == "NaN":
            assert np.isnan(raw[0])
        elif fill == "NaT":
            assert np.isnat(raw[0])
        else:
            assert raw.view(np.uint8).sum() == 0
        assert (root / "valid" / "meta" / "sizes").exists()


def test_constructors_and_writes():
    c = bcolz.carray([1, None, 3], dtype="int32")       # None with a dtype: nullable
    assert c.nullable and c[:].mask.tolist() == [False, True, False]
    assert c[1] is np.ma.masked and c.sum() == 4
    assert [v is np.ma.masked for v in c] == [False, True, False]
    c.append([None, 7])
    c[0] = None
    c[1] = 2
    c[[2, 3]] = [np.ma.masked, 9]
    assert c[:].tolist() == [None, 2, None, 9, 7]
    c.resize(7)
    assert c[:].tolist() == [None, 2, None, 9, 7, None, None]
    c.trim(3)
    assert c[:].tolist() == [None, 2, None, 9]
    assert c.notnull().tolist() == [False, True, False, True]
    d = bcolz.carray([1, 2], dtype="i8", nullable=True, dflt=5)
    d.resize(4)
    assert d[:].tolist() == [1, 2, 5, 5]
    plain = bcolz.carray(np.arange(3))
    assert not plain.nullable and not isinstance(plain[:], np.ma.MaskedArray)
    for bad in ([None], np.ma.masked_all(1, dtype="i8")):
        with pytest.raises(ValueError, match="not nullable"):
            plain.append(bad)
    with pytest.raises(ValueError, match="not nullable"):
        plain[0] = None


def test_nat_is_null_and_nan_is_a_value():
    t = bcolz.carray(np.array(["2020-01-01", "NaT"], dtype="M8[D]"), nullable=True)
    assert t[:].mask.tolist() == [False, True]
    f = bcolz.carray([1.0, float("nan"), None], dtype="f8")
    assert f[:].mask.tolist() == [False, False, True] and np.isnan(f[1])
    assert bcolz.carray(np.arange(3.0), nullable=True)[:].mask.tolist() == [False] * 3


def test_pandas_masked_arrays_make_nullable_carrays():
    pd = pytest.importorskip("pandas")
    for dtype in ("Int64", "UInt8", "boolean", "Float64"):
        s = pd.Series([1, None, 0], dtype=dtype)
        c = bcolz.carray(s)
        assert c.nullable and c[:].mask.tolist() == [False, True, False]
        c.append(pd.array([None, 1], dtype=dtype))
        assert c[:].mask.tolist() == [False, True, False, True, False]


def test_copy_pickle_iterblocks_where(tmp_path):
    c = bcolz.carray(_masked("f8", 30), chunklen=8, rootdir=str(tmp_path / "c"), mode="w")
    _same(c.copy()[:], c[:])
    _same(c.copy(rootdir=str(tmp_path / "d"))[:], c[:])
    _same(pickle.loads(pickle.dumps(c))[:], c[:])
    _same(pickle.loads(pickle.dumps(bcolz.carray(_masked("i2"))))[:], _masked("i2"))
    _same(np.ma.concatenate(list(bcolz.iterblocks(c, 7))), c[:])
    hits = list(c.where(np.arange(30) < 3))
    assert hits[1] is np.ma.masked and hits[0] == 0.0


def test_v16_engine_returns_masked_for_a_wrapper():
    c = bcolz.carray(_masked("V16", 20), chunklen=8)
    e = c._engine
    assert isinstance(e.read_range(0, 9), np.ma.MaskedArray)
    assert isinstance(e.gather(np.array([1, 2])), np.ma.MaskedArray)
    assert isinstance(e.chunk_array(0), np.ma.MaskedArray)
    assert e.point(0, 1) is np.ma.masked and e.point(0, 2) is not np.ma.masked


def test_ctable_nullable_columns_and_queries(tmp_path):
    x = np.ma.MaskedArray(np.arange(12, dtype="i4"), mask=[i % 3 == 0 for i in range(12)])
    t = bcolz.ctable([x, np.arange(12.0)], names=["x", "y"], chunklen=4,
                     rootdir=str(tmp_path / "t"), mode="w")
    t.append([(None, 1.0), (5, 2.0)])
    t.addcol(bcolz.carray([1, None] * 7, dtype="i2"), "z")
    t.flush()
    t = bcolz.open(str(tmp_path / "t"))
    assert t["x"].nullable and t["z"].nullable and not t["y"].nullable
    rows = t[:]
    assert isinstance(rows, np.ma.MaskedArray) and rows.mask["x"].tolist()[:4] == \
        [True, False, False, True]
    assert isinstance(t[0:2], np.ma.MaskedArray)
    assert [r.x for r in t.where("x < 3")] == [1, 2]        # nulls hold 0: never match
    assert [r.nrow__ for r in t.where("isnull(x)", outcols=["nrow__"])] == [0, 3, 6, 9, 12]
    assert [r.nrow__ for r in t.where("notnull(x) & (x > 9)", outcols=["nrow__"])] == [10, 11]
    assert t["x != 1"].shape == (8,)
    assert t.fetchwhere("x > 9", out_flavor="numpy")["x"].tolist() == [10, 11]
    blocks = list(t.whereblocks("y >= 0", blen=5))
    assert np.ma.getmaskarray(np.ma.concatenate(blocks)["x"]).sum() == 5
    assert t.eval("x > 4").sum() == 6
    with pytest.raises(TypeError, match="nullable"):
        bcolz.open(str(tmp_path / "t"), mode="a").create_index("x")


def test_query_plan_matches_scan_for_a_nullable_column(tmp_path):
    x = np.ma.MaskedArray(np.arange(64) % 10, mask=np.arange(64) % 5 == 0)
    t = bcolz.ctable([x, np.arange(64)], names=["x", "k"], chunklen=8,
                     rootdir=str(tmp_path / "t"), mode="w")
    t = bcolz.open(str(tmp_path / "t"))
    for cond in ("x > 6", "(x < 2) & (k > 10)", "isnull(x)", "notnull(x) | (k < 3)"):
        planned = [r.nrow__ for r in t.where(cond, outcols=["nrow__"])]
        scan = [r.nrow__ for r in t.where(t.eval(cond), outcols=["nrow__"])]
        assert planned == scan, cond


def test_validity_missing_or_damaged_is_an_error(tmp_path):
    root = tmp_path / "c"
    bcolz.carray(_masked("i4", 40), chunklen=8, rootdir=str(root), mode="w")
    shutil.rmtree(root / "valid")
    with pytest.raises(FormatError, match="valid"):
        bcolz.open(str(root))[:]
    root = tmp_path / "d"
    bcolz.carray(_masked("i4", 40), chunklen=8, rootdir=str(root), mode="w")
    (root / "valid" / "data" / "__1.blp").write_bytes(b"junk")
    with pytest.raises(BcolzStoreError):
        bcolz.open(str(root))[:]
    root = tmp_path / "e"
    bcolz.carray(_masked("i4", 40), chunklen=8, rootdir=str(root), mode="w")
    storage = json.loads((root / "meta" / "storage").read_text())
    storage["nullable"]["fill"] = "NaN"
    (root / "meta" / "storage").write_text(json.dumps(storage))
    with pytest.raises(FormatError, match="fill"):
        bcolz.open(str(root))[:]


def test_pandas_round_trip_keeps_the_masked_dtypes(tmp_path):
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": pd.array([1, None, 3], dtype="Int64"),
                       "b": pd.array([True, None, False], dtype="boolean"),
                       "c": pd.array([1.5, None, 2.0], dtype="Float64"),
                       "d": pd.array([1, 2, None], dtype="UInt8"), "e": [1.0, 2.0, 3.0]})
    t = bcolz.ctable.fromdataframe(df, rootdir=str(tmp_path / "t"), mode="w")
    assert [t[n].nullable for n in t.names] == [True, True, True, True, False]
    back = bcolz.open(str(tmp_path / "t")).todataframe()
    pd.testing.assert_frame_equal(back, df)
    t.append(df)
    assert t["a"][:].mask.tolist() == [False, True, False] * 2


def test_arrow_and_parquet_round_trip_nulls_apart_from_nan(tmp_path):
    pa = pytest.importorskip("pyarrow")
    from bcolz_store.converters.arrow import from_arrow, from_parquet, to_arrow, to_parquet
    t = bcolz.ctable([bcolz.carray([1, None, 3], dtype="i4"),
                      bcolz.carray([1.0, float("nan"), None], dtype="f8"),
                      bcolz.carray([True, None, False], dtype="?"),
                      bcolz.carray([b"ab", None, b"c"], dtype="S2"), np.arange(3)],
                     names=["i", "f", "b", "s", "p"])
    a = to_arrow(t)
    assert a.column("i").null_count == 1 and a.column("f").to_pylist()[2] is None
    assert np.isnan(a.column("f").to_pylist()[1]) and a.column("p").null_count == 0
    for back in (from_arrow(a), None):
        if back is None:
            to_parquet(t, str(tmp_path / "x.parquet"))
            back = from_parquet(str(tmp_path / "x.parquet"))
        assert [back[n].nullable for n in back.names] == [True] * 4 + [False]
        assert back["f"][1] is not np.ma.masked and np.isnan(back["f"][1])
        assert back["f"][2] is np.ma.masked and back["i"][1] is np.ma.masked
        assert [str(c) for c in to_arrow(back).columns] == [str(c) for c in a.columns]
    foreign = pa.table({"x": pa.array([1, None], pa.int64()),
                        "h": pa.array([np.float16(1), None], pa.float16()),
                        "fb": pa.array([None, b"cd"], pa.binary(2)),
                        "u": pa.array([1, None], pa.uint8()), "z": pa.array([1, 2])})
    f = from_arrow(foreign)
    assert [f[n].nullable for n in f.names] == [True] * 4 + [False]
    assert to_arrow(f).select(["x", "h", "fb", "u", "z"]).to_pydict() == foreign.to_pydict()


def test_isnull_of_every_kind_with_missing_items(tmp_path):
    struct = bcolz.struct([("a", "int32"), ("b", "str")], nullable=True)
    first_nullable = bcolz.struct([("a", bcolz.decimal(5, 1, nullable=True))], nullable=True)
    cases = [
        (bcolz.carray([{"a": 1, "b": "x"}, None, {"a": 2, "b": None}] * 3, dtype=struct,
                      chunklen=2, rootdir=str(tmp_path / "s")), [0, 1, 0] * 3),
        (bcolz.carray([None, {"a": None}, {"a": "1"}], dtype=first_nullable), [1, 0, 0]),
        (bcolz.carray([[1], None, [], [None]] * 3, dtype=bcolz.list_("int32"), chunklen=3,
                      rootdir=str(tmp_path / "l")), [0, 1, 0, 0] * 3),
        (bcolz.carray([{"k": 1}, None], dtype=bcolz.map_("str", "int32")), [0, 1]),
        (bcolz.carray(["1.5", None], dtype=bcolz.decimal(5, 1)), [0, 1]),
        (bcolz.carray(["x", None], dtype=bcolz.vlen("str")), [0, 1]),
    ]
    for c, expected in cases:
        assert c.isnull().tolist() == [bool(v) for v in expected], c.column_type
        assert c.notnull().tolist() == [not v for v in expected]
        assert c.isnull().tolist() == [v is None for v in c[:].tolist()]
    opened = bcolz.open(str(tmp_path / "l"))
    assert opened.isnull().tolist() == [bool(v) for v in [0, 1, 0, 0] * 3]
    assert not bcolz.carray([{"a": 1, "b": "x"}], dtype=bcolz.struct(
        [("a", "int32"), ("b", "str")])).isnull().any()


def test_nulls_print_as_nulls():
    c = bcolz.carray(np.ma.masked_array([1.5, 2.0, 3.0], mask=[0, 1, 0]))
    assert str(c) == "[1.5 -- 3.0]" and repr(c).endswith("\n[1.5 -- 3.0]")
    dates = bcolz.carray(np.ma.masked_array(np.array(["2020-01-01", "2020-01-02"], "M8[D]"),
                                            mask=[1, 0]))
    assert "NaT" not in str(dates) and "--" in str(dates)
    big = bcolz.carray(np.ma.masked_array(np.arange(5000), mask=np.arange(5000) % 2 == 1))
    assert str(big).startswith("[0 -- 2") and str(big).endswith("4998 --]")
    assert str(bcolz.carray(np.arange(3.0), nullable=True)) == "[0. 1. 2.]"    # no null shown
    t = bcolz.ctable([np.ma.masked_array([1, 2, 3], mask=[0, 1, 0]), np.arange(3.0)],
                     names=["x", "y"])
    assert str(t) == "[(1, 0.0) (--, 1.0) (3, 2.0)]" and repr(t).endswith(str(t))
    odd = bcolz.ctable([np.ma.masked_array([1, 2], mask=[1, 0]), np.arange(2)], names=["", "y"])
    assert str(odd) == "[(--, 0) (2, 1)]"


def test_text_dtypes_without_a_width_take_the_items_width():
    for dtype, items, width in [("str", ["x", "yy"], "<U2"), ("U", ["x", None], "<U1"),
                                ("S", [b"abc", None], "|S3"), ("S", [b"a", b"bc"], "|S2")]:
        c = bcolz.carray(items, dtype=dtype)
        assert c.dtype == np.dtype(width) and c.nullable == (None in items)
        assert c[:].tolist() == items
    assert bcolz.carray(["x"], dtype="U", nullable=True).nullable


def test_items_out_of_the_dtypes_range_are_a_value_error_naming_the_carray():
    c = bcolz.carray([1, None], dtype="i4")
    with pytest.raises(ValueError, match=r"carray: cannot convert to a nullable array of int32"):
        c.append([2 ** 40, None])
    with pytest.raises(ValueError, match="out of bounds for int32"):
        c[0] = 2 ** 40
    with pytest.raises(ValueError, match="new carray: .*out of bounds for int8"):
        bcolz.carray([300, None], dtype="i1")
    assert c[:].tolist() == [1, None]


def test_nan_or_an_out_of_range_float_is_refused_by_a_nullable_integer_carray():
    c = bcolz.carray([1, None], dtype="i4")
    for bad in (np.array([5.0, np.nan]), [5.0, float("nan"), None], np.array([1e20])):
        with pytest.raises(ValueError, match="cannot convert to a nullable array of int32"):
            c.append(bad)
    c.append(np.array([7.0, 8.0]))
    assert c[:].tolist() == [1, None, 7, 8]
