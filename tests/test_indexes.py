"""Secondary indexes: lookups equal brute force on every kind, through random
sequences of writes, flushes and reopens; damaged index files are not used."""

import os

import numpy as np
import pytest

import bcolz_store as bcolz
from bcolz_store.carray_index import usable_index
from bcolz_store.errors import IndexNotFoundError, ReadOnlyError

KINDS = ["i8", "u1", "f8", "M8[s]", "S3", "U2", "b1", "category"]


def _values(kind, rng, n):
    if kind == "category":
        return [None if v == 0 else f"c{v}" for v in rng.integers(0, 12, n)]
    if kind == "f8":
        out = rng.integers(-20, 20, n).astype("f8")
        out[rng.random(n) < 0.1] = np.nan
        return out
    if kind.startswith("M8"):
        out = rng.integers(0, 40, n).astype(kind)
        out[rng.random(n) < 0.1] = np.datetime64("NaT")
        return out
    if kind in ("S3", "U2"):
        return np.array([f"{v}" for v in rng.integers(0, 30, n)], dtype=kind)
    if kind == "b1":
        return rng.random(n) < 0.3
    return rng.integers(0, 100 if kind == "u1" else 10 ** 6, n).astype(kind)


def _probe(kind, rng):
    return _values(kind, rng, 1)[0]


def _expected(data, op, value):
    arr = np.asarray(data)
    with np.errstate(invalid="ignore"):
        hit = {"==": arr == value, "<": arr < value, "<=": arr <= value,
               ">": arr > value, ">=": arr >= value}[op]
    return np.flatnonzero(hit)


def _check(col, data, kind, rng, tries=6):
    index = usable_index(col)
    assert index is not None
    for _ in range(tries):
        value = _probe(kind, rng)
        if value is None or (isinstance(value, float) and np.isnan(value)) or \
                (isinstance(value, np.datetime64) and np.isnat(value)):
            continue
        ops = ["=="] if kind == "category" else ["==", "<", "<=", ">", ">="]
        for op in ops:
            if kind == "category":
                codes = col._engine.codes_of(np.array([value], dtype=object))
                got = index.lookup(op, int(codes[0]))
                want = np.flatnonzero(np.array([v == value for v in data]))
            else:
                got = index.lookup(op, value.item() if hasattr(value, "item")
                                   and kind not in ("M8[s]",) else value)
                want = _expected(data, op, value)
            assert got is not None, (kind, op, value)
            np.testing.assert_array_equal(got, want, err_msg=f"{kind} {op} {value!r}")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", [0, 1])
def test_index_follows_every_write(tmp_path, kind, seed):
    rng = np.random.default_rng(seed)
    root = str(tmp_path / "t")
    first = _values(kind, rng, 300)
    col = bcolz.carray(first, dtype="category") if kind == "category" else first
    t = bcolz.ctable([col, np.arange(300)], names=["x", "n"], rootdir=root, mode="w",
                     chunklen=32)
    t.create_index("x", kind="bitmap" if seed else "sorted")
    data = list(first) if kind == "category" else np.array(first)
    for step in range(14):
        op = rng.integers(0, 5)
        if op == 0:
            k = int(rng.integers(1, 90))
            new = _values(kind, rng, k)
            t.append([new, np.arange(k)])
            data = (data + list(new)) if kind == "category" else np.concatenate([data, new])
        elif op == 1 and len(data):
            pos = int(rng.integers(0, len(data)))
            new = _values(kind, rng, 1)
            t.cols["x"][pos] = new[0]
            data[pos] = new[0]
        elif op == 2 and len(data) > 10:
            k = int(rng.integers(1, 40))
            t.trim(k)
            data = data[:-k]
        elif op == 3:
            t = bcolz.open(root, mode="a")
        else:
            t.flush()
        t.flush()
        if kind == "category":
            assert list(t.cols["x"][:]) == list(data)
        _check(t.cols["x"], data, kind, rng)
    reader = bcolz.open(root, mode="r")
    _check(reader.cols["x"], data, kind, rng)
    assert reader.indexes == {"x": "bitmap" if seed else "sorted"}
    assert bcolz.verify(root).ok if hasattr(bcolz.verify(root), "ok") else True


