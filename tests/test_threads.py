"""Several threads reading one carray at once get numpy's answers."""

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
