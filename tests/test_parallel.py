"""The thread pool that decodes and encodes chunks: every result and every byte
written is the same for any number of threads, errors come from the chunk
that failed, and memory stays bounded."""

import os
import threading
import time
import tracemalloc

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import bcolz_store as bcolz
from bcolz_store import threads
from bcolz_store.errors import CodecError, DatasetChangedError, FormatError
from tests.conftest import bcolz_files, without_stats

THREADS = (1, 2, 4)


@pytest.fixture
def nthreads_restored():
    previous = threads.get_nthreads()
    yield
    bcolz.set_nthreads(previous)


def _walk(n, seed=0):
    return np.cumsum(np.random.default_rng(seed).standard_normal(n))


# ------------------------------------------------------------------ the pool

def test_map_ordered_keeps_order_and_bounds_what_is_in_flight(nthreads_restored):
    bcolz.set_nthreads(4)
    lock = threading.Lock()
    running, most = [0], [0]
    consumed = []

    def work(i):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.002 * (i % 3))
        with lock:
            running[0] -= 1
        return i * i

    # Submitted and not yet consumed: never more than the limit (3).
    started = []

    def tracked(i):
        started.append(i)
        assert len(started) - len(consumed) <= 3
        return work(i)

    for value in threads.map_ordered(tracked, list(range(40)), limit=3):
        consumed.append(value)
    assert consumed == [i * i for i in range(40)]
    assert 1 < most[0] <= 3


def test_map_ordered_raises_the_first_error_in_order_after_running_tasks_end(
        nthreads_restored):
    bcolz.set_nthreads(4)
    finished = []

    def work(i):
        if i == 5:
            time.sleep(0.05)
            raise ValueError("five")
        if i == 6:
            raise KeyError("six")
        time.sleep(0.01)
        finished.append(i)
        return i

    got = []
    with pytest.raises(ValueError, match="five"):
        for value in threads.map_ordered(work, list(range(30))):
            got.append(value)
    assert got == [0, 1, 2, 3, 4]
    done = len(finished)
    time.sleep(0.05)
    assert len(finished) == done      # nothing still runs, nothing new started
    assert done < 30


def test_map_ordered_closed_early_waits_for_its_tasks(nthreads_restored):
    bcolz.set_nthreads(2)
    active = []

    def work(i):
        active.append(i)
        time.sleep(0.01)
        active.remove(i)
        return i

    gen = threads.map_ordered(work, list(range(20)))
    assert next(gen) == 0
    gen.close()
    assert active == []


def test_work_asked_for_inside_a_task_runs_inline(nthreads_restored):
    bcolz.set_nthreads(2)

    def inner(i):
        return threading.current_thread().name

    def outer(i):         # would deadlock if it waited for the (busy) pool
        return list(threads.map_ordered(inner, list(range(4))))

    for names in threads.map_ordered(outer, list(range(6))):
        assert len(set(names)) == 1 and names[0].startswith("bcolz_store-chunks")


def test_one_thread_runs_everything_in_the_caller(nthreads_restored):
    bcolz.set_nthreads(1)
    me = threading.current_thread().name
    assert set(threads.map_ordered(lambda i: threading.current_thread().name,
                                   list(range(5)))) == {me}


@pytest.mark.parametrize("bad", [0, -2, 1.5, "4", True, None])
def test_set_nthreads_refuses_what_is_not_a_positive_integer(bad, nthreads_restored):
    with pytest.raises(ValueError, match="positive integer"):
        bcolz.set_nthreads(bad)


def test_set_nthreads_returns_the_previous_number(nthreads_restored):
    bcolz.set_nthreads(3)
    assert bcolz.set_nthreads(2) == 3
    assert threads.get_nthreads() == 2
    assert bcolz.detect_number_of_cores() >= 1


# ------------------------------------------------------ same results, same bytes

@pytest.fixture(params=["memory", "disk"])
def stored(request, tmp_path):
    """(carray of a random walk in chunks of 4,096, the numpy data); 25 chunks."""
    data = _walk(100_003)
    rootdir = str(tmp_path / "c") if request.param == "disk" else None
    c = bcolz.carray(data, chunklen=4_096, rootdir=rootdir)
    if rootdir:
        c = bcolz.open(rootdir, mode="r")
    return c, data


