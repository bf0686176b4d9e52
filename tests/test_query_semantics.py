"""Conditions give the same rows planned (chunk statistics, an index) and
scanned, in every engine: numpy's comparisons (S bytes, float32, isin) and
docs/nulls.md's null semantics, whatever the plan.  Each case is a wrong
answer the condition oracle (tests/properties/test_condition_oracle.py) or a
report found, at its smallest."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import bcolz_store as bcolz
from bcolz_store import ctable_plan

pytestmark = pytest.mark.filterwarnings("ignore:numexpr cannot evaluate")


@pytest.fixture
def plan_everything(monkeypatch):
    monkeypatch.setattr(ctable_plan, "MIN_SKIP_ROWS", 0)
    monkeypatch.setattr(ctable_plan, "MIN_SKIP_FRACTION", 0)


def _answers(t, cond, scope):
    # (t[cond] reads the variables of its caller's frame: here, those of ``scope``)
    return (eval("len(t[cond])", {}, {**scope, "t": t, "cond": cond}),
            sum(1 for _ in t.where(cond, user_dict=scope)),
            int(t.eval(cond, user_dict=scope)[:].sum()))


def _counts(t, cond, scope=None):
    """The rows matched by t[cond], where and eval, planned and scanned."""
    scope = scope or {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        planned = _answers(t, cond, scope)
        with bcolz.defaults_ctx(query_planning=False):
            scanned = _answers(t, cond, scope)
    return planned, scanned


@pytest.mark.parametrize("indexed", [False, True], ids=["statistics", "index"])
def test_planned_condition_keeps_the_nulls_of_a_nullable_column(tmp_path, plan_everything,
                                                                  indexed):
    n = 2000
    x = np.arange(n)
    z = np.ma.masked_array(np.arange(n, dtype=float), mask=np.arange(n) % 2 == 0)
    t = bcolz.ctable([x, z], names=["x", "z"], rootdir=str(tmp_path / "t"), mode="w",
                     chunklen=100)
    if indexed:
        t.create_index("x")
    expected = {"(x >= 1500) & isnull(z)": 250, "(x >= 1500) & notnull(z)": 250,
                "(x >= 1500) & ~(z > 5)": 0, "(x >= 1990) & (z > 5)": 5,
                "(x < 20) & ~isnull(z)": 10, "(x == 7) & notnull(z)": 1,
                "(x == 8) & isnull(z)": 1, "(z > 5) | (x >= 0)": 1000,
                "~(z < 0) | (x >= 1000)": 1000, "isnull(z) | (x >= 0)": 2000}
    for cond, count in expected.items():
        planned, scanned = _counts(t, cond)
        assert planned == scanned == (count,) * 3, cond


S_CONDITIONS = ["c > b'\\x7f'", "c == b''", "c < b'a'", "b'' > c", "c >= b'\\x80'", "c != b''",
                "c == b'a\\x00'", "(c < b'\\xff') & (c > b'')"]


@pytest.mark.parametrize("cond", S_CONDITIONS)
def test_fixed_bytes_compare_as_numpy_in_every_engine_and_plan(tmp_path, plan_everything, cond):
    """Byte-wise unsigned, trailing NULs stripped: numpy's comparison of S items."""
    items = np.array([b"a", b"", b"\x80", b"\xff\x01", b"ab", b"a\x00"] * 40, dtype="S3")
    c = items
    expected = eval(cond).tolist()       # numpy's own answer
    col = bcolz.carray(items, chunklen=6)
    for vm in ("numexpr", "python"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = bcolz.eval(cond, user_dict={"c": col}, vm=vm, out_flavor="numpy")
        assert found.tolist() == expected, vm
    sorted_items = np.sort(items)
    t = bcolz.ctable([sorted_items], names=["c"], rootdir=str(tmp_path / "t"), mode="w",
                     chunklen=6)
    c = sorted_items
    count = int(eval(cond).sum())
    planned, scanned = _counts(t, cond)
    assert planned == scanned == (count,) * 3


@pytest.mark.parametrize("nullable", [False, True])
def test_fixed_bytes_order_as_unsigned_bytes_on_every_numpy(tmp_path, plan_everything, nullable):
    """NumPy 1.x found b'a\\x80' < b'a' (a signed char past the shorter item); NumPy 2 and
    Python's bytes do not: conditions answer as NumPy 2, planned and scanned."""
    items = np.array([b"", b"a", b"a\x80"], dtype="S2")
    col = np.ma.masked_array(items, mask=[False] * 3) if nullable else items
    t = bcolz.ctable([col], names=["S"], rootdir=str(tmp_path / "t"), mode="w", chunklen=3)
    expected = {"S < b'a'": 1, "b'a' == S": 1, "S > b'a'": 1, "S >= b'a\\x00'": 2,
                "(S <= b'a\\x80') & (S > b'')": 2}
    for cond, count in expected.items():
        planned, scanned = _counts(t, cond)
        assert planned == scanned == (count,) * 3, cond


def test_nullable_decimal_conditions_follow_null_semantics(tmp_path, plan_everything):
    from decimal import Decimal
    values = [Decimal("1.50"), None, Decimal("0.00"), Decimal("3.25"), None, Decimal("9.00")]
    d = bcolz.carray(values * 20, dtype=bcolz.decimal(6, 2), chunklen=4)
    t = bcolz.ctable([np.arange(120), d], names=["x", "d"], rootdir=str(tmp_path / "t"),
                     mode="w", chunklen=4)
    expected = {"d > 1": 60, "~(d > 1)": 20, "d == 0": 20, "d != 0": 60, "isnull(d)": 40,
                "notnull(d) & (d < 2)": 40, "between(d, 0, 2)": 40, "isin(d, [0, 9])": 40,
                "~isin(d, [0, 9])": 40, "(d > 1) | (x >= 0)": 80}
    for cond, count in expected.items():
        planned, scanned = _counts(t, cond)
        assert planned == scanned == (count,) * 3, cond


def test_isin_and_startswith_do_not_match_nulls(tmp_path, plan_everything):
    """A null's slot holds a fill (0, b''): isin and startswith must not test it."""
    zi = bcolz.carray([0, None, 5, None] * 30, dtype="int32", chunklen=4)
    zs = bcolz.carray([b"ab", None, b"b", None] * 30, dtype="S2", chunklen=4)
    t = bcolz.ctable([np.arange(120), zi, zs], names=["x", "zi", "zs"],
                     rootdir=str(tmp_path / "t"), mode="w", chunklen=4)
    expected = {"isin(zi, [0])": 30, "~isin(zi, [0])": 30, "isin(zs, [b''])": 0,
                "startswith(zs, b'')": 60, "~startswith(zs, b'a')": 30,
                "isin(zi, [0, 5]) | (x < 0)": 60}
    for cond, count in expected.items():
        planned, scanned = _counts(t, cond)
        assert planned == scanned == (count,) * 3, cond


def test_isin_of_datetimes_and_of_bytes_with_trailing_nuls(tmp_path, plan_everything):
    ts = np.array(["2021-01-01", "2021-01-02", "NaT"] * 40, dtype="M8[ns]")
    s = np.array([b"a", b"ab", b""] * 40, dtype="S2")
    vb = bcolz.carray([b"ab\x00", b"ab", None] * 40, dtype="vlen-bytes", chunklen=6)
    t = bcolz.ctable([ts, s, vb], names=["ts", "s", "vb"], rootdir=str(tmp_path / "t"),
                     mode="w", chunklen=6)
    scope = {"day": np.datetime64("2021-01-02"), "nat": np.datetime64("NaT")}
    expected = {"isin(ts, [day])": 40, "isin(ts, [nat])": 0, "isin(s, [b'a\\x00'])": 40,
                "isin(s, [b''])": 40, "vb == b'ab\\x00'": 40, "vb == b'ab'": 40,
                "isin(vb, [b'ab\\x00'])": 40, "startswith(vb, b'ab\\x00')": 40,
                "vb > b'ab'": 40}
    for cond, count in expected.items():
        planned, scanned = _counts(t, cond, scope)
        assert planned == scanned == (count,) * 3, cond


def test_vlen_bytes_keep_trailing_nuls_of_a_constant(tmp_path, plan_everything):
    vb = bcolz.carray([b"ab"] * 60 + [b"ab\x00"] * 60 + [None] * 6, dtype="vlen-bytes",
                      chunklen=6)
    t = bcolz.ctable([vb], names=["vb"], rootdir=str(tmp_path / "t"), mode="w", chunklen=6)
    scope = {"k": b"ab\x00", "k2": b"ab"}
    expected = {"vb < k": 60, "vb >= k": 60, "vb == k": 60, "vb != k": 60, "vb > k2": 60,
                "vb <= k2": 60, "isin(vb, [k])": 60, "~(vb == k)": 66}
    for cond, count in expected.items():
        planned, scanned = _counts(t, cond, scope)
        assert planned == scanned == (count,) * 3, cond


def test_rows_give_masked_for_fixed_nulls_and_none_for_object_nulls():
    from decimal import Decimal
    z = bcolz.carray([1.5, None, 3.0], dtype="f8")
    k = bcolz.carray([None, 2, 3], dtype="M8[s]", nullable=True)
    d = bcolz.carray([Decimal(1), None, Decimal(3)], dtype=bcolz.decimal(4, 1))
    vs = bcolz.carray(["a", None, "c"], dtype="vlen-str")
    t = bcolz.ctable([np.arange(3), z, k, d, vs], names=["x", "z", "k", "d", "vs"])
    for rows in (list(t.where("x >= 0")), list(t.iter()), list(t)):
        assert rows[1].z is np.ma.masked and rows[0].k is np.ma.masked
        assert rows[1].d is None and rows[1].vs is None
        assert rows[0].z == 1.5 and rows[2].d == Decimal(3)
    assert list(t.cols["z"].where(np.ones(3, bool)))[1] is np.ma.masked
    assert list(t.cols["d"].where(np.ones(3, bool)))[1] is None


def test_float32_conditions_compare_as_numpy_in_every_engine(plan_everything, tmp_path):
    f4 = np.array([0.1, 1.5, np.nan, -2.25] * 30, dtype="f4")
    b = np.array([True, False, True] * 40)
    t = bcolz.ctable([b, f4], names=["b", "f4"], rootdir=str(tmp_path / "t"), mode="w",
                     chunklen=4)
    for cond in ["(b & (f4 == 0.1)) ^ ~b", "b & between(f4, 0.1, 0.1)", "(f4 <= 0.1) & b",
                 "~(f4 > 0.1) | b", "isin(f4, [0.1]) & b"]:
        expected = int(eval(cond, {"between": lambda x, lo, hi: (x >= lo) & (x <= hi),
                                   "isin": lambda x, v: np.isin(x, np.array(v, dtype="f4"))},
                            {"b": b, "f4": f4}).sum())
        for vm in ("numexpr", "python"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                found = t.eval(cond, vm=vm, out_flavor="numpy")
            assert int(found.sum()) == expected, (cond, vm)
        planned, scanned = _counts(t, cond)
        assert planned == scanned == (expected,) * 3, cond


def test_ndarray_rows_of_nullable_columns_are_masked():
    t = bcolz.ctable([np.arange(3), bcolz.carray([1.5, None, 3.0], dtype="f8"),
                      bcolz.carray([1, None, 3], dtype="i4")], names=["x", "z", "i"])
    rows = list(t.where("x >= 0", out_flavor=np.ndarray))
    assert isinstance(rows[1], np.ma.MaskedArray)
    assert rows[1].mask.tolist() == [(False, True, True)] and rows[1]["x"][0] == 1
    assert rows[2].tolist() == [(2, 3.0, 3)] and not isinstance(rows[2], np.ma.MaskedArray)


def test_isin_of_vlen_str_keeps_trailing_nuls(plan_everything, tmp_path):
    vs = bcolz.carray(["a", "a\x00", None, "b"] * 30, dtype="vlen-str", chunklen=4)
    t = bcolz.ctable([vs], names=["vs"], rootdir=str(tmp_path / "t"), mode="w", chunklen=4)
    scope = {"k": "a\x00"}
    # (rows 0-3 repeat: 'a', 'a\x00', None, 'b'; a None's negated leaf holds)
    for cond, head in {"isin(vs, [k])": [1], "isin(vs, ['a'])": [0], "vs == k": [1],
                       "~isin(vs, [k, 'b'])": [0, 2]}.items():
        planned, scanned = _counts(t, cond, scope)
        assert planned == scanned == (30 * len(head),) * 3, cond
        for planning in (True, False):
            with bcolz.defaults_ctx(query_planning=planning):
                rows = [r.nrow__ for r in t.where(cond, outcols="nrow__", user_dict=scope)]
            assert rows[:len(head)] == head, (cond, planning)


@pytest.mark.parametrize("planning", [True, False], ids=["planned", "scanned"])
def test_selected_rows_keep_the_nulls_of_their_columns(tmp_path, plan_everything, planning):
    n = 200
    z = np.ma.masked_array(np.arange(n, dtype=float), mask=np.arange(n) % 2 == 0)
    t = bcolz.ctable([np.arange(n), z], names=["x", "z"], rootdir=str(tmp_path / "t"),
                     mode="w", chunklen=10)
    cond = "(x < 3) | ((x >= 195) & (x != 197))"
    nulls = [True, False, True, False, True, True, False]
    with bcolz.defaults_ctx(query_planning=planning):
        assert np.ma.getmaskarray(t[cond]["z"]).tolist() == nulls
        assert np.ma.getmaskarray(t.fetchwhere(cond, out_flavor="numpy")["z"]).tolist() == nulls
        fetched = t.fetchwhere(cond)
        assert fetched.cols["z"].nullable and fetched.cols["z"].isnull().tolist() == nulls
