"""dask: carrays and ctables as dask arrays and dataframes, pickled handles for
its schedulers, and from_dask writing chunk files from the workers with one
commit, on local disks and S3, with threads, processes and a 2-process
dask.distributed cluster on loopback."""

import logging
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import bcolz_store as bcolz
from bcolz_store.errors import DatasetExistsError
from tests.conftest import bcolz_files

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")
import dask  # noqa: E402

JOURNAL = ".bcolz_store-journal"


def _walk(n, seed=0):
    return np.cumsum(np.random.default_rng(seed).standard_normal(n))


def _table(rootdir=None, n=50_000, **kwargs):
    rng = np.random.default_rng(4)
    cols = [np.arange(n), rng.random(n), np.array([f"k{i % 7}" for i in range(n)]),
            (rng.random(n) * 100).astype(np.float32)]
    return bcolz.ctable(cols, names=["id", "x", "k", "z"], rootdir=rootdir, **kwargs), cols


def _blob_folders(root):
    journal = os.path.join(root, JOURNAL)
    if not os.path.isdir(journal):
        return []
    return [d for d in os.listdir(journal) if os.path.isdir(os.path.join(journal, d))]


# ------------------------------------------------------------------ to_dask

def test_carray_to_dask_has_blocks_of_whole_chunks(tmp_path):
    data = _walk(100_003)
    c = bcolz.carray(data, chunklen=4_096, rootdir=str(tmp_path / "c"))
    x = c.to_dask()
    assert x.shape == c.shape and x.dtype == c.dtype
    assert all(n % c.chunklen == 0 for n in x.chunks[0][:-1])
    y = c.to_dask(blen=3 * 4_096)
    assert set(y.chunks[0][:-1]) == {3 * 4_096}
    assert_array_equal(y.compute(scheduler="threads"), data)
    assert float(y.sum().compute(scheduler="sync")) == pytest.approx(data.sum())
    with pytest.raises(ValueError, match="multiple of the chunklen 4096"):
        c.to_dask(blen=5_000)


def test_to_dask_commits_pending_appends_first(tmp_path):
    root = str(tmp_path / "c")
    c = bcolz.carray(np.arange(10_000.0), chunklen=1_000, rootdir=root)
    c.append(np.arange(555.0))                 # in the leftover, not committed
    x = c.to_dask(blen=3_000)
    assert len(bcolz.open(root, mode="r")) == 10_555
    assert x.shape == (10_555,)
    assert float(x.sum().compute(scheduler="processes", num_workers=2)) == \
        float(np.arange(10_000.0).sum() + np.arange(555.0).sum())


def test_multidimensional_carray_to_dask(tmp_path):
    data = np.arange(30_000 * 3, dtype=np.int32).reshape(30_000, 3)
    c = bcolz.carray(data, chunklen=1_000, rootdir=str(tmp_path / "c"))
    x = c.to_dask(blen=2_000)
    assert x.chunks[1] == (3,)
    assert_array_equal(x[:, 1].compute(), data[:, 1])


def test_from_array_takes_chunk_aligned_blocks_from_shards(tmp_path):
    c = bcolz.carray(_walk(200_000), chunklen=7_000, rootdir=str(tmp_path / "c"))
    assert c.shards == (7_000,)
    assert len(c.chunks) == c.nchunks        # bcolz's chunk list stays as it is
    x = da.from_array(c)
    assert all(n % 7_000 == 0 for n in x.chunks[0][:-1])
    small = da.from_array(c, chunks=21_000)
    assert small.numblocks[0] == 10
    assert float(small.sum().compute(scheduler="threads")) == pytest.approx(c[:].sum())


def test_from_array_with_the_process_scheduler(tmp_path):
    data = _walk(120_000)
    c = bcolz.carray(data, chunklen=10_000, rootdir=str(tmp_path / "c"))
    m = bcolz.carray(data, chunklen=10_000)
    for src in (c, m):
        x = da.from_array(src, chunks=30_000)
        got = x.map_blocks(lambda b: b * 2).compute(scheduler="processes", num_workers=2)
        assert_array_equal(got, data * 2)


