"""ctable: creation, indexing, writing, queries, on-disk layout, safety."""

import os
import pickle

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from tests.conftest import STATS_FILE, bcolz_files, without_stats
from bcolz_store.format.layout import CHECKSUM_FILE, CONSOLIDATED_FILE, JOURNAL_DIR
import bcolz_store as bcolz
from bcolz_store.ctable import ctable
from bcolz_store.errors import DatasetNotFoundError, FormatError, ReadOnlyError

CHUNKLEN = 4
EDGE_LENGTHS = [0, 1, CHUNKLEN - 1, CHUNKLEN, CHUNKLEN + 1, 3 * CHUNKLEN, 3 * CHUNKLEN + 1]


@pytest.fixture(params=["memory", "disk"])
def rootdir(request, tmp_path):
    """None for in-memory tables, a fresh path under tmp_path for on-disk ones."""
    return None if request.param == "memory" else str(tmp_path / "table")


def records(n):
    """Rows with int, float, bool, bytes, unicode and datetime64 columns."""
    ra = np.zeros(n, dtype=[("i", "i4"), ("x", "f8"), ("b", "?"), ("s", "S5"),
                            ("u", "U4"), ("t", "M8[ns]")])
    ra["i"] = np.arange(n)
    ra["x"] = np.arange(n) * 0.5
    ra["b"] = np.arange(n) % 3 == 0
    ra["s"] = [b"s%d" % i for i in range(n)]
    ra["u"] = ["\u00e9%d" % i for i in range(n)]
    ra["t"] = np.datetime64("2020-01-01", "ns") + np.arange(n) * 1_000_000_000
    return ra


def reopen(t):
    """The table as read back from disk (the table itself when in memory)."""
    if t.rootdir is None:
        return t
    t.flush()
    return ctable(rootdir=t.rootdir, mode="r")


# ------------------------------------------------------------------ creation

@pytest.mark.parametrize("n", EDGE_LENGTHS)
def test_structured_array_round_trips_at_chunk_edges(rootdir, n):
    ra = records(n)
    t = ctable(ra, rootdir=rootdir, chunklen=CHUNKLEN)
    assert len(t) == n and t.shape == (n,) and t.size == n and t.ndim == 1
    assert t.names == list(ra.dtype.names)
    assert t.dtype == ra.dtype
    got = reopen(t)
    assert_array_equal(got[:], ra)
    assert [tuple(r) for r in got] == [tuple(r) for r in ra]
    if n:
        assert got[n - 1] == ra[n - 1]
        assert got[-1] == ra[-1]


def test_creation_from_lists_carrays_and_arrays_names_default(rootdir):
    a = bcolz.carray(np.arange(5, dtype="i2"))
    t = ctable([a, np.arange(5.0), [1, 2, 3, 4, 5]], rootdir=rootdir)
    assert t.names == ["f0", "f1", "f2"]
    assert t.dtype == np.dtype([("f0", "i2"), ("f1", "f8"), ("f2", "i8")])
    assert_array_equal(t["f2"][:], [1, 2, 3, 4, 5])


def test_names_as_tuple_and_for_structured_input_by_position():
    t = ctable(records(3), names=("a", "b", "c", "d", "e", "f"))
    assert t.names == ["a", "b", "c", "d", "e", "f"]
    assert_array_equal(t["a"][:], [0, 1, 2])


@pytest.mark.parametrize("names", [["x", "x"], "xy", ["x"], [1, "y"]])
def test_bad_names_are_refused(names):
    with pytest.raises(ValueError):
        ctable([np.arange(3), np.arange(3)], names=names)


def test_columns_of_different_length_write_nothing(tmp_path):
    rd = str(tmp_path / "t")
    with pytest.raises(ValueError, match="same length"):
        ctable([np.arange(3), np.arange(4)], names=["a", "b"], rootdir=rd)
    assert not os.path.exists(rd)


def test_unsupported_inputs_are_refused():
    with pytest.raises(ValueError):
        ctable(bcolz.carray(np.arange(3)), "f0")
    with pytest.raises(ValueError):
        ctable(np.arange(3))
    with pytest.raises(ValueError):
        ctable()


