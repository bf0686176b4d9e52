"""Queries over nullable columns give the same rows planned (chunk statistics,
an index) and scanned: docs/nulls.md's semantics, whatever the plan."""

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


def _counts(t, cond):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        planned = (len(t[cond]), sum(1 for _ in t.where(cond)), int(t.eval(cond)[:].sum()))
        with bcolz.defaults_ctx(query_planning=False):
            scanned = (len(t[cond]), sum(1 for _ in t.where(cond)), int(t.eval(cond)[:].sum()))
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
                "(x == 8) & isnull(z)": 1}
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