def test_ctable_to_dask_partitions_and_groupby(tmp_path):
    t, cols = _table(str(tmp_path / "t"))
    df = t.to_dask()
    assert df.npartitions == 1 and list(df.columns) == t.names
    part = t.to_dask(blen=t.cols["id"].chunklen, columns=["k", "x"])
    assert part.npartitions > 1 and part.divisions[1] == t.cols["id"].chunklen
    assert all(d % t.cols["id"].chunklen == 0 for d in part.divisions[:-1])
    expected = pd.Series(cols[1]).groupby(cols[2]).sum()
    got = part.groupby("k").x.sum().compute(scheduler="threads")
    np.testing.assert_allclose(got.sort_index().to_numpy(), expected.sort_index().to_numpy(),
                               rtol=1e-12)      # partial sums added in another order
    whole = part.compute()
    assert_array_equal(whole.index.to_numpy(), np.arange(len(t)))
    assert_array_equal(whole["x"].to_numpy(), cols[1])
    with pytest.raises(KeyError, match="nope"):
        t.to_dask(columns=["nope"])
    with pytest.raises(ValueError, match="multiple"):
        t.to_dask(blen=10)


def test_ctable_to_dask_keeps_text_and_categorical_columns_as_todataframe(tmp_path):
    n = 9_000
    frame = pd.DataFrame({
        "s": pd.Series([None if i % 11 == 0 else "w" * (i % 5) for i in range(n)],
                       dtype=object),
        "c": pd.Categorical([["lo", "mid", "hi"][i % 3] for i in range(n)],
                            categories=["lo", "mid", "hi"], ordered=True),
        "v": np.arange(n, dtype="i4")})
    t = bcolz.ctable.fromdataframe(frame, rootdir=str(tmp_path / "t"), strings="vlen",
                                   chunklen=1000)
    with dask.config.set({"dataframe.convert-string": False}):   # dask's own conversion off
        part = t.to_dask(blen=2000)
        got = part.compute(scheduler="threads")
    assert part.npartitions == 5
    assert part.dtypes["c"] == frame["c"].dtype         # the categories, ordered, from meta
    expected = t.todataframe()
    assert got.dtypes.to_dict() == expected.dtypes.to_dict()
    pd.testing.assert_frame_equal(got, expected)
    pd.testing.assert_frame_equal(got, frame)
    assert (part[part["c"] > "lo"].v.count().compute(scheduler="threads")
            == (frame["c"] > "lo").sum())


def test_ctable_to_dask_keeps_decimal_list_struct_and_bytes_items(tmp_path):
    # dask's string conversion (on by default) must not turn items that are not text into text
    from decimal import Decimal
    point = bcolz.struct([("x", "int8"), ("y", "str")], nullable=True)
    t = bcolz.ctable([bcolz.carray(["1.5", None], dtype=bcolz.decimal(5, 1)),
                      bcolz.carray([[1], None], dtype=bcolz.list_("int8")),
                      bcolz.carray([{"x": 1, "y": "a"}, None], dtype=point),
                      bcolz.carray([b"a", None], dtype=bcolz.vlen(bytes))],
                     names=["d", "l", "p", "b"], rootdir=str(tmp_path / "t"))
    with dask.config.set({"dataframe.convert-string": True}):
        part = t.to_dask()
    got = part.compute(scheduler="sync")
    assert got["d"].tolist() == [Decimal("1.5"), None] and got["b"].tolist() == [b"a", None]
    assert got["l"][0].tolist() == [1] and got["l"][1] is None
    assert got["p"].tolist() == [{"x": 1, "y": "a"}, None]
    assert part["d"].compute(scheduler="sync").tolist() == [Decimal("1.5"), None]
    assert part.dtypes.to_dict() == t.todataframe().dtypes.to_dict()


def test_a_dataframe_column_holds_scalars(tmp_path):
    t = bcolz.ctable([np.zeros((10, 2)), np.arange(10)], names=["v", "i"])
    with pytest.raises(ValueError, match="'v' holds items of shape"):
        t.to_dask()
    assert_array_equal(t.to_dask(columns=["i"]).compute()["i"].to_numpy(), np.arange(10))


# ------------------------------------------------------------------ pickling

def test_a_stored_carray_pickles_as_a_reader_of_its_rootdir(tmp_path):
    root = str(tmp_path / "c")
    c = bcolz.carray(_walk(10_000), chunklen=1_000, rootdir=root)
    c.append(np.ones(5))                       # not flushed: not in the copy
    back = pickle.loads(pickle.dumps(c))
    assert back.rootdir == root and back.mode == "r" and len(back) == 10_000
    assert len(pickle.dumps(c)) < 1_000        # a path, not the data
    t, cols = _table(str(tmp_path / "t"))
    col = pickle.loads(pickle.dumps(t.cols["x"]))
    assert col.mode == "r" and col.rootdir == t.cols["x"].rootdir
    assert_array_equal(col[:], cols[1])