def test_unflushed_changes_make_the_index_unusable(tmp_path):
    from bcolz_store.carray_index import create_index
    c = bcolz.carray(np.arange(100), rootdir=str(tmp_path / "c"), chunklen=16)
    create_index(c)
    assert usable_index(c) is not None
    c.append(np.arange(5))
    assert usable_index(c) is None        # appended, not flushed
    c.flush()
    assert usable_index(c).lookup("==", 3).tolist() == [3, 103]
    c[3] = -1                             # assigned and committed at once
    assert usable_index(c).lookup("==", 3).tolist() == [103]


def test_errors(tmp_path):
    root = str(tmp_path / "t")
    t = bcolz.ctable([np.arange(10), np.array(["a"] * 10, dtype=object)], names=["x", "o"],
                     rootdir=root)
    with pytest.raises(KeyError):
        t.create_index("nope")
    with pytest.raises(ValueError, match="kind"):
        t.create_index("x", kind="hash")
    with pytest.raises(TypeError, match="cannot be indexed"):
        t.create_index("o")
    with pytest.raises(IndexNotFoundError):
        t.drop_index("x")
    t.create_index("x")
    with pytest.raises(ReadOnlyError):
        bcolz.open(root, mode="r").create_index("x")
    with pytest.raises(ValueError, match="on disk"):
        bcolz.ctable([np.arange(3)], names=["x"]).create_index("x")
    t.drop_index("x")
    assert t.indexes == {} and not os.path.exists(os.path.join(root, "x", "index", "meta"))


@pytest.mark.parametrize("damage", ["meta", "segment"])
def test_a_damaged_index_is_not_used(tmp_path, damage):
    root = str(tmp_path / "t")
    t = bcolz.ctable([np.arange(1000)], names=["x"], rootdir=root, chunklen=64)
    t.create_index("x")
    path = os.path.join(root, "x", "index", "meta" if damage == "meta" else "__0.idx")
    with open(path, "r+b") as fh:
        fh.seek(60 if damage == "meta" else os.path.getsize(path) - 5)
        byte = fh.read(1)
        fh.seek(-1, 1)
        fh.write(bytes([byte[0] ^ 0x01]))
    reader = bcolz.open(root, mode="r")
    index = usable_index(reader.cols["x"])
    if damage == "meta":
        assert index is None
    else:
        with pytest.raises(bcolz.FormatError, match="damaged"):
            index.lookup("==", 5)
    assert not bcolz.verify(root).damaged == []