def test_multidimensional_column(rootdir):
    ra = np.zeros(10, dtype=[("a", "i4"), ("m", ("f8", (2, 3)))])
    ra["a"] = np.arange(10)
    ra["m"] = np.arange(60).reshape(10, 2, 3)
    t = ctable(ra, rootdir=rootdir, chunklen=CHUNKLEN)
    assert t.dtype == ra.dtype
    assert_array_equal(reopen(t)[:], ra)
    assert_array_equal(t[[7, 2]], ra[[7, 2]])


# ------------------------------------------------------------------ reading

def test_getitem_keys_match_numpy(rootdir):
    ra = records(37)
    t = ctable(ra, rootdir=rootdir, chunklen=CHUNKLEN)
    assert t[5] == ra[5]
    assert isinstance(t[5], np.void) and t[np.int64(5)] == ra[5]
    for key in [slice(None), slice(3, 30, 4), slice(None, None, -3), slice(40, 50)]:
        assert_array_equal(t[key], ra[key])
    for idx in [[3, 1, 36, 3], np.array([30, 2], dtype=np.int32),
                np.array([5, 0], dtype=np.uint64), np.array([-1, -37])]:
        assert_array_equal(t[idx], ra[idx])
    mask = ra["i"] % 5 == 1
    assert_array_equal(t[mask], ra[mask])
    assert_array_equal(t[bcolz.carray(mask)], ra[mask])
    assert_array_equal(t[(slice(2, 4),)], ra[2:4])
    assert_array_equal(t[[]], ra[[]])
    assert_array_equal(t[[2.7, 5.1]], ra[[2, 5]])
    sub = t[["x", "i"]]
    assert isinstance(sub, ctable) and sub.names == ["x", "i"]
    assert isinstance(t["x"], bcolz.carray)


def test_getitem_errors():
    t = ctable(records(10))
    with pytest.raises(IndexError):
        t[np.zeros(9, dtype=bool)]
    with pytest.raises(IndexError):
        t[np.array([1.5])]
    with pytest.raises(IndexError):
        t[1, 2]
    with pytest.raises(IndexError):
        t[10]
    with pytest.raises(NotImplementedError):
        t[1.5]


def test_getitem_expression_uses_columns_and_caller_variables(rootdir):
    ra = records(50)
    t = ctable(ra, rootdir=rootdir, chunklen=CHUNKLEN)
    limit = 30
    assert_array_equal(t["(i > 10) & (i < limit)"], ra[(ra["i"] > 10) & (ra["i"] < 30)])
    with pytest.raises(NameError):
        t["i > undefined_name_here"]


def test_getitem_of_a_missing_column_names_it_and_the_columns(rootdir):
    t = ctable([np.arange(3), np.arange(3.0)], names=["a", "b"], rootdir=rootdir)
    for key in ("nosuchcol", " nosuchcol "):
        with pytest.raises(bcolz.ColumnNotFoundError) as info:
            t[key]
        message = str(info.value)
        assert "column 'nosuchcol' does not exist" in message and "['a', 'b']" in message
        assert rootdir is None or rootdir in message
        # bcolz evaluated the name and raised NameError; KeyError is what a mapping raises
        assert isinstance(info.value, NameError) and isinstance(info.value, KeyError)
    with pytest.raises(bcolz.ColumnNotFoundError, match="column 'zz' does not exist"):
        t.cols["zz"]
    with pytest.raises(bcolz.ColumnNotFoundError, match="column 'zz' does not exist"):
        t[["a", "zz"]]
    # an expression naming an unknown variable is still a NameError about that name
    with pytest.raises(NameError, match="ppp") as info:
        t["a > ppp"]
    assert not isinstance(info.value, bcolz.ColumnNotFoundError)
    # a caller's variable of that name is evaluated, as bcolz did
    mask = np.array([True, False, True])
    assert t["mask"]["a"].tolist() == [0, 2]
    assert mask.any()


def test_gather_many_scattered_rows_is_exact():
    n = 200_000
    t = ctable([np.arange(n), np.arange(n) * 2.0], names=["a", "b"], chunklen=1000)
    idx = np.random.default_rng(0).integers(0, n, size=100_000)
    got = t[idx]
    assert_array_equal(got["a"], idx)
    assert_array_equal(got["b"], idx * 2.0)