def test_an_in_memory_carray_pickles_its_chunks(tmp_path):
    data = np.arange(123_457, dtype=np.int64)
    c = bcolz.carray(data, chunklen=10_000, cparams=bcolz.cparams(clevel=9, cname="zlib"),
                     dflt=7)
    c.attrs["unit"] = "m"
    back = pickle.loads(pickle.dumps(c))
    assert_array_equal(back[:], data)
    assert (back.chunklen, back.cparams, back.cbytes, int(back.dflt)) == \
        (c.chunklen, c.cparams, c.cbytes, 7)
    assert [ch.getdata() for ch in back.chunks] == [ch.getdata() for ch in c.chunks]
    assert back.attrs["unit"] == "m"
    zeros = pickle.loads(pickle.dumps(bcolz.zeros(50_000, chunklen=1_000)))
    assert zeros.chunks[3].isconstant and zeros.sum() == 0
    objs = pickle.loads(pickle.dumps(bcolz.carray(np.array([{"a": 1}, None, "x"],
                                                            dtype=object))))
    assert list(objs) == [{"a": 1}, None, "x"]


def test_in_memory_vlen_and_categorical_carrays_pickle_with_their_type():
    items = [None if i % 13 == 0 else f"item {i % 97}" for i in range(20_000)]
    v = bcolz.carray(items, dtype=bcolz.vlen("str", level=9, dictionary=True),
                     chunklen=4_000, dflt="?")
    v.attrs["unit"] = "name"
    back = pickle.loads(pickle.dumps(v))
    assert list(back[:]) == items
    assert repr(back.vlen) == repr(v.vlen) and back.chunklen == 4_000
    assert back.attrs["unit"] == "name"
    back.resize(20_002)
    assert list(back[-2:]) == ["?", "?"]              # the dflt came along
    c = bcolz.carray(["lo", "hi", None, "lo"] * 500,
                     dtype=bcolz.category(["lo", "mid", "hi"], ordered=True))
    cb = pickle.loads(pickle.dumps(c))
    assert list(cb[:4]) == ["lo", "hi", None, "lo"]
    assert_array_equal(cb.codes[:], c.codes[:])
    assert cb.category.categories == ["lo", "mid", "hi"] and cb.category.ordered
    t = bcolz.ctable([c, np.arange(2_000)], names=["c", "n"])
    tb = pickle.loads(pickle.dumps(t))
    assert_array_equal(tb["c"].codes[:], c.codes[:])
    assert list(tb["n"][:3]) == [0, 1, 2]


def test_a_carray_in_a_memory_store_cannot_be_pickled():
    from bcolz_store.storage.memory import MemoryStore
    c = bcolz.carray(np.arange(10), rootdir=MemoryStore())
    with pytest.raises(TypeError, match="in this process only"):
        pickle.dumps(c)


def test_dask_tokens_follow_commits(tmp_path):
    from dask.base import tokenize
    root = str(tmp_path / "c")
    c = bcolz.carray(np.arange(10_000), rootdir=root)
    first = tokenize(bcolz.open(root, mode="r"))
    assert tokenize(bcolz.open(root, mode="r")) == first
    c.append(np.arange(5))
    c.flush()
    assert tokenize(bcolz.open(root, mode="r")) != first
    m = bcolz.carray(np.arange(10))
    assert tokenize(m) == tokenize(m) != tokenize(bcolz.carray(np.arange(10)))


# ------------------------------------------------------------------ from_dask

def _blocks(n, pattern):
    """Block lengths repeating ``pattern`` until they add up to ``n``."""
    out, i = [], 0
    while sum(out) < n:
        out.append(min(pattern[i % len(pattern)], n - sum(out)))
        i += 1
    return tuple(out)


@pytest.mark.parametrize("pattern", [(300_001,), (1_000, 2_000, 100_000), (70_001,),
                                     (9_999,), (5_000_000,)], ids=str)
def test_from_dask_writes_the_files_carray_writes(tmp_path, pattern):
    n = 2_345_678 if pattern == (5_000_000,) else 312_345
    x = da.from_array(_walk(n), chunks=(_blocks(n, pattern),))
    c = bcolz.from_dask(x, str(tmp_path / "fd"))
    assert c.mode == "a" and len(c) == n
    bcolz.carray(x.compute(), rootdir=str(tmp_path / "ref"))
    assert bcolz_files(tmp_path / "fd") == bcolz_files(tmp_path / "ref")
    assert _blob_folders(str(tmp_path / "fd")) == []


