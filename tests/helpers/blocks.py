"""Chunk reads decoded block by block, for the state machines and the property tests.

Their chunks are small (chunklen 1 to 48), which the chunk engine would
otherwise decode whole for a point read (``BLOCK_READ_MIN_BYTES``): with
:func:`read_by_blocks` every point read, small slice and sparse gather of a
chunk that is not cached decodes only the Blosc blocks and streams it needs,
so the tests check that path against their model.  Whole-chunk decoding stays
covered by full reads, loops over items, masks and the blosclz codec, which
has no block decoder.
"""

import pytest

from bcolz_store.chunks import engine


@pytest.fixture(autouse=True)
def read_by_blocks(monkeypatch):
    monkeypatch.setattr(engine, "BLOCK_READ_MIN_BYTES", 0)