def test_properties_sum_the_columns():
    t = ctable(records(100))
    assert t.nbytes == sum(t[n].nbytes for n in t.names) == records(100).nbytes
    assert t.cbytes == sum(t[n].cbytes for n in t.names)
    assert t.cratio == pytest.approx(t.nbytes / t.cbytes)
    assert t.cparams == bcolz.cparams()
    assert t.cols["x"] is t["x"] and t.cols.x is t["x"]
    assert list(t.cols) == t.names and len(t.cols) == 6
    assert "ctable((100,)" in repr(t) and "cparams :=" in repr(t)


# ------------------------------------------------------------------ writing

def test_setitem_rows_like_numpy(rootdir):
    ra = np.fromiter(((i, i * 2.0) for i in range(40)), dtype="i4,f8")
    t = ctable(ra, rootdir=rootdir, chunklen=CHUNKLEN)
    cases = [(3, (-1, -1.0)), (slice(5, 30, 3), (7, 7.0)), ([9, 1], [(-9, -9.0), (-1, -1.0)]),
             (ra["f0"] > 35, [(0, 0.5)]), (np.array([-2]), (99, 99.0))]
    for key, value in cases:
        t[key] = value
        ra[key] = value
    t["f0 < 2"] = (100, 100.0)
    ra[ra["f0"] < 2] = (100, 100.0)
    assert_array_equal(reopen(t)[:], ra)


def test_setitem_column_replacement_keeps_dtype(rootdir):
    t = ctable(records(10), rootdir=rootdir)
    t["i"] = np.arange(10) * 7
    assert t["i"].dtype == np.dtype("i4")
    assert_array_equal(reopen(t)["i"][:], np.arange(10) * 7)
    with pytest.raises(ValueError):
        t["i"] = np.arange(11)
    with pytest.raises(ValueError):
        t["i"] = {"a": 1}


def test_append_every_input_kind(rootdir):
    ra = np.fromiter(((i, i * 2.0) for i in range(30)), dtype="i4,f8")
    t = ctable(ra[:2], rootdir=rootdir, chunklen=CHUNKLEN)
    t.append((2, 4.0))                                        # one row
    t.append([(3, 6.0), (4, 8.0)])                            # rows
    t.append([[5, 6], [10.0, 12.0]])                          # columns as lists
    t.append((np.arange(7, 10), np.arange(7, 10) * 2.0))      # columns as arrays
    t.append([bcolz.carray(np.arange(10, 12)), bcolz.carray(np.arange(10, 12) * 2.0)])
    t.append(ra[12:20])                                       # structured
    t.append(ra[20])                                          # record
    t.append(ctable(ra[21:25]))                               # another ctable
    t.append(ra[25:30].astype([("a", "i4"), ("b", "f8")]))    # other names: by position
    assert_array_equal(reopen(t)[:], ra)


def test_append_failure_changes_nothing():
    t = ctable([np.arange(3), np.arange(3.0)], names=["a", "b"])
    with pytest.raises(ValueError):
        t.append([np.arange(2), np.arange(3.0)])
    with pytest.raises(ValueError):
        t.append((1, "not a float"))
    with pytest.raises(ValueError):
        t.append((1, 2.0, 3))
    with pytest.raises(ValueError):
        t.append(42)
    assert len(t) == 3 and len(t["a"]) == len(t["b"]) == 3


def test_trim_resize(rootdir):
    t = ctable(records(10), rootdir=rootdir, chunklen=CHUNKLEN)
    t.trim(3)
    assert_array_equal(reopen(t)[:], records(7))
    t = ctable(records(10), rootdir=rootdir, mode="w", chunklen=CHUNKLEN)
    t.resize(13)
    expected = np.concatenate([records(10), np.zeros(3, dtype=records(0).dtype)])
    assert_array_equal(reopen(t)[:], expected)
    with pytest.raises(ValueError):
        t.trim(100)


