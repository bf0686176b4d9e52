"""Top-level functions (open, fill/zeros/ones, arange, fromiter, iterblocks, walk...) and printing."""

import os

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import bcolz_store as bcolz
from bcolz_store import printing
from bcolz_store.errors import DatasetNotFoundError


@pytest.fixture(params=["memory", "disk"])
def rootdir(request, tmp_path):
    return None if request.param == "memory" else str(tmp_path / "ds")


# ------------------------------------------------------------------- open

def test_open_returns_carray_for_carray_dir(tmp_path):
    path = str(tmp_path / "a")
    bcolz.arange(10, rootdir=path)
    obj = bcolz.open(path, mode="r")
    assert isinstance(obj, bcolz.carray)
    assert obj.mode == "r"
    assert_array_equal(obj[:], np.arange(10))


def test_open_returns_ctable_for_ctable_dir(tmp_path):
    path = str(tmp_path / "t")
    bcolz.fromiter(((i, i * 2.0) for i in range(5)), dtype="i4,f8", count=5, rootdir=path)
    obj = bcolz.open(path)
    assert isinstance(obj, bcolz.ctable)
    assert_array_equal(obj["f1"][:], np.arange(5) * 2.0)


def test_open_missing_path_names_it(tmp_path):
    missing = str(tmp_path / "nope")
    with pytest.raises(DatasetNotFoundError, match="nope"):
        bcolz.open(missing)
    with pytest.raises(FileNotFoundError):  # bcolz raised IOError
        bcolz.open(missing)


def test_open_mode_w_empties_carray(tmp_path):
    path = str(tmp_path / "a")
    bcolz.arange(10, rootdir=path)
    assert len(bcolz.open(path, mode="w")) == 0


# ------------------------------------------------------- fill / zeros / ones

@pytest.mark.parametrize("length", [0, 1, 7, 100, 1001])
def test_zeros_ones_fill_match_numpy(rootdir, length):
    z = bcolz.zeros(length, dtype="i4", rootdir=rootdir)
    assert_array_equal(z[:], np.zeros(length, "i4"))
    assert z.dtype == np.dtype("i4")
    if rootdir:
        z.purge()
    o = bcolz.ones(length, rootdir=rootdir)
    assert_array_equal(o[:], np.ones(length))
    if rootdir:
        o.purge()
    f = bcolz.fill(length, 3, dtype="i2", rootdir=rootdir)
    assert_array_equal(f[:], np.full(length, 3, "i2"))
    assert f.dflt == 3


def test_fill_multidimensional_shape_gives_atoms():
    c = bcolz.fill((5, 2, 3), dflt=1.5, dtype="f4")
    assert c.shape == (5, 2, 3)
    assert_array_equal(c[:], np.full((5, 2, 3), 1.5, "f4"))


def test_fill_crosses_many_chunks_block_by_block():
    c = bcolz.fill(10_005, dflt=9, dtype="i8", chunklen=100)
    assert c.chunklen == 100
    assert len(c) == 10_005 and c.nchunks == 100
    assert_array_equal(c[:], np.full(10_005, 9))


def test_fill_float_shape_is_truncated():
    assert len(bcolz.zeros(1e3)) == 1000


def test_fill_strings():
    c = bcolz.fill(4, "1", dtype="S3")
    assert_array_equal(c[:], np.array([b"1"] * 4, dtype="S3"))


def test_zeros_structured_dtype_gives_ctable(rootdir):
    t = bcolz.zeros(50, dtype="i4,f8", rootdir=rootdir)
    assert isinstance(t, bcolz.ctable)
    assert_array_equal(t[:], np.zeros(50, "i4,f8"))


def test_ones_structured_dtype_fills_ones():
    t = bcolz.ones(3, dtype="i4,f8")
    assert_array_equal(t[:], np.ones(3, "i4,f8"))


def test_fill_negative_shape_is_rejected():
    with pytest.raises(ValueError, match="negative"):
        bcolz.zeros(-1)


def test_fill_existing_rootdir_in_mode_a_raises(tmp_path):
    path = str(tmp_path / "a")
    bcolz.zeros(10, rootdir=path)
    with pytest.raises(IOError):
        bcolz.zeros(10, rootdir=path, mode="a")


