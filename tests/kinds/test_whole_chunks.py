"""Arrow sources of several blocks make carrays whose full chunks are all
built from rows (``kinds.buffers.whole_chunks`` cuts the blocks on chunk
boundaries), with the same bytes as from one block."""

from __future__ import annotations

import filecmp
import os

import numpy as np
import pytest
from hypothesis import given, strategies as st

import bcolz_store
from bcolz_store.kinds.buffers import ArrowBuffers, whole_chunks


def _fixed(lo, hi):
    return ArrowBuffers(hi - lo, None, None, np.arange(lo, hi))


@given(chunklen=st.integers(1, 9), filled=st.integers(0, 20),
       sizes=st.lists(st.integers(0, 25), max_size=6))
def test_blocks_are_cut_on_chunk_boundaries_and_keep_every_row(chunklen, filled, sizes):
    blocks, pos = [], 0
    for size in sizes:
        blocks.append(_fixed(pos, pos + size))
        pos += size
    out = list(whole_chunks(iter(blocks), chunklen, filled))
    rows = np.concatenate([b.values for b in out]).tolist() if out else []
    assert rows == list(range(pos))
    ends = filled + np.cumsum([b.length for b in out[:-1]])
    assert (ends % chunklen == 0).all()


def test_blocks_of_other_layouts_pass_through_after_the_rows_held_back():
    words = ArrowBuffers(3, None, np.array([0, 1, 3, 6]), np.frombuffer(b"abbccc", np.uint8))
    coded = ArrowBuffers(2, None, None, np.array([0, 1]), dictionary=words)
    out = list(whole_chunks(iter([_fixed(0, 5), coded, _fixed(5, 9)]), 4))
    assert [b.length for b in out] == [4, 1, 2, 4]
    assert out[2] is coded


pa = pytest.importorskip("pyarrow")


def test_a_vlen_carray_of_many_batches_builds_no_chunk_from_items(tmp_path, monkeypatch):
    from bcolz_store.kinds.vlen.engine import VlenEngine
    words = [None if i % 13 == 5 else "w%d" % (i * 7919 % 1000) * (i % 4) for i in range(2000)]
    one = bcolz_store.carray(pa.array(words), rootdir=str(tmp_path / "one"), mode="w",
                             chunklen=300)
    one.flush()

    def refused(self, items):
        raise AssertionError("a full chunk was encoded from items")

    monkeypatch.setattr(VlenEngine, "encode", refused)
    batches = pa.chunked_array([pa.array(words[a:b]) for a, b in
                                [(0, 7), (7, 650), (650, 651), (651, 1999), (1999, 2000)]])
    many = bcolz_store.carray(batches, rootdir=str(tmp_path / "many"), mode="w", chunklen=300)
    many.flush()
    assert many[:].tolist() == words
    data = os.path.join(str(tmp_path), "{}", "data")
    names = sorted(os.listdir(data.format("one")))
    assert names == sorted(os.listdir(data.format("many")))
    assert all(filecmp.cmp(os.path.join(data.format("one"), n),
                           os.path.join(data.format("many"), n), shallow=False) for n in names)