def test_addcol_delcol(rootdir):
    t = ctable(records(8), rootdir=rootdir, chunklen=CHUNKLEN, cparams=bcolz.cparams(clevel=1))
    t.addcol(np.arange(8) * 3, "c0", pos=0)
    t.addcol([1.5] * 8)
    assert t.names == ["c0", "i", "x", "b", "s", "u", "t", "f7"]
    assert t["c0"].cparams.clevel == 1
    t.delcol("x")
    t.delcol(pos=0)
    assert reopen(t).names == ["i", "b", "s", "u", "t", "f7"]
    for bad in [dict(), dict(name="i", pos=0), dict(name="nope"), dict(pos=6), dict(pos=-1)]:
        with pytest.raises(ValueError):
            t.delcol(**bad)
    for bad in [dict(newcol=np.arange(9)), dict(newcol=np.arange(8), name="i"),
                dict(newcol=np.arange(8), pos=9), dict(newcol="abcdefgh"),
                dict(newcol=np.arange(8), name=3)]:
        with pytest.raises(ValueError):
            t.addcol(**bad)


def test_delcol_all_then_addcol_again():
    t = ctable(records(5))
    for name in list(t.names):
        t.delcol(name)
    assert t.dtype == np.dtype([]) and len(t) == 5
    with pytest.raises(KeyError):
        t[0]
    t.addcol(np.arange(5), "z")
    assert_array_equal(t["z"][:], np.arange(5))


def test_disk_delcol_removes_or_keeps_directory(tmp_path):
    rd = str(tmp_path / "t")
    t = ctable(records(5), rootdir=rd)
    t.delcol("x")
    assert not os.path.exists(os.path.join(rd, "x"))
    t.delcol("i", keep=True)
    assert os.path.isdir(os.path.join(rd, "i"))


def test_addcol_moves_or_copies_disk_carray(tmp_path):
    rd = str(tmp_path / "t")
    t = ctable(records(5), rootdir=rd)
    src = bcolz.carray(np.arange(5), rootdir=str(tmp_path / "src"))
    t.addcol(src, "copied")
    assert os.path.isdir(str(tmp_path / "src")) and t["copied"].rootdir == os.path.join(rd, "copied")
    src2 = bcolz.carray(np.arange(5) * 2, rootdir=str(tmp_path / "src2"))
    t.addcol(src2, "moved", move=True)
    assert not os.path.exists(str(tmp_path / "src2"))
    assert_array_equal(reopen(t)["moved"][:], np.arange(5) * 2)


def test_copy_in_memory_and_to_disk(tmp_path):
    t = ctable(records(20), rootdir=str(tmp_path / "a"))
    c = t.copy(cparams=bcolz.cparams(clevel=9))
    assert c.rootdir is None and c.cparams.clevel == 9
    d = t.copy(rootdir=str(tmp_path / "b"))
    assert_array_equal(reopen(d)[:], records(20))
    with pytest.raises(OSError):
        t.copy(rootdir=str(tmp_path / "a"))


def test_context_manager_flushes(tmp_path):
    rd = str(tmp_path / "t")
    with ctable(np.empty(0, dtype="S2,i4"), rootdir=rd, auto_flush=False) as t:
        t.append(("a", 1))
        t.append(("b", 2))
    assert_array_equal(ctable(rootdir=rd)[:], np.array([(b"a", 1), (b"b", 2)], dtype="S2,i4"))


def test_object_column_in_memory():
    t = ctable(np.empty(0, dtype=[("a", object), ("b", "u1")]))
    for i in range(4):
        t.append((str(i), i))
    got = t[np.array([2, 0])]
    assert list(got["a"]) == ["2", "0"] and list(got["b"]) == [2, 0]


# ------------------------------------------------------------------ modes, files, safety

def test_read_only_mode_refuses_every_write(tmp_path):
    rd = str(tmp_path / "t")
    ctable(records(5), rootdir=rd)
    t = ctable(rootdir=rd, mode="r")
    writes = [lambda: t.append(records(1)), lambda: t.__setitem__(0, records(1)[0]),
              lambda: t.__setitem__("i", np.arange(5)), lambda: t.trim(1),
              lambda: t.resize(9), lambda: t.addcol(np.arange(5), "z"),
              lambda: t.delcol("i"), lambda: t.attrs.__setitem__("k", 1), t.purge]
    for write in writes:
        with pytest.raises(ReadOnlyError):
            write()
    assert_array_equal(ctable(rootdir=rd, mode="r")[:], records(5))


