"""Conditions and gathers over column kinds on their fast paths: a
categorical column compared by its codes, nullable numbers compared on their
values with the null rows cleared after, a vlen gather that builds only the
items it takes.  Each is checked against the same work done the slow way
(items decoded and compared by numpy, numpy.ma, the whole column read)."""

import numpy as np
import pytest

import bcolz_store
from bcolz_store.query.operands import CodedItems, Operands

COLORS = ["red", "green", None, "blue", "red", "green\x00", "green"] * 40


def _items(values):
    return np.array(values, dtype=object)


@pytest.mark.parametrize("expression", [
    "c == 'green'", "c != 'green'", "c < 'h'", "c >= 'green'", "'green' == c", "'h' > c",
    "(c == 'red') | (c == 'blue')", "~(c == 'red')", "c == 'absent'", "c == 'green\\x00'"])
def test_categorical_condition_by_codes_matches_the_items(tmp_path, expression):
    c = bcolz_store.carray(COLORS, dtype=bcolz_store.category(), chunklen=16,
                           rootdir=str(tmp_path / "c"), mode="w")
    c.flush()
    t = bcolz_store.ctable([c, bcolz_store.carray(np.arange(len(COLORS)))], names=["c", "k"])
    ops = Operands(expression, {"c": t["c"]})
    assert "c" in ops.coded and isinstance(ops.block(0, 10)["c"], CodedItems)
    got = t.eval(expression, out_flavor="numpy")
    plain = bcolz_store.carray(np.asarray(t["c"][:]), dtype=t["c"].dtype)   # a vlen column
    want = bcolz_store.eval(expression, user_dict={"c": plain}, out_flavor="numpy")
    assert got.tolist() == want.tolist()
    assert [r.k for r in t.where(expression)] == np.flatnonzero(want).tolist()


def test_categorical_other_uses_decode_the_items():
    c = bcolz_store.carray(COLORS, dtype=bcolz_store.category(), chunklen=16)
    assert Operands("startswith(c, 'g')", {"c": c}).coded == {}
    assert Operands("c == c", {"c": c}).coded == {}
    got = bcolz_store.eval("startswith(c, 'g')", user_dict={"c": c}, out_flavor="numpy")
    assert got.tolist() == [v is not None and v.startswith("g") for v in COLORS]


@pytest.mark.parametrize("expression", [
    "x > 5", "~(x > 5)", "(x > 5) | (f < 0.5)", "(x == 3) ^ (f > 0.2)", "(x < 2) & (y >= 4)",
    "x != y"])
def test_nullable_plain_condition_matches_numpy_ma(expression):
    rng = np.random.default_rng(3)
    n = 70_000
    x = np.ma.masked_array(rng.integers(0, 10, n), mask=rng.random(n) < 0.2)
    y = np.ma.masked_array(rng.integers(0, 10, n).astype("i2"), mask=rng.random(n) < 0.1)
    f = rng.random(n)
    t = bcolz_store.ctable([bcolz_store.carray(x, nullable=True, chunklen=5000),
                            bcolz_store.carray(y, nullable=True, chunklen=3000),
                            bcolz_store.carray(f)], names=["x", "y", "f"])
    want = eval(expression, {"x": x, "y": y, "f": f})
    want = np.ma.filled(want, False)
    got = t.eval(expression, out_flavor="numpy")
    assert type(got) is np.ndarray and got.tolist() == want.tolist()
    assert [r.nrow__ for r in t.where(expression, outcols=["nrow__"])] == \
        np.flatnonzero(want).tolist()


@pytest.mark.parametrize("nullable", [False, True])
def test_sparse_vlen_gather_equals_the_whole_read(tmp_path, nullable):
    rng = np.random.default_rng(5)
    items = [None if nullable and rng.random() < 0.3 else "é" * int(rng.integers(0, 4)) + str(i)
             for i in range(10_500)]
    c = bcolz_store.carray(_items(items), dtype=bcolz_store.vlen("str", nullable=nullable)
                           if nullable else str, chunklen=1000,
                           rootdir=str(tmp_path / "v"), mode="w")
    c.flush()
    back = bcolz_store.open(str(tmp_path / "v"), mode="r")
    idx = np.sort(rng.choice(len(items), 60, replace=False))
    idx = np.concatenate([idx, [0, 999, 1000, 10_499]])        # chunk edges, the leftover
    assert list(back[idx]) == [items[i] for i in idx]
    assert list(back[idx[::-1]]) == [items[i] for i in idx[::-1]]