# ------------------------------------------------------------------ arange

@pytest.mark.parametrize("args", [(10,), (3, 10), (3, 1000, 4), (10, 0, -3), (0, 2.5, 0.5),
                                  (1e2,), (0.1, 3.3, 0.7), (5, 5), (5, 0)])
def test_arange_matches_numpy(args):
    assert_array_equal(bcolz.arange(*args, chunklen=7)[:], np.arange(*args))
    assert bcolz.arange(*args).dtype == np.arange(*args).dtype


def test_arange_dtype_wraps_like_numpy():
    assert_array_equal(bcolz.arange(1e4, dtype="i1")[:], np.arange(1e4, dtype="i1"))
    assert_array_equal(bcolz.arange(0, 100, 3, dtype="f4")[:], np.arange(0, 100, 3, dtype="f4"))


def test_arange_on_disk(tmp_path):
    path = str(tmp_path / "a")
    bcolz.arange(12_345, rootdir=path, chunklen=1000)
    assert_array_equal(bcolz.open(path)[:], np.arange(12_345))


@pytest.mark.parametrize("kwargs, message", [({}, "stop"), ({"start": 0, "stop": 3, "step": 0}, "zero"),
                                             ({"stop": 3, "dtype": "i4,i8"}, "ctables")])
def test_arange_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        bcolz.arange(**kwargs)


# ---------------------------------------------------------------- fromiter

@pytest.mark.parametrize("n", [0, 1, 99, 100, 101, 1000])
def test_fromiter_carray(n):
    c = bcolz.fromiter((i * 2 for i in range(n)), dtype="f8", count=n, chunklen=100)
    assert_array_equal(c[:], np.arange(n) * 2.0)


def test_fromiter_count_minus_one_reads_all():
    c = bcolz.fromiter(iter(range(250)), dtype="i4", count=-1, chunklen=64)
    assert_array_equal(c[:], np.arange(250, dtype="i4"))


def test_fromiter_reads_at_most_count():
    it = iter(range(100))
    c = bcolz.fromiter(it, dtype="i8", count=10)
    assert len(c) == 10
    assert next(it) == 10


def test_fromiter_shorter_iterable_stops_early():
    assert len(bcolz.fromiter(range(3), dtype="i8", count=10)) == 3


def test_fromiter_structured_gives_ctable(tmp_path):
    path = str(tmp_path / "t")
    t = bcolz.fromiter(((i, -i) for i in range(300)), dtype="i2,f4", count=300, rootdir=path)
    assert isinstance(t, bcolz.ctable)
    assert_array_equal(t["f1"][:], -np.arange(300, dtype="f4"))


def test_fromiter_multidimensional_atoms():
    rows = [np.full(3, i) for i in range(20)]
    c = bcolz.fromiter(rows, dtype=("i8", (3,)), count=20)
    assert c.shape == (20, 3)
    assert_array_equal(c[:], np.array(rows))


def test_fromiter_rejects_bad_count():
    with pytest.raises(ValueError, match="count"):
        bcolz.fromiter([], dtype="i4", count=-2)


# -------------------------------------------------------------- iterblocks

@pytest.mark.parametrize("blen, start, stop", [(None, 0, None), (100, 0, None), (100, 99, None),
                                               (100, 99, 302), (7, 5, 5), (33, -50, None),
                                               (1000, 0, 10**9)])
def test_iterblocks_carray_covers_range(rootdir, blen, start, stop):
    a = np.arange(1003.0)
    c = bcolz.carray(a, chunklen=64, rootdir=rootdir)
    blocks = list(bcolz.iterblocks(c, blen, start, stop))
    expected = a[slice(start, stop)]
    assert_array_equal(np.concatenate(blocks) if blocks else np.empty(0), expected)
    step = blen or 64
    assert all(len(b) == step for b in blocks[:-1])


def test_iterblocks_ndim_keeps_atoms():
    c = bcolz.ones((10, 3), dtype="i4")
    blocks = list(bcolz.iterblocks(c, blen=4))
    assert [b.shape for b in blocks] == [(4, 3), (4, 3), (2, 3)]