def test_missing_rootdir(tmp_path):
    rd = str(tmp_path / "nothing")
    with pytest.raises(DatasetNotFoundError):
        ctable(rootdir=rd, mode="r")
    with pytest.raises(KeyError):  # bcolz raised KeyError
        ctable(rootdir=rd, mode="r")
    with pytest.raises(DatasetNotFoundError):
        ctable(rootdir=rd, mode="a")
    os.mkdir(rd)
    with pytest.raises(DatasetNotFoundError, match="__rootdirs__"):
        ctable(rootdir=rd)


def test_mode_a_creates_a_missing_table(tmp_path):
    rd = str(tmp_path / "t")
    t = ctable(records(4), rootdir=rd, mode="a")
    assert t.mode == "a"
    t.append(records(5)[4])
    assert_array_equal(ctable(rootdir=rd, mode="r")[:], records(5))


def test_modes_on_existing_rootdir(tmp_path):
    rd = str(tmp_path / "t")
    ctable(records(5), rootdir=rd)
    with pytest.raises(ValueError):
        ctable(records(5), rootdir=rd)               # mode 'a' with columns
    with pytest.raises(ValueError):
        ctable(rootdir=rd, mode="w")                 # 'w' needs columns
    t = ctable(records(2), rootdir=rd, mode="w")     # overwrite
    assert len(ctable(rootdir=rd)) == 2 and t.mode == "w"


def test_on_disk_layout_and_meta_bytes(tmp_path):
    rd = tmp_path / "t"
    t = ctable([np.arange(3), np.arange(3.0)], names=["a", "b"], rootdir=str(rd))
    t.attrs["title"] = "\u00e9t\u00e9"
    assert sorted(os.listdir(rd)) == sorted(["__attrs__", "__rootdirs__", "a", "b", CHECKSUM_FILE,
                                             CONSOLIDATED_FILE, JOURNAL_DIR])
    assert (rd / "__rootdirs__").read_bytes() == b'{"names": ["a", "b"]}\n'
    assert (rd / "__attrs__").read_bytes() == b'{"title": "\\u00e9t\\u00e9"}\n'
    t.addcol(np.arange(3), "c", pos=1)
    assert (rd / "__rootdirs__").read_bytes() == b'{"names": ["a", "c", "b"]}\n'
    assert ctable(rootdir=str(rd)).attrs["title"] == "\u00e9t\u00e9"


@pytest.mark.parametrize("names", [["../x"], ["/etc"], ["a", "a"], [""]])
def test_unsafe_rootdirs_are_refused(tmp_path, names):
    rd = tmp_path / "t"
    ctable([np.arange(3)], names=["a"], rootdir=str(rd))
    import json
    (rd / "__rootdirs__").write_text(json.dumps({"names": names}) + "\n")
    with pytest.raises(FormatError):
        ctable(rootdir=str(rd), mode="r")


def test_column_symlink_leaving_rootdir_is_refused(tmp_path):
    rd = tmp_path / "t"
    ctable([np.arange(3)], names=["a"], rootdir=str(rd))
    bcolz.carray(np.arange(3), rootdir=str(tmp_path / "outside"))
    os.symlink(str(tmp_path / "outside"), str(rd / "b"))
    (rd / "__rootdirs__").write_text('{"names": ["a", "b"]}\n')
    with pytest.raises(FormatError, match="outside"):
        ctable(rootdir=str(rd), mode="r")


def test_columns_of_unequal_length_on_disk_are_refused(tmp_path):
    rd = tmp_path / "t"
    t = ctable([np.arange(3), np.arange(3)], names=["a", "b"], rootdir=str(rd))
    t["a"].append(7)
    t["a"].flush()
    with pytest.raises(FormatError, match="different lengths"):
        ctable(rootdir=str(rd), mode="r")


def test_pickle(tmp_path):
    t = ctable(records(5))
    assert_array_equal(pickle.loads(pickle.dumps(t))[:], records(5))
    d = ctable(records(5), rootdir=str(tmp_path / "t"))
    back = pickle.loads(pickle.dumps(d))
    # A stored table travels as its rootdir and opens as a reader: copies in
    # other processes never become writers of the same dataset.
    assert back.rootdir == d.rootdir and back.mode == "r"
    assert_array_equal(back[:], records(5))