def test_reads_are_the_same_for_every_number_of_threads(stored, nthreads_restored):
    c, data = stored
    idx = np.random.default_rng(5).integers(0, len(data), 5_000)
    results = []
    for n in THREADS:
        bcolz.set_nthreads(n)
        c.free_cachemem()
        got = (c[:], c[123:98_765], c[5:90_000:7], c[idx], c[-20_000:], c.sum())
        results.append(got)
        assert_array_equal(got[0], data)
        assert_array_equal(got[1], data[123:98_765])
        assert_array_equal(got[2], data[5:90_000:7])
        assert_array_equal(got[3], data[idx])
    for other in results[1:]:
        for a, b in zip(results[0][:5], other[:5]):
            assert_array_equal(a, b)
        assert results[0][5] == other[5]          # the very same float, not just close


def test_sum_adds_chunk_sums_in_chunk_order(nthreads_restored):
    data = _walk(70_001, seed=9) * 1e9
    c = bcolz.carray(data, chunklen=1_000)
    expected = np.float64(0)
    for start in range(0, len(data), 1_000):
        expected += data[start:start + 1_000].sum()
    for n in THREADS:
        bcolz.set_nthreads(n)
        assert c.sum() == expected
    small = (np.arange(100_000) % 30_000).astype(np.int16)
    assert bcolz.carray(small, chunklen=999).sum() == small.astype(np.int64).sum()


def test_queries_and_dataframes_are_the_same_for_every_number_of_threads(
        tmp_path, nthreads_restored):
    rng = np.random.default_rng(2)
    n = 60_000
    cols = [np.arange(n), rng.random(n), rng.integers(0, 1000, n), _walk(n, 3)]
    t = bcolz.ctable(cols, names=["id", "x", "k", "y"], rootdir=str(tmp_path / "t"),
                     chunklen=2_000)
    t = bcolz.open(str(tmp_path / "t"), mode="r")
    expected = np.flatnonzero((cols[1] > 0.5) & (cols[2] < 100))
    outs = []
    for nt in THREADS:
        bcolz.set_nthreads(nt)
        ids = np.concatenate([b["id"] for b in t.whereblocks("(x > 0.5) & (k < 100)",
                                                             outcols=["id"])])
        rows = [r.id for r in t.where("(x > 0.5) & (k < 100)", outcols=["id"])]
        fetched = t.fetchwhere("(x > 0.5) & (k < 100)", out_flavor="numpy")
        ev = bcolz.eval("x * 2 + y", user_dict={"x": t.cols["x"], "y": t.cols["y"]},
                        out_flavor="numpy")
        assert_array_equal(ids, expected)
        assert rows == expected.tolist()
        assert_array_equal(fetched["y"], cols[3][expected])
        outs.append((ev, t.todataframe()))
    for ev, df in outs[1:]:
        assert_array_equal(ev, outs[0][0])
        assert df.equals(outs[0][1])
    assert_array_equal(outs[0][1]["y"].to_numpy(), cols[3])


@pytest.mark.parametrize("kind", ["carray", "ctable", "copy"])
def test_files_are_byte_identical_for_every_number_of_threads(tmp_path, kind,
                                                              nthreads_restored):
    data = _walk(150_000, 4)
    source = bcolz.carray(data, chunklen=5_000)
    trees = []
    for n in THREADS:
        bcolz.set_nthreads(n)
        root = tmp_path / f"{kind}-{n}"
        if kind == "carray":
            c = bcolz.carray(data, rootdir=str(root), chunklen=5_000)
            c.append(data[:33_333])
            c.flush()
        elif kind == "ctable":
            bcolz.ctable([data, np.arange(len(data)), (data * 100).astype("i2")],
                         names=["a", "b", "c"], rootdir=str(root))
        else:
            source.copy(rootdir=str(root), cparams=bcolz.cparams(clevel=9, shuffle=2))
        trees.append(bcolz_files(root))
    assert trees[0] and trees[1] == trees[0] and trees[2] == trees[0]


