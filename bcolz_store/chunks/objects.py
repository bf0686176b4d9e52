"""The engine of an object carray: one pickled item per chunk, bcolz's way.

bcolz stores each item of an ``object`` carray as its own chunk: the item is
pickled, the pickle compressed with Blosc (typesize 1) and written as
``data/__N.blp``; there is no leftover, and ``chunklen`` is only recorded
(FORMAT-NOTES.md).  Unpickling runs code, so the carray asks for
``allow_pickle=True`` before calling :meth:`ObjectEngine.item`.
"""

from __future__ import annotations

import pickle

import numpy as np

from ..errors import BcolzStoreError, FormatError
from .chunk import DiskChunks, MemoryChunks, chunk
from .engine_base import copy_chunks

__all__ = ["ObjectEngine"]

OBJECT = np.dtype(object)


class ObjectEngine:
    """The chunks of an object carray (one pickle each).

    Parameters
    ----------
    cparams : cparams
    chunklen : int
        Recorded in ``meta/storage``; each item is a chunk of its own.
    store : DatasetStore or None
        Where the chunk files are (None: in memory).
    length : int, default 0
        Items already stored.
    cbytes : int, default 0
        Their compressed bytes.
    """

    atom = OBJECT
    nleft = 0

    def __init__(self, cparams, chunklen: int, store=None, length: int = 0, cbytes: int = 0):
        self.cparams = cparams
        self.chunklen = chunklen
        self.store = store
        self.chunks = MemoryChunks() if store is None else DiskChunks(
            store, OBJECT, cparams, length, chunk_nbytes=None)
        self.cbytes = cbytes
        self.leftover = np.zeros(0, dtype=OBJECT)
        self.cache_budget = 0

    @property
    def length(self) -> int:
        return len(self.chunks)

    def load_for_writing(self) -> None:
        """Nothing is read lazily: each item is a chunk file of its own."""

    @property
    def nchunks(self) -> int:
        return len(self.chunks)

    @property
    def chunksize(self) -> int:
        return 0

    @property
    def nbytes(self) -> int:
        """Bytes of the pickles."""
        return sum(c.nbytes for c in self.chunks)

    def copy_for_view(self) -> "ObjectEngine":
        """An engine sharing these chunks in a sequence of its own (an item
        appended to one is not the other's)."""
        out = ObjectEngine.__new__(ObjectEngine)
        out.__dict__.update(self.__dict__)
        out.chunks = copy_chunks(self.chunks)
        return out

    def set_cache_budget(self, budget: int) -> None:
        """Nothing is cached for object chunks."""

    def drop_cache(self, nchunk=None) -> None:
        """Nothing is cached for object chunks."""

    def free_cachemem(self) -> None:
        self.chunks.free_cachemem()

    def item(self, i: int):
        """The object at position ``i`` (unpickled: only for trusted data).

        Raises
        ------
        FormatError
            When the chunk's bytes do not unpickle.
        """
        chunk_ = self.chunks[i]
        try:
            return pickle.loads(chunk_.getudata())
        except BcolzStoreError:
            raise
        except Exception as err:  # unpickling damaged bytes raises anything
            where = self.chunks.path(i) if hasattr(self.chunks, "path") else f"chunk {i}"
            raise FormatError(f"{where}: the pickled object cannot be read "
                              f"({type(err).__name__}: {err})") from err

    def read_range(self, start: int, stop: int, step: int = 1) -> np.ndarray:
        """The objects at ``range(start, stop, step)`` as an object array."""
        return self.gather(np.arange(start, stop, step, dtype=np.int64))

    def gather(self, idx: np.ndarray) -> np.ndarray:
        """The objects at positions ``idx`` (int64, in range)."""
        out = np.empty(idx.shape, dtype=OBJECT)
        flat = out.reshape(-1)
        for j, i in enumerate(idx.ravel()):
            flat[j] = self.item(int(i))
        return out

    def iter_chunks(self):
        """Yield the items in blocks of up to ``chunklen`` (object arrays)."""
        step = max(self.chunklen, 1)
        for start in range(0, self.length, step):
            yield self.read_range(start, min(start + step, self.length))

    def reduce_chunks(self, fn):
        """Yield ``fn(block)`` for the items in blocks of up to ``chunklen``,
        one block after another (unpickling holds the GIL: no threads)."""
        return map(fn, self.iter_chunks())

    def append(self, objs) -> None:
        """Append each object of ``objs``, pickled as a chunk of its own."""
        for obj in objs:
            data = pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
            new = chunk(data, OBJECT, self.cparams, _memory=self.store is None)
            self.chunks.append(new)
            self.cbytes += new.cbytes

    def trim_to(self, newlen: int) -> None:
        """Keep the first ``newlen`` objects."""
        while len(self.chunks) > newlen:
            popped = self.chunks.pop()
            self.cbytes -= popped.cbytes

    def stage_leftover(self) -> None:
        """Object carrays have no leftover."""
