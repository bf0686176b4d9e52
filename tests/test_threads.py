"""Threads and processes: several threads reading one carray at once get
numpy's answers; background chunk writes keep working in forked children."""

import multiprocessing
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import bcolz_store


@pytest.mark.parametrize("on_disk", [False, True], ids=["memory", "disk"])
def test_threads_read_one_carray(tmp_path, on_disk):
    expected = np.random.default_rng(3).random(200_000)
    c = bcolz_store.carray(expected, chunklen=1000,
                           rootdir=str(tmp_path / "a") if on_disk else None)
    if on_disk:
        c = bcolz_store.open(str(tmp_path / "a"), mode="r")
    c.cache_budget = 5 * 8000  # a few chunks: threads keep evicting each other's
    rng = np.random.default_rng(4)
    starts = rng.integers(0, len(expected) - 5000, 400)

    def read(start):
        got = c[start:start + 5000]
        picks = c[np.arange(start, start + 5000, 97)]
        return (np.array_equal(got, expected[start:start + 5000])
                and np.array_equal(picks, expected[start:start + 5000:97]))

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(read, starts))


def _write_in_child(path):
    data = np.arange(400_000, dtype=np.float64)
    bcolz_store.carray(data, chunklen=65_536, rootdir=path, mode="w")
    ok = np.array_equal(bcolz_store.open(path, mode="r")[:], data)
    os._exit(0 if ok else 3)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_writes_after_parent_wrote(tmp_path):
    # Large chunks are written by a pool of background threads; a forked
    # child inherits the pool object but not its threads, and must start
    # its own instead of waiting forever for the parent's.
    data = np.arange(400_000, dtype=np.float64)
    bcolz_store.carray(data, chunklen=65_536, rootdir=str(tmp_path / "parent"))
    child = multiprocessing.get_context("fork").Process(
        target=_write_in_child, args=(str(tmp_path / "child"),))
    child.start()
    child.join(60)
    if child.is_alive():
        child.kill()
        pytest.fail("the forked child hung writing chunks")
    assert child.exitcode == 0