def test_bytes_match_the_real_bcolz_with_many_threads(tmp_path, nthreads_restored):
    ref = pytest.importorskip("bcolz")
    bcolz.set_nthreads(4)
    data = _walk(300_000, 6)
    ref.carray(data, rootdir=str(tmp_path / "ref"), chunklen=8_192)
    bcolz.carray(data, rootdir=str(tmp_path / "ours"), chunklen=8_192)
    ref.ctable([data, np.arange(len(data))], names=["x", "i"], rootdir=str(tmp_path / "rt"))
    bcolz.ctable([data, np.arange(len(data))], names=["x", "i"], rootdir=str(tmp_path / "ot"))
    # (without our chunk statistics, which bcolz ignores)
    assert without_stats(bcolz_files(tmp_path / "ours")) == bcolz_files(tmp_path / "ref")
    assert without_stats(bcolz_files(tmp_path / "ot")) == bcolz_files(tmp_path / "rt")


def test_changing_the_number_of_threads_while_others_read(tmp_path, nthreads_restored):
    data = _walk(2_000_000)
    bcolz.carray(data, chunklen=131_072, rootdir=str(tmp_path / "c"))   # a task per chunk
    c = bcolz.open(str(tmp_path / "c"), mode="r")
    bcolz.set_nthreads(2)
    failures, done = [], threading.Event()

    def reader():
        try:
            while not done.is_set():
                if not np.array_equal(c[:], data) or c.sum() != c.sum():
                    failures.append("wrong result")
        except Exception as err:    # a pool replaced under a running read
            failures.append(repr(err))

    workers = [threading.Thread(target=reader) for _ in range(2)]
    for w in workers:
        w.start()
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        for n in (3, 1, 4, 2):
            bcolz.set_nthreads(n)
            time.sleep(0.001)
    done.set()
    for w in workers:
        w.join(30)
    assert failures == []


# ------------------------------------------------------------------ failures

@pytest.mark.parametrize("where", ["memory", "disk"])
def test_vlen_reads_are_the_same_for_every_number_of_threads(tmp_path, where, nthreads_restored):
    rng = np.random.default_rng(8)
    items = [None if k == 0 else "é" * int(k) for k in rng.integers(0, 40, 30_001)]
    rootdir = str(tmp_path / "v") if where == "disk" else None
    c = bcolz.carray(items, dtype=bcolz.vlen("str"), chunklen=1_000, rootdir=rootdir)
    if rootdir:
        c = bcolz.open(rootdir, mode="r")
    expected = np.array(items, dtype=object)
    for n in THREADS:
        bcolz.set_nthreads(n)
        c.free_cachemem()
        got = c[:]
        assert list(got) == items
        assert list(c[2_500:27_345]) == items[2_500:27_345]
        assert list(c[::9]) == list(expected[::9])


def test_a_damaged_vlen_chunk_in_a_parallel_read_names_that_chunk(tmp_path, nthreads_restored):
    items = [f"item {i}" for i in range(20_000)]
    bcolz.carray(items, dtype=bcolz.vlen("str"), chunklen=1_000, rootdir=str(tmp_path / "v"))
    path = tmp_path / "v" / "data" / "__12.vlen"
    path.write_bytes(path.read_bytes()[:-5])         # truncated
    bcolz.set_nthreads(4)
    c = bcolz.open(str(tmp_path / "v"), mode="r")
    with pytest.raises((CodecError, FormatError), match="__12.vlen"):
        c[:]
    assert list(c[:12_000]) == items[:12_000]       # the pool still works


def test_a_damaged_chunk_in_a_parallel_read_names_that_chunk(tmp_path, nthreads_restored):
    data = _walk(40_000)
    bcolz.carray(data, chunklen=1_000, rootdir=str(tmp_path / "c"))
    path = tmp_path / "c" / "data" / "__17.blp"
    path.write_bytes(path.read_bytes()[:3_000])       # truncated
    bcolz.set_nthreads(4)
    c = bcolz.open(str(tmp_path / "c"), mode="r")
    with pytest.raises((CodecError, FormatError), match="__17.blp"):
        c[:]
    with pytest.raises((CodecError, FormatError), match="__17.blp"):
        c.sum()
    assert_array_equal(c[:17_000], data[:17_000])   # the pool still works


def test_a_commit_during_a_parallel_read_is_told(tmp_path, nthreads_restored):
    bcolz.set_nthreads(2)
    root = str(tmp_path / "c")
    bcolz.carray(_walk(50_000), chunklen=1_000, rootdir=root)
    reader = bcolz.open(root, mode="r")
    writer = bcolz.open(root, mode="a")
    writer[:1_000] = 0.0
    writer.flush()
    with pytest.raises(DatasetChangedError):
        reader[:]
    reader.refresh()
    assert (reader[:1_000] == 0).all()


