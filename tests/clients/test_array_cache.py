"""Arrays cached the way the fast.ai course notebooks cache them.

``save_array`` writes a whole array with ``carray(arr, rootdir=..., mode='w')`` and
``flush()``; ``load_array`` reads it back with ``bcolz.open(path)[:]``; a batch
iterator opens the carray and slices ``c[i:i+bs]`` over all of it, in order or
chunk by chunk in a shuffled order; saving again under the same name replaces
the array (another length, shape or dtype) with mode 'w'.
"""

import os

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import bcolz_store as bcolz
from bcolz_store.errors import ReadOnlyError

from .conftest import real_bcolz


def save_array(fname, arr):
    c = bcolz.carray(arr, rootdir=fname, mode="w")
    c.flush()


def load_array(fname):
    return bcolz.open(fname)[:]


def batches(fname, bs):
    """Every batch of ``bs`` rows, in order (the last one may be short)."""
    c = bcolz.open(fname)
    for i in range(0, len(c), bs):
        yield i, c[i:i + bs]


def shuffled_chunks(fname, seed):
    """Whole chunks (the rows a chunk holds) in a shuffled order, as a
    chunk-aware batch iterator reads them."""
    c = bcolz.open(fname)
    n = -(-len(c) // c.chunklen)
    for k in np.random.default_rng(seed).permutation(n):
        yield k * c.chunklen, c[k * c.chunklen:(k + 1) * c.chunklen]


def arrays():
    rng = np.random.default_rng(7)
    return {
        "features": rng.standard_normal((600, 16, 7, 7)).astype(np.float32),  # conv features
        "images": rng.integers(0, 256, (300, 3, 24, 24), dtype=np.uint8),
        "labels": rng.integers(0, 10, 600).astype(np.int64),
        "onehot": np.eye(10, dtype=np.float32)[rng.integers(0, 10, 1000)],
    }


def check_cached(src, arr):
    back = load_array(src)
    assert back.dtype == arr.dtype and back.shape == arr.shape
    assert_array_equal(back, arr)
    c = bcolz.open(src)
    assert c.shape == arr.shape and len(c) == len(arr)
    for bs in (64, c.chunklen, len(arr) + 1):
        seen = []
        for i, batch in batches(src, bs):
            assert batch.shape == arr[i:i + bs].shape
            assert_array_equal(batch, arr[i:i + bs])
            seen.append(batch)
        assert_array_equal(np.concatenate(seen), arr)
    rows = 0
    for start, batch in shuffled_chunks(src, seed=len(arr)):
        assert_array_equal(batch, arr[start:start + c.chunklen])
        rows += len(batch)
    assert rows == len(arr)


def data_files(fname):
    return sorted(os.listdir(os.path.join(fname, "data")))


@pytest.mark.parametrize("name", list(arrays()))
def test_array_cache_flow(place, nthreads, name):
    arr = arrays()[name]
    fname = place.path(f"{name}.bc")
    save_array(fname, arr)
    c = bcolz.open(fname, mode="r")
    # features and images fill whole chunks and a leftover; labels and one-hot rows fit a leftover
    assert (c.nchunks >= 1) == (name in ("features", "images")) and c.leftover
    check_cached(place.published(fname), arr)
    if real_bcolz is not None and place.folder:
        assert_array_equal(real_bcolz.open(fname, mode="r")[:], arr)

    # save again under the same name: shorter, with another shape and dtype
    new = (arr[: len(arr) // 3] * 2).astype(np.float64).reshape(len(arr) // 3, -1)
    save_array(fname, new)
    check_cached(place.published(fname), new)
    if place.folder:
        c = bcolz.open(fname, mode="r")
        # no chunk file of the first array is left behind
        assert len(data_files(fname)) == c.nchunks + (1 if c.leftover else 0)
    if real_bcolz is not None and place.folder:
        ref = real_bcolz.open(fname, mode="r")
        assert ref.dtype == new.dtype and ref.shape == new.shape
        assert_array_equal(ref[:], new)

    # and back to the first array
    save_array(fname, arr)
    check_cached(place.published(fname), arr)


def test_a_cache_the_real_bcolz_wrote_loads(tmp_path):
    if real_bcolz is None:
        pytest.skip("the real bcolz is not importable")
    for name, arr in arrays().items():
        fname = str(tmp_path / f"{name}.bc")
        c = real_bcolz.carray(arr, rootdir=fname, mode="w")
        c.flush()
        check_cached(fname, arr)
        save_array(fname, arr[::-1].copy())        # bcolz_store overwrites what bcolz wrote
        assert_array_equal(real_bcolz.open(fname, mode="r")[:], arr[::-1])


def test_a_packed_cache_cannot_be_overwritten(tmp_path):
    from .conftest import Place
    place = Place("pack", tmp_path)
    arr = arrays()["labels"]
    fname = place.path("labels.bc")
    save_array(fname, arr)
    packed = place.published(fname)
    with pytest.raises(ReadOnlyError):
        save_array(packed, arr[:10])
    assert_array_equal(load_array(packed), arr)