def test_fixture_ctables_read_back(fixtures_dir):
    for name in ["ctable_mixed", "ctable_small_chunks"]:
        t = ctable(rootdir=str(fixtures_dir / name), mode="r")
        with np.load(fixtures_dir / f"{name}.expected.npz") as npz:
            assert t.names == list(npz["__names__"])
            for col in t.names:
                assert_array_equal(t[col][:], npz[col])
            rows = np.random.default_rng(1).integers(0, len(t), 50)
            got = t[rows]
            for col in t.names:
                assert_array_equal(got[col], npz[col][rows])


@pytest.mark.parametrize("build", ["structured", "append", "addcol_delcol", "zeros", "setcol",
                                   "addcol_carray"])
def test_bytes_match_bcolz(tmp_path, build):
    ref_bcolz = pytest.importorskip("bcolz")
    ra = np.fromiter(((i, i * 2.5, i % 7 == 0, b"k%d" % (i % 13)) for i in range(30_000)),
                     dtype="i4,f8,?,S6")

    def make(mod, rd):
        if build == "structured":
            t = mod.ctable(ra, rootdir=rd)
            t.attrs["a"] = [1, "two"]
        elif build == "append":
            t = mod.ctable(ra[:0], rootdir=rd, chunklen=1000)
            for i in range(0, len(ra), 7000):
                t.append(ra[i:i + 7000])
        elif build == "addcol_delcol":
            t = mod.ctable(ra, rootdir=rd)
            t.addcol(np.arange(len(ra), dtype="i2"), name="extra", pos=1)
            t.delcol("f1")
        elif build == "zeros":
            mod.zeros(1000, dtype="i4,f8", rootdir=rd)
        elif build == "addcol_carray":
            t = mod.ctable(ra, rootdir=rd, cparams=mod.cparams(clevel=7, cname="zlib"))
            t.addcol(mod.carray(np.arange(len(ra)) % 9, dflt=3, chunklen=500), name="n")
        else:
            t = mod.ctable(ra, rootdir=rd)
            t["f0"] = np.arange(len(ra))[::-1]
            t.flush()

    def tree(root):  # the files bcolz reads (our own files sit beside them)
        return {rel: open(os.path.join(root, rel), "rb").read() for rel in bcolz_files(root)}

    make(ref_bcolz, str(tmp_path / "ref"))
    make(bcolz, str(tmp_path / "ours"))
    ref, ours = tree(str(tmp_path / "ref")), tree(str(tmp_path / "ours"))
    assert set(ours) - set(without_stats(ours)) == {f"{name}/{STATS_FILE}" for name in
                                                   bcolz.open(str(tmp_path / "ours")).names}
    ours = without_stats(ours)      # (our chunk statistics, which bcolz ignores)
    assert sorted(ours) == sorted(ref)
    assert [k for k in ref if ref[k] != ours[k]] == []


# ------------------------------------------------------------------ queries

@pytest.fixture
def table(rootdir):
    ra = np.fromiter(((i, i * 2.0, i * 3) for i in range(100)), dtype="i4,f8,i8")
    return ctable(ra, rootdir=rootdir, chunklen=7), ra


def test_iter_bounds_outcols_limit_skip(table):
    t, ra = table
    assert [r.f1 for r in t] == list(ra["f1"])
    assert [r.f1 for r in t.iter(1, 90, 3, limit=5, skip=2)] == list(ra["f1"][1:90:3][2:7])
    assert [tuple(r) for r in t.iter(outcols="f2, nrow__")] == [(i * 3, i) for i in range(100)]
    assert list(t.iter(5, 8, out_flavor=tuple)) == [tuple(r) for r in ra[5:8]]
    arr_rows = list(t.iter(5, 7, out_flavor=np.ndarray))
    assert arr_rows[0].shape == (1,) and arr_rows[1][0] == ra[6]
    assert list(t.iter(50, 10)) == [] and list(t.iter(0, 10, limit=0)) == []
    with pytest.raises(NotImplementedError):
        t.iter(step=0)
    with pytest.raises(ValueError):
        t.iter(outcols=["nope"])
    with pytest.raises(ValueError):
        t.iter(outcols=3)