def test_iterblocks_blen_one_drops_leading_dimension():
    blocks = list(bcolz.iterblocks(bcolz.arange(3), blen=1))
    assert [np.ndim(b) for b in blocks] == [0, 0, 0]


def test_iterblocks_ctable_yields_structured_blocks():
    ra = np.fromiter(((i, i * 2.0) for i in range(250)), dtype="i4,f8")
    t = bcolz.ctable(ra, chunklen=64)
    blocks = list(bcolz.iterblocks(t, 100, 10, 240))
    assert [len(b) for b in blocks] == [100, 100, 30]
    assert blocks[0].dtype == ra.dtype
    assert_array_equal(np.concatenate(blocks), ra[10:240])


def test_iterblocks_errors():
    with pytest.raises(TypeError, match="carray or a ctable"):
        bcolz.iterblocks(np.arange(3))
    with pytest.raises(ValueError, match="blen"):
        bcolz.iterblocks(bcolz.arange(3), blen=0)


# -------------------------------------------------------------------- walk

def _tree(tmp_path):
    top = tmp_path / "top"
    bcolz.zeros(5, rootdir=str(top / "a"))
    bcolz.zeros(5, dtype="i4,f8", rootdir=str(top / "t"))
    bcolz.arange(5, rootdir=str(top / "sub" / "deeper" / "b"))
    (top / "empty").mkdir()
    (top / "file.txt").write_text("not a dataset")
    return str(top)


def test_walk_finds_every_dataset_without_ctable_columns(tmp_path):
    found = [(type(o).__name__, os.path.basename(o.rootdir)) for o in bcolz.walk(_tree(tmp_path))]
    assert found == [("carray", "a"), ("ctable", "t"), ("carray", "b")]


@pytest.mark.parametrize("classname, names", [("carray", ["a", "b"]), ("ctable", ["t"])])
def test_walk_filters_by_classname(tmp_path, classname, names):
    found = [os.path.basename(o.rootdir) for o in bcolz.walk(_tree(tmp_path), classname)]
    assert found == names


def test_walk_opens_in_given_mode(tmp_path):
    assert {o.mode for o in bcolz.walk(_tree(tmp_path), mode="r")} == {"r"}


def test_walk_errors(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="missing"):
        bcolz.walk(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="classname"):
        bcolz.walk(str(tmp_path), classname="table")


# ----------------------------------------------------------------- threads

def test_set_nthreads_returns_previous():
    first = bcolz.set_nthreads(2)
    assert bcolz.set_nthreads(1) == 2
    bcolz.set_nthreads(first)


def test_set_nthreads_rejects_zero():
    with pytest.raises(ValueError):
        bcolz.set_nthreads(0)


def test_detect_number_of_cores_is_positive():
    assert bcolz.detect_number_of_cores() >= 1


def test_print_versions(capsys):
    bcolz.print_versions()
    out = capsys.readouterr().out
    assert "bcolz_store version:" in out and "NumPy version:" in out and "Blosc version:" in out


# ---------------------------------------------------------------- printing

@pytest.mark.parametrize("array", [np.arange(10), np.arange(5000), np.random.default_rng(0).random((3000, 4)),
                                   np.arange(24).reshape(4, 6), np.arange(12000).reshape(4, 3000),
                                   np.array(["2010-01-01", "2010-01-02"], dtype="datetime64[D]"),
                                   np.array([b"ab", b"c"] * 800), np.zeros(0)])
def test_str_of_carray_is_numpy_str(array):
    assert printing.array2string(bcolz.carray(array, chunklen=100)) == np.array2string(array)


def test_str_of_ctable_is_numpy_str():
    ra = np.fromiter(((i, i / 3) for i in range(4000)), dtype="i4,f8")
    assert printing.array2string(bcolz.ctable(ra)) == np.array2string(ra)


def test_long_array_reads_only_head_and_tail():
    class Spy:
        shape = (10**12,)
        reads = []

        def __len__(self):
            return 10**12

        def __getitem__(self, key):
            self.reads.append(key)
            return np.arange(key.start or 0, key.stop)

    text = printing.array2string(Spy())
    assert text.split() == ["[", "0", "1", "2", "...", "999999999997", "999999999998",
                            "999999999999]"]
    assert all(k.stop - (k.start or 0) == 3 for k in Spy.reads)