def test_from_dask_with_parameters_and_more_dimensions(tmp_path):
    data = np.arange(50_000 * 4, dtype=np.int16).reshape(50_000, 4)
    x = da.from_array(data, chunks=(7_777, 2))
    params = dict(cparams=bcolz.cparams(clevel=9, shuffle=2, cname="zstd"), chunklen=3_000)
    c = bcolz.from_dask(x, str(tmp_path / "fd"), **params)
    assert c.chunklen == 3_000 and c.shape == (50_000, 4)
    bcolz.carray(data, rootdir=str(tmp_path / "ref"), **params)
    assert bcolz_files(tmp_path / "fd") == bcolz_files(tmp_path / "ref")
    empty = bcolz.from_dask(da.zeros((0,), chunks=5), str(tmp_path / "empty"))
    assert len(empty) == 0 and empty.dtype == np.float64


def test_from_dask_dataframe_writes_the_files_fromdataframe_writes(tmp_path):
    t, cols = _table(n=70_000)
    pdf = t.todataframe()
    ddf = dd.from_pandas(pdf, npartitions=7)
    out = bcolz.from_dask(ddf, str(tmp_path / "fd"))
    assert out.names == ["id", "x", "k", "z"] and out["k"].dtype == np.dtype("U2")
    bcolz.ctable.fromdataframe(pdf, rootdir=str(tmp_path / "ref"))
    assert bcolz_files(tmp_path / "fd") == bcolz_files(tmp_path / "ref")
    words = pd.DataFrame({"w": ["a", "bcd", "", "é" * 9], "b": [b"x", b"", b"yy", b"z"],
                          "t": pd.to_datetime(["2020-01-01"] * 4), "f": [True] * 4})
    with dask.config.set({"dataframe.convert-string": False}):   # keep bytes as bytes
        back = bcolz.from_dask(dd.from_pandas(words, npartitions=2), str(tmp_path / "w"))
    assert back["w"].dtype == np.dtype("U9") and back["b"].dtype == np.dtype("S2")
    assert back["w"][:].tolist() == ["a", "bcd", "", "é" * 9]
    assert back["t"].dtype.kind == "M" and back["f"][:].all()


def test_from_dask_refuses_what_it_cannot_store(tmp_path):
    with pytest.raises(TypeError, match="dask Array or DataFrame"):
        bcolz.from_dask(np.arange(3), str(tmp_path / "a"))
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        x = da.arange(10, chunks=3)
        bcolz.from_dask(x[x > 3], str(tmp_path / "a"))
    with pytest.raises(ValueError, match="object arrays"):
        bcolz.from_dask(da.from_array(np.array([1, "a"], dtype=object), chunks=1),
                        str(tmp_path / "a"))
    with pytest.raises(ValueError, match="mode must be"):
        bcolz.from_dask(da.arange(3, chunks=2), str(tmp_path / "a"), mode="r")
    missing = dd.from_pandas(pd.DataFrame({"s": ["a", None, "c"]}), npartitions=2)
    with pytest.raises(ValueError, match="'s'"):
        bcolz.from_dask(missing, str(tmp_path / "a"))
    labels = dd.from_pandas(pd.DataFrame({0: [1, 2]}), npartitions=1)
    with pytest.raises(ValueError, match="distinct strings"):
        bcolz.from_dask(labels, str(tmp_path / "a"))
    assert not os.path.exists(tmp_path / "a")


def test_from_dask_replaces_only_in_mode_w_and_a_failure_commits_nothing(tmp_path):
    root = str(tmp_path / "c")
    old = np.arange(10_000.0)
    bcolz.carray(old, rootdir=root, chunklen=1_000)
    with pytest.raises(DatasetExistsError, match="mode is 'a'"):
        bcolz.from_dask(da.ones(10, chunks=5), root)

    def fail(block, block_info=None):
        if block_info[0]["chunk-location"][0] == 3:
            raise RuntimeError("a worker failed")
        return block
    x = da.ones(60_000, chunks=5_000).map_blocks(fail, dtype=float)
    with pytest.raises(RuntimeError, match="a worker failed"):
        bcolz.from_dask(x, root, mode="w")
    assert_array_equal(bcolz.open(root, mode="r")[:], old)
    assert _blob_folders(root) == []
    new = bcolz.from_dask(da.ones(60_000, chunks=5_000), root, mode="w")
    assert_array_equal(new[:], np.ones(60_000))
    assert_array_equal(bcolz.open(root, mode="r")[:], np.ones(60_000))