def test_copy_sortby_orders_rows_and_keeps_kinds(tmp_path):
    rng = np.random.default_rng(3)
    n = 500
    t = bcolz.ctable([rng.integers(0, 50, n), bcolz.carray([f"s{i}" for i in rng.integers(0, 9, n)],
                                                             dtype="category"),
                      bcolz.carray([None if i % 7 == 0 else f"v{i}" for i in range(n)],
                                   dtype="vlen-str"), np.arange(n)],
                     names=["a", "c", "v", "n"], rootdir=str(tmp_path / "t"), chunklen=32)
    s = t.copy(rootdir=str(tmp_path / "s"), sortby="a")
    order = np.argsort(t["a"][:], kind="stable")
    np.testing.assert_array_equal(s["n"][:], order)
    assert s.cols["c"].category is not None and s.cols["v"].vlen is not None
    assert list(s["c"][:]) == list(t["c"][:][order])
    by_v = t.copy(sortby="v")
    assert list(by_v["v"][-(n // 7 + 1):]) == [None] * (n // 7 + 1)
    stats = bcolz.carray_ops.chunk_stats(bcolz.open(str(tmp_path / "s"), mode="r").cols["a"])
    assert (stats.mins[1:] >= stats.maxs[:-1]).all()      # zone maps now disjoint
    with pytest.raises(KeyError):
        t.copy(sortby="nope")


def test_copy_sortby_keeps_decimal_list_struct_and_nullable_columns(tmp_path):
    from decimal import Decimal
    point = bcolz.struct([("x", "int8"), ("y", "str")], nullable=True)
    t = bcolz.ctable([np.array([3, 1, 2]),
                      bcolz.carray(["1.5", "2", "0.5"], dtype=bcolz.decimal(5, 1)),
                      bcolz.carray(["1.5", None, "0.5"], dtype=bcolz.decimal(5, 1)),
                      bcolz.carray([[1], None, []], dtype=bcolz.list_("int8")),
                      bcolz.carray([{"x": 1, "y": "a"}, None, {"x": 2, "y": None}], dtype=point),
                      bcolz.carray([7, None, 9], dtype="i4")],
                     names=["k", "d", "nd", "l", "p", "n"])
    for s in (t.copy(sortby="k"), t.copy(sortby="k", rootdir=str(tmp_path / "s"))):
        s = bcolz.open(s.rootdir) if s.rootdir else s
        assert s["d"][:].tolist() == [Decimal("2.0"), Decimal("0.5"), Decimal("1.5")]
        assert s["nd"][:].tolist() == [None, Decimal("0.5"), Decimal("1.5")]
        assert [None if v is None else v.tolist() for v in s["l"][:]] == [None, [], [1]]
        assert s["p"][:].tolist() == [None, {"x": 2, "y": None}, {"x": 1, "y": "a"}]
        assert s["n"][:].tolist() == [None, 9, 7]
        for name in ("d", "nd", "p"):
            assert s[name].column_type == t[name].column_type, name
        assert s["l"].listtype == t["l"].listtype
        assert [s[name].nullable for name in s.names] == [t[name].nullable for name in t.names]
        s.resize(4)         # nulls where the columns grow with nulls, defaults elsewhere
        assert s["nd"][3] is None and s["n"][3] is np.ma.masked and s["d"][3] == Decimal("0.0")


def test_the_real_bcolz_reads_a_table_with_statistics_and_indexes(tmp_path):
    real = pytest.importorskip("bcolz")
    root = str(tmp_path / "t")
    n = 1000
    cols = [np.arange(n, dtype="i8")[::-1].copy(), np.linspace(0, 1, n),
            np.array([b"k%d" % (i % 17) for i in range(n)], dtype="S4"),
            (np.arange(n) * 10 ** 9).astype("M8[ns]")]
    t = bcolz.ctable(cols, names=["i", "f", "s", "t"], rootdir=root, chunklen=64)
    for name in ("i", "s", "t"):
        t.create_index(name, kind="bitmap" if name == "s" else "sorted")
    assert os.path.exists(os.path.join(root, "i", "meta", "stats"))
    theirs = real.ctable(rootdir=root, mode="r")
    assert theirs.names == ["i", "f", "s", "t"] and len(theirs) == n
    for name, values in zip(theirs.names, cols):
        np.testing.assert_array_equal(theirs[name][:], values)
    # the real bcolz appends: the statistics and indexes no longer describe the
    # items, so queries do without them and stay exact
    more = real.ctable(rootdir=root, mode="a")
    more.append([np.array([-5]), np.array([2.0]), np.array([b"k3"]),
                 np.array([0], dtype="M8[ns]")])
    more.flush()
    ours = bcolz.open(root, mode="r")
    assert usable_index(ours.cols["i"]) is None
    got = ours.fetchwhere("i < 3", out_flavor="numpy")["i"].tolist()
    assert got == [2, 1, 0, -5]
    assert len(ours.fetchwhere("s == b'k3'", out_flavor="numpy")) == \
        sum(1 for i in range(n) if i % 17 == 3) + 1


def test_verify_rebuilds_each_segment_and_reports_a_stale_one(tmp_path):
    from bcolz_store.chunks.index import build_segment
    root = str(tmp_path / "t")
    t = bcolz.ctable([np.arange(1000)[::-1].copy(), np.arange(1000) % 5], names=["a", "b"],
                     rootdir=root, chunklen=64)
    t.create_index("a")
    t.create_index("b", kind="bitmap")
    assert bcolz.verify(root).ok
    # a segment of other items, well formed (its own checks pass)
    with open(os.path.join(root, "a", "index", "__0.idx"), "wb") as fh:
        fh.write(build_segment(np.arange(1000), 0, "sorted", "<i8"))
    report = bcolz.verify(root)
    assert "a/index/meta" in report.damaged
    assert "does not match the items" in report.reasons["a/index/meta"]


def test_copy_sortby_a_column_without_an_order_names_it():
    point = bcolz.struct([("x", "int8")])
    t = bcolz.ctable([np.arange(2), bcolz.carray([[1], [0]], dtype=bcolz.list_("int8")),
                      bcolz.carray([[1, 2], [0]], dtype=bcolz.list_("int8")),
                      bcolz.carray([{"x": 1}, {"x": 0}], dtype=point)],
                     names=["i", "tags", "long", "p"])
    for name in ("tags", "long", "p"):
        with pytest.raises(TypeError, match=rf"cannot sort by column '{name}': its items .*order"):
            t.copy(sortby=name)