def test_independent_iterators(table):
    t, ra = table
    a, b = t.iter(0, 100, 2), t.iter(1, 100, 2)
    assert [(x.f0, y.f0) for x, y in zip(a, b)] == list(zip(range(0, 100, 2), range(1, 100, 2)))


def test_where_expression_array_and_limits(table):
    t, ra = table
    expected = [i for i in range(100) if (i * 2.0 > 50) and i % 2 == 0]
    assert [r.f0 for r in t.where("(f1 > 50) & (f0 % 2 == 0)")] == expected
    mask = (ra["f1"] > 50) & (ra["f0"] % 2 == 0)
    assert [r.f0 for r in t.where(mask)] == expected
    assert [r.f0 for r in t.where(bcolz.carray(mask), limit=3, skip=2)] == expected[2:5]
    rows = list(t.where("f0 < 3", outcols=["nrow__", "f2"]))
    assert rows == [(0, 0), (1, 3), (2, 6)] and all(type(r[0]) is int for r in rows)
    assert list(t.where("f0 > 1000")) == []
    with pytest.raises(ValueError):
        t.where("f0 + 1")
    with pytest.raises(ValueError):
        t.where(np.ones(3, dtype=bool))


def test_where_variables_user_dict_beats_columns_beats_locals(table):
    t, ra = table
    f0 = -1  # a local shadowed by the column f0
    threshold = 95
    assert [r.f0 for r in t.where("f0 > threshold")] == [96, 97, 98, 99]
    assert [r.f0 for r in t.where("f0 > threshold", user_dict={"threshold": 97})] == [98, 99]
    assert f0 == -1


def test_whereblocks_exact_block_lengths(table):
    t, ra = table
    blocks = list(t.whereblocks("f0 >= 0", blen=30))
    assert [len(b) for b in blocks] == [30, 30, 30, 10]
    assert_array_equal(np.concatenate(blocks), ra)
    blocks = list(t.whereblocks("f0 % 3 == 0", outcols=("f2", "nrow__"), limit=10, skip=1))
    got = np.concatenate(blocks)
    assert got.dtype.names == ("f2", "nrow__")
    assert_array_equal(got["nrow__"], np.arange(3, 33, 3))
    assert list(t.whereblocks("f0 < 0")) == []


def test_fetchwhere_flavors(table, tmp_path):
    t, ra = table
    got = t.fetchwhere("f0 < 10", out_flavor="numpy")
    assert_array_equal(got, ra[:10])
    ct = t.fetchwhere("f0 < 10", outcols="f2,f0")
    assert isinstance(ct, ctable) and ct.names == ["f2", "f0"]
    assert_array_equal(ct["f2"][:], ra["f2"][:10])
    empty = t.fetchwhere("f0 < 0", out_flavor="numpy")
    assert len(empty) == 0 and empty.dtype == ra.dtype
    on_disk = t.fetchwhere("f0 < 5", rootdir=str(tmp_path / "res"))
    assert_array_equal(ctable(rootdir=str(tmp_path / "res"))[:], ra[:5])
    with pytest.raises(ValueError):
        t.fetchwhere("f0 < 5", out_flavor="list")


def test_eval_over_columns(table):
    t, ra = table
    k = 2
    assert_array_equal(t.eval("f0 * k + f2")[:], ra["f0"] * 2 + ra["f2"])
    assert_array_equal(t.eval("f0 + f1", vm="python")[:], ra["f0"] + ra["f1"])


def test_string_and_datetime_queries():
    t = ctable(records(20))
    assert [r.i for r in t.where("s == b's3'")] == [3]
    stamp = records(20)["t"][15]
    assert [r.i for r in t.where("t > stamp", vm="python")] == [16, 17, 18, 19]


def test_rows_hold_python_scalars_and_numpy_datetimes():
    t = ctable(records(3))
    row = next(iter(t))
    assert [type(v) for v in row] == [int, float, bool, bytes, str, np.datetime64]
    assert [type(v) for v in next(t.where("i == 1", outcols="nrow__, x"))] == [int, float]
    assert row.t == np.datetime64("2020-01-01", "ns")
