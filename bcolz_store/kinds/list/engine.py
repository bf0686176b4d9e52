"""The engine of a list (or map) carray: its items encoded as bytes
(kinds/list/meta_items.py) in a :class:`~.vlen_engine.VlenEngine` of bytes items.

Writes encode every item first (a refusal changes nothing), reads decode the
items they return; a missing list is the vlen engine's missing item.

Its one part (:mod:`bcolz_store.chunks.parts`) is the vlen engine of the
encoded items, whose length, chunks, sizes, cache and statistics are the
carray's.

Layout: kinds/list/meta.py.
"""

from __future__ import annotations

import numpy as np

from .meta_items import decode_item, decode_items, encode_items
from ...chunks.parts import Part, PartsEngine
from ...limits import check_alloc

__all__ = ["ListEngine", "PreparedLists"]


class PreparedLists:
    """Items already encoded by :meth:`ListEngine.prepare`."""

    __slots__ = ("raw",)

    def __init__(self, raw: np.ndarray):
        self.raw = raw

    def __len__(self) -> int:
        return len(self.raw)


class ListEngine(PartsEngine):
    """The encoded items of one list carray.

    Parameters
    ----------
    inner : VlenEngine
        The engine of the encoded items (bytes, missing items allowed).
    listtype : ListType or MapType
        The type of the items (kinds/list/meta.py).
    """

    inner = Part()

    def __init__(self, inner, listtype):
        self._init_parts({"inner": inner})
        self.listtype = listtype
        self.atom = np.dtype(object)

    def _where(self) -> str:
        return self.inner.store.root if self.inner.store is not None else "list carray"

    def decode(self, raw: np.ndarray) -> np.ndarray:
        """The items the encoded ``raw`` (an object array) stand for.

        Raises
        ------
        FormatError
            A damaged item.
        LimitError
            An item that would take more memory than there is.
        """
        return decode_items(raw, self.listtype, self._where(), check_alloc)

    def encode(self, items) -> np.ndarray:
        """The encoded ``items`` (kinds/list/meta_items.py).

        Raises
        ------
        TypeError, ValueError
            An item the type does not hold (see
            :func:`~bcolz_store.kinds.list.meta_items.encode_item`).
        """
        if isinstance(items, PreparedLists):
            return items.raw
        return encode_items(items, self.listtype, self._where())

    def chunk_array(self, nchunk: int) -> np.ndarray:
        return self.decode(self.inner.chunk_array(nchunk))

    def point(self, nchunk: int, pos: int):
        raw = self.inner.point(nchunk, pos)
        if raw is None:
            return None
        return decode_item(raw, self.listtype, f"{self._where()}: chunk {nchunk} item {pos}",
                           check_alloc)

    def read_range(self, start: int, stop: int) -> np.ndarray:
        return self.decode(self.inner.read_range(start, stop))

    def gather(self, idx: np.ndarray) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)       # (of any shape: the items take it)
        return self.decode(self.inner.gather(idx.reshape(-1))).reshape(idx.shape)

    def prepare(self, items) -> PreparedLists:
        """``items`` encoded as a write stores them, checked before anything changes."""
        return PreparedLists(self.encode(items))

    def append(self, items) -> None:
        self.inner.append(self.encode(items))

    def set_slice(self, start: int, stop: int, step: int, items) -> None:
        self.inner.set_slice(start, stop, step, self.encode(items))

    def set_positions(self, idx: np.ndarray, items) -> None:
        self.inner.set_positions(idx, self.encode(items))