# ------------------------------------------------------------------ memory

def test_a_full_read_holds_the_output_and_a_window_of_chunks(tmp_path, nthreads_restored):
    bcolz.set_nthreads(4)
    data = np.random.default_rng(8).random(1_000_000)      # compresses poorly
    bcolz.carray(data, chunklen=16_384, rootdir=str(tmp_path / "c"))
    c = bcolz.open(str(tmp_path / "c"), mode="r")
    tracemalloc.start()
    try:
        out = c[:]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    chunk = 16_384 * 8
    assert_array_equal(out, data)
    assert peak - out.nbytes < (threads.window(4) + 4) * chunk   # 61 chunks read


def test_a_write_holds_a_bounded_number_of_compressed_chunks(tmp_path, monkeypatch,
                                                             nthreads_restored):
    from bcolz_store.chunks.engine import WRITE_TASK_BYTES as TASK_BYTES
    from bcolz_store.storage import journal
    monkeypatch.setattr(journal, "MAX_INFLIGHT_BYTES", 1 << 20)
    bcolz.set_nthreads(4)
    data = np.random.default_rng(9).random(4_000_000)      # 32 MB, compresses poorly
    tracemalloc.start()
    try:
        bcolz.carray(data, chunklen=32_768, rootdir=str(tmp_path / "c"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # A window of tasks of TASK_BYTES each, the blobs waiting to be written,
    # and a few chunks besides: about 11 MB of the 32 MB written.
    assert peak < threads.window(4) * TASK_BYTES + (1 << 20) + 8 * 32_768 * 8
    assert_array_equal(bcolz.open(str(tmp_path / "c"))[:], data)


def _blobs(root) -> list:
    journal = root / ".bcolz_store-journal"
    return sorted(p.name for p in journal.rglob("*.blob")) if journal.exists() else []


def test_a_failed_chunk_write_on_the_pool_leaves_the_committed_state(
        tmp_path, monkeypatch, nthreads_restored):
    from bcolz_store.chunks.chunk import DiskChunks
    bcolz.set_nthreads(2)
    root = tmp_path / "c"
    c = bcolz.carray(_walk(100_000, 1), chunklen=65_536, rootdir=str(root))
    before = bcolz_files(root)
    real, calls = DiskChunks.write_ahead, []

    def failing(self, nchunk, chunk_):
        calls.append(nchunk)
        if len(calls) == 5:
            raise OSError(28, "No space left on device")
        return real(self, nchunk, chunk_)
    monkeypatch.setattr(DiskChunks, "write_ahead", failing)
    with pytest.raises(OSError, match="No space"):
        c.append(_walk(1_000_000, 2))                  # 15 chunks, 2 a task
    assert len(calls) >= 5
    monkeypatch.undo()
    assert len(c) == 100_000 and not _blobs(root)      # files written ahead are gone
    assert_array_equal(c[:], _walk(100_000, 1))
    assert bcolz_files(root) == before
    c.append(_walk(1_000_000, 2))
    c.flush()
    assert_array_equal(bcolz.open(str(root))[:], np.concatenate([_walk(100_000, 1),
                                                                 _walk(1_000_000, 2)]))
    assert bcolz.verify(str(root)).ok and not _blobs(root)


def test_a_file_written_ahead_is_staged_only_under_its_own_key(tmp_path, nthreads_restored):
    root = tmp_path / "c"
    c = bcolz.carray(np.arange(100.0), chunklen=10, rootdir=str(root), mode="w")
    written = c.dataset.write_ahead("data/__10.blp", [b"x" * 70_000])
    with pytest.raises(ValueError, match="cannot be staged"):
        c.dataset.stage_ahead("data/__11.blp", written)
    c.dataset.discard()
    assert not _blobs(root)
    assert_array_equal(bcolz.open(str(root))[:], np.arange(100.0))


def test_importing_starts_no_thread():
    import subprocess
    import sys
    code = ("import threading, bcolz_store, numpy as np; "
            "n = threading.active_count(); c = bcolz_store.carray(np.arange(10)); "
            "print(n, threading.active_count())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=os.path.dirname(os.path.dirname(bcolz.__file__)))
    assert out.stdout.split() == ["1", "1"]
