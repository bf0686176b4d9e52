"""The engine of a nullable carray: values in a :class:`~.engine.ChunkEngine`,
validity (True: present) in another, over ``store.sub('valid')``.

Reads return ``numpy.ma.MaskedArray`` of the values' dtype (mask True: null)
and :data:`numpy.ma.masked` for one null item; writes take masked arrays
(each masked item written as the fill of its dtype, its validity False) or
plain arrays (every item present).  Both engines stage their chunk files
through the same :class:`~bcolz_store.storage.dataset.DatasetStore`, so one
commit holds values and validity together.

A validity shorter than the values (the real bcolz appended values) says
nothing about the items past its end: they are present; a longer one (the
real bcolz trimmed the values) is cut.  Reads apply this rule; every write
first brings the validity to the values' length.

The values are the primary part (:mod:`bcolz_store.chunks.parts`): the
carray's length, chunks, sizes and statistics are theirs; the validity is a
row part, trimmed, staged and cached with them.

Layout: kinds/nullable/meta.py.
"""

from __future__ import annotations

import numpy as np

from .meta import fill_value
from ...chunks.parts import Part, PartsEngine

__all__ = ["NullableEngine", "row_mask", "split_masked"]


def row_mask(mask: np.ndarray, n: int) -> np.ndarray:
    """One bool per item of a masked array's ``mask`` (any part masked: True)."""
    if mask.ndim == 1 and not mask.dtype.names:
        return mask
    if n == 0:
        return np.zeros(0, dtype=bool)
    return np.ascontiguousarray(mask).view(np.uint8).reshape(n, -1).any(axis=1)


def split_masked(items, atom: np.dtype):
    """``(values, valid)`` of ``items``: a masked array's data with each null
    item's slot set to the fill of ``atom``, and a bool array (True: present)
    of one entry per item (an item of a multidimensional or structured atom
    is null when any part of it is masked); a plain array: all present, but
    for None items of an object array (a struct's field values): null."""
    if not isinstance(items, np.ma.MaskedArray):
        values = np.asarray(items)
        valid = np.ones(len(values), dtype=bool)
        if values.dtype == object and values.ndim == 1 and atom.kind != "O":
            valid = np.fromiter((v is not None for v in values.tolist()), dtype=bool,
                                count=len(values))
            if not valid.all():
                values = values.copy()
                values[~valid] = fill_value(atom)[()]
        return values, valid
    values = np.array(items.data, copy=True)
    mask = row_mask(np.ma.getmaskarray(items), len(values))
    if mask.any():
        values[mask] = fill_value(atom)
    return values, ~mask


class NullableEngine(PartsEngine):
    """The values and validity of one nullable carray.

    Parameters
    ----------
    values : ChunkEngine
        The engine of the values (a plain bcolz carray at the root).
    validity : ChunkEngine
        The engine of the validity (bool, True: present), same chunklen.
    """

    nullable = True         # (a wrapper, as a decimal carray's engine, asks)
    values = Part()
    validity = Part()

    def __init__(self, values, validity):
        self._init_parts({"values": values, "validity": validity}, rows=("validity",))
        self.atom = values.atom

    # ------------------------------------------------------------ reading

    def valid_range(self, start: int, stop: int) -> np.ndarray:
        """Validity of items ``start:stop`` (True past the validity's end)."""
        out = np.ones(stop - start, dtype=bool)
        end = min(stop, self.validity.length)
        if end > start:
            out[:end - start] = self.validity.read_range(start, end)
        return out

    def valid_at(self, idx: np.ndarray) -> np.ndarray:
        """Validity of the items at positions ``idx``."""
        out = np.ones(idx.shape, dtype=bool)
        inside = idx < self.validity.length
        if inside.any():
            out[inside] = self.validity.gather(idx[inside])
        return out

    def _masked(self, values: np.ndarray, valid: np.ndarray) -> np.ma.MaskedArray:
        mask = ~valid       # one per item (of any index shape); an item's atom shares it
        if values.ndim > mask.ndim:
            mask = np.broadcast_to(mask.reshape(mask.shape + (1,) * (values.ndim - mask.ndim)),
                                   values.shape)
        return np.ma.MaskedArray(values, mask=np.array(mask, copy=True))

    def read_range(self, start: int, stop: int) -> np.ma.MaskedArray:
        return self._masked(self.values.read_range(start, stop), self.valid_range(start, stop))

    def gather(self, idx: np.ndarray) -> np.ma.MaskedArray:
        idx = np.asarray(idx, dtype=np.int64)
        return self._masked(self.values.gather(idx), self.valid_at(idx.ravel()).reshape(
            idx.shape))

    def chunk_array(self, nchunk: int) -> np.ma.MaskedArray:
        values = self.values.chunk_array(nchunk)
        start = nchunk * self.values.chunklen
        return self._masked(values, self.valid_range(start, start + len(values)))

    def point(self, nchunk: int, pos: int):
        """One item, or :data:`numpy.ma.masked` when it is null."""
        i = nchunk * self.values.chunklen + pos
        if i < self.validity.length and not self.validity.read_range(i, i + 1)[0]:
            return np.ma.masked
        return self.values.point(nchunk, pos)

    def isnull(self, start: int, stop: int) -> np.ndarray:
        """Whether each item ``start:stop`` is null (a bool array)."""
        return ~self.valid_range(start, stop)

    def reduce_chunks(self, fn):
        """``fn`` of each chunk's values with every null item as zero (sums skip them)."""
        n, cl = self.values.length, self.values.chunklen
        for start in range(0, n, cl):
            block = self.read_range(start, min(start + cl, n))
            zero = np.zeros((), dtype=block.dtype)
            yield fn(block.filled(zero[()]) if block.dtype.names is None else block.data)

    # ------------------------------------------------------------ writing

    def _sync(self) -> None:
        """Bring the validity to the values' length (rows the real bcolz
        appended are present; a validity longer than the values is cut)."""
        n, have = self.values.length, self.validity.length
        if have < n:
            self.validity.append(np.ones(n - have, dtype=bool))
        elif have > n:
            self.validity.trim_to(n)

    def prepare(self, items):
        return split_masked(items, self.values.atom)

    def _split(self, items):
        if isinstance(items, tuple):
            return items
        return split_masked(items, self.values.atom)

    def append(self, items) -> None:
        values, valid = self._split(items)
        if not len(values):
            return
        self._sync()
        start = self.values.length
        values = np.ascontiguousarray(values, dtype=self.values.atom.base).reshape(
            (len(values),) + self.values.atom.shape)
        self.values.append(values)
        self.validity.append(valid)
        source = getattr(getattr(self.values, "stats", None), "source", None)
        if source is not None and len(values) >= self.values.chunklen:
            source.pushed_rows(start, values, valid)   # the chunks just written

    def set_slice(self, start: int, stop: int, step: int, items) -> None:
        values, valid = self._split(items)
        self._sync()
        self.values.set_slice(start, stop, step, values)
        self.validity.set_slice(start, stop, step, valid)

    def set_positions(self, idx: np.ndarray, items) -> None:
        values, valid = self._split(items)
        self._sync()
        self.values.set_positions(idx, values)
        self.validity.set_positions(idx, valid)