def test_printoptions_are_bcolz_own():
    before = printing.get_printoptions()
    try:
        bcolz.set_printoptions(threshold=5, edgeitems=1)
        assert printing.array2string(bcolz.arange(10)) == "[0 ... 9]"
        assert np.get_printoptions()["threshold"] == 1000
    finally:
        bcolz.set_printoptions(**{k: v for k, v in before.items() if v is not None})
    assert printing.get_printoptions() == before


def test_set_printoptions_rejects_negative():
    with pytest.raises(ValueError, match="threshold"):
        bcolz.set_printoptions(threshold=-1)


def test_carray_repr_layout(tmp_path):
    path = str(tmp_path / "a")
    c = bcolz.carray(np.arange(5), rootdir=path, cparams=bcolz.cparams(cname="blosclz"))
    text = printing.format_carray_repr(c)
    assert text.splitlines() == [
        "carray((5,), int64)",
        "  nbytes := 40; cbytes := 16.00 KB; ratio: 0.00",
        "  cparams := cparams(clevel=5, shuffle=1, cname='blosclz', quantize=0)",
        "  chunklen := 2048; chunksize: 16384; blocksize: 0",
        f"  rootdir := '{path}'",
        "  mode    := 'a'",
        "[0 1 2 3 4]",
    ]


def test_ctable_repr_layout():
    t = bcolz.ctable(np.zeros(2, "i4,f8"))
    lines = printing.format_ctable_repr(t).splitlines()
    assert lines[0] == "ctable((2,), [('f0', '<i4'), ('f1', '<f8')])"
    assert lines[1].startswith("  nbytes: 24; cbytes: ")
    assert lines[-1] == "[(0, 0.) (0, 0.)]"


def test_human_readable_size():
    assert [printing.human_readable_size(n) for n in (0, 1023, 1024, 3 * 2**20, 2**40)] == [
        "0", "1023", "1.00 KB", "3.00 MB", "1.00 TB"]


@pytest.mark.parametrize("module", ["bcolz_store.toplevel", "bcolz_store.printing",
                                    "bcolz_store.kinds.category.types", "bcolz_store.kinds.vlen.types"])
def test_docstring_examples_run(module, tmp_path, monkeypatch):
    import doctest
    import importlib
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))   # the examples' folders go here
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_open_and_verify_say_what_a_path_that_is_no_dataset_is(tmp_path):
    (tmp_path / "file.txt").write_text("hello")
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "readme.txt").write_text("hello")
    with pytest.raises(bcolz.DatasetNotFoundError, match="not a bcolz dataset \\(a file"):
        bcolz.open(tmp_path / "file.txt")
    with pytest.raises(bcolz.DatasetNotFoundError, match="no dataset here \\(a file"):
        bcolz.verify(tmp_path / "file.txt")
    with pytest.raises(bcolz.DatasetNotFoundError, match="not a bcolz dataset \\(a folder"):
        bcolz.verify(tmp_path / "folder")
    with pytest.raises(bcolz.DatasetNotFoundError, match="the path does not exist"):
        bcolz.verify(tmp_path / "nothing")


def test_iterblocks_keep_a_big_endian_dtype_exactly():
    for dtype in (">i8", ">f4", ">M8[s]", [("a", ">i4")]):
        c = bcolz.carray(np.zeros(5, dtype=dtype), chunklen=2)
        assert c[:].dtype == np.dtype(dtype)
        for blen in (1, 2, 5):
            blocks = list(bcolz.iterblocks(c, blen))
            assert len(blocks) == -(-5 // blen)
            assert all(np.asarray(b).dtype == np.dtype(dtype) for b in blocks), (dtype, blen)
    native = list(bcolz.iterblocks(bcolz.carray(np.arange(3)), 1))
    assert native == [0, 1, 2] and isinstance(native[0], np.int64)     # scalars as bcolz
    one = list(bcolz.iterblocks(bcolz.carray(np.arange(3, dtype=">i8")), 1))
    assert [int(b) for b in one] == [0, 1, 2] and one[0].shape == ()