KILLED_WRITER = textwrap.dedent("""
    import sys, time
    import numpy as np, dask, dask.array as da, bcolz_store as bcolz

    def slow(block, block_info=None):
        if block_info[0]["chunk-location"][0] == 7:
            time.sleep(600)              # the parent kills this process meanwhile
        return block

    x = da.ones(160_000, chunks=10_000).map_blocks(slow, dtype=float)
    with dask.config.set(scheduler="threads", num_workers=4):
        bcolz.from_dask(x, sys.argv[1], mode="w", chunklen=2_000)
""")


def test_a_writer_killed_before_its_commit_leaves_the_old_state(tmp_path, monkeypatch):
    root = str(tmp_path / "c")
    old = _walk(30_000)
    bcolz.carray(old, rootdir=root, chunklen=2_000)
    before = bcolz_files(tmp_path / "c")
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, root],
                            cwd=os.path.dirname(os.path.dirname(bcolz.__file__)))
    try:
        deadline = time.monotonic() + 60
        while True:                          # wait until workers have written chunks
            folders = _blob_folders(root)
            blobs = [f for d in folders for f in os.listdir(os.path.join(root, JOURNAL, d))]
            if len(blobs) >= 20 or proc.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the writer ended before it was killed"
        assert len(blobs) >= 20
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert bcolz_files(tmp_path / "c") == before
    assert_array_equal(bcolz.open(root, mode="r")[:], old)
    assert _blob_folders(root)               # the dead writer's chunks, uncommitted
    from bcolz_store.storage.journal import Journal
    monkeypatch.setattr(Journal, "stale_after", 0.0)   # as a writer opening later would
    with bcolz.open(root, mode="a") as c:
        assert_array_equal(c[:], old)
    assert _blob_folders(root) == []


# ------------------------------------------- S3 and a 2-process dask.distributed cluster

@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None,
                                  silence_logs=logging.ERROR) as local:
        with distributed.Client(local, set_as_default=False) as client:
            yield client


@pytest.mark.parametrize("where", ["local", "s3"])
def test_round_trips_on_a_distributed_cluster(tmp_path, where, cluster, request):
    if where == "s3":
        url, options = request.getfixturevalue("s3_bucket")
        root = f"{url}/data"
    else:
        root, options = str(tmp_path), None
    x = da.from_array(_walk(345_678), chunks=50_000)
    with dask.config.set(scheduler=cluster):
        assert set(cluster.run(os.getpid).values()) - {os.getpid()}   # other processes
        c = bcolz.from_dask(x, f"{root}/a.bcolz", storage_options=options, chunklen=16_384)
        assert_array_equal(c[:], x.compute(scheduler="threads"))
        y = c.to_dask()
        assert float(y.sum().compute()) == pytest.approx(float(x.sum().compute()))
        t, cols = _table(f"{root}/t.bcolz", n=40_000, storage_options=options,
                         chunklen=4_000)
        df = t.to_dask(blen=8_000)
        totals = df.groupby("k").agg({"x": "sum", "id": "count"}).reset_index()
        out = bcolz.from_dask(totals, f"{root}/g.bcolz", storage_options=options)
        again = bcolz.from_dask(df, f"{root}/t2.bcolz", storage_options=options)
    expected = pd.Series(cols[1]).groupby(cols[2]).sum()
    got = dict(zip(out["k"][:].tolist(), out["x"][:].tolist()))
    assert got == pytest.approx(expected.to_dict())
    assert out["id"][:].sum() == 40_000
    for name, col in zip(t.names, cols):
        assert_array_equal(again[name][:], col)
    reopened = bcolz.open(f"{root}/t2.bcolz", mode="r", storage_options=options)
    assert reopened.names == t.names and len(reopened) == 40_000


def test_the_scaling_guide_runs_as_written(tmp_path, monkeypatch):
    import doctest
    import tempfile
    from pathlib import Path
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    guide = Path(__file__).resolve().parents[2] / "docs" / "scaling.md"
    result = doctest.testfile(str(guide), module_relative=False,
                              optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.attempted > 20 and result.failed == 0
