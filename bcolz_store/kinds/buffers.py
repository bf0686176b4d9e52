"""A column's rows as Arrow lays them out, in numpy arrays.

:class:`ArrowBuffers` is the native form the column kinds (:mod:`bcolz_store.kinds`)
encode chunks from and decode chunks to: Arrow's columnar layout
(https://arrow.apache.org/docs/format/Columnar.html) — a validity, offsets
for items of any length, a values buffer, child columns for nested types, a
dictionary for dictionary-encoded ones — each buffer a numpy array, so that
the core needs nothing but numpy, and pyarrow wraps the buffers without a
copy when it is installed (:mod:`bcolz_store.kinds.arrow`).

Two departures from Arrow's bytes, both for numpy's sake: the validity is a
``bool`` array of one item a row (True: present), not a bitmap (Arrow's
bitmap is ``numpy.packbits(validity, bitorder="little")``), and buffers are
never shared with an offset: ``offsets[0]`` may be other than 0 (a slice of a
column of items of any length), everything else starts at row 0.
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["ArrowBuffers", "concat_buffers", "whole_chunks"]


@dataclasses.dataclass(frozen=True)
class ArrowBuffers:
    """``length`` rows of one column in Arrow's layout.

    Attributes
    ----------
    length : int
        The number of rows.
    validity : numpy.ndarray of bool, shape (length,), or None
        True where a row is present; None when every row is.
    offsets : numpy.ndarray of int32 or int64, shape (length + 1,), or None
        For items of any length (strings, bytes, lists): row ``i`` is
        ``values[offsets[i]:offsets[i + 1]]`` (or the children's rows in
        that range); None for fixed-size items.
    values : numpy.ndarray or None
        The data: ``uint8`` bytes of strings and binary items, the items of
        a fixed-size type (``length`` of them; for a dictionary type its
        indices), None for a type whose data is all in its children.
    children : tuple of ArrowBuffers
        The child columns: the elements of a list, the fields of a struct
        (each ``length`` rows), the keys and values of a map.
    dictionary : ArrowBuffers or None
        The values a dictionary type's indices point to.
    type : pyarrow.DataType or None
        The Arrow type the buffers were taken from, when known.
    """

    length: int
    validity: np.ndarray | None = None
    offsets: np.ndarray | None = None
    values: np.ndarray | None = None
    children: tuple = ()
    dictionary: "ArrowBuffers | None" = None
    type: object = None

    def __len__(self) -> int:
        return self.length

    @property
    def null_count(self) -> int:
        """int: the rows that are missing."""
        if self.validity is None:
            return 0
        return int(self.length - np.count_nonzero(self.validity))

    def missing(self) -> np.ndarray:
        """numpy.ndarray of bool, shape (length,): True where a row is missing."""
        if self.validity is None:
            return np.zeros(self.length, dtype=bool)
        return ~self.validity

    def bitmap(self) -> np.ndarray | None:
        """Arrow's validity bitmap (``uint8``, least significant bit first), or
        None when every row is present."""
        if self.validity is None or self.null_count == 0:
            return None
        return np.packbits(self.validity, bitorder="little")

    def slice(self, start: int, stop: int) -> "ArrowBuffers":
        """Rows ``[start, stop)`` (``0 <= start <= stop <= length``), sharing memory
        where the layout allows (fixed items, offsets, validity); the children
        of a list keep all their rows (its offsets select them)."""
        start, stop = max(0, int(start)), min(self.length, int(stop))
        stop = max(start, stop)
        validity = None if self.validity is None else self.validity[start:stop]
        if self.offsets is not None:
            return dataclasses.replace(self, length=stop - start, validity=validity,
                                       offsets=self.offsets[start:stop + 1])
        values = None if self.values is None else self.values[start:stop]
        children = tuple(child.slice(start, stop) for child in self.children)
        return dataclasses.replace(self, length=stop - start, validity=validity,
                                   values=values, children=children)

    def compact_offsets(self) -> "ArrowBuffers":
        """The same rows with ``offsets[0] == 0`` and ``values`` (or, for a list,
        its one child) cut to what the offsets reach."""
        if self.offsets is None:
            return self
        lo, hi = int(self.offsets[0]), int(self.offsets[-1])
        offsets = self.offsets - self.offsets.dtype.type(lo) if lo else self.offsets
        if self.values is not None:
            return dataclasses.replace(self, offsets=offsets, values=self.values[lo:hi])
        children = tuple(child.slice(lo, hi) for child in self.children)
        return dataclasses.replace(self, offsets=offsets, children=children)


def concat_buffers(parts: list) -> ArrowBuffers:
    """The rows of ``parts`` (ArrowBuffers of one type, in order) as one.

    Raises
    ------
    ValueError
        An empty list, or parts of different layouts.
    """
    if not parts:
        raise ValueError("concat_buffers needs at least one part")
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    length = sum(p.length for p in parts)
    if any(p.validity is not None for p in parts):
        validity = np.concatenate([p.validity if p.validity is not None
                                   else np.ones(p.length, dtype=bool) for p in parts])
    else:
        validity = None
    if first.offsets is not None:
        parts = [p.compact_offsets() for p in parts]
        ends = np.cumsum([int(p.offsets[-1]) for p in parts])
        dtype = np.int64 if ends[-1] >= 2 ** 31 else parts[0].offsets.dtype
        offsets = np.empty(length + 1, dtype=dtype)
        offsets[0], pos, base = 0, 1, 0
        for p, end in zip(parts, ends):
            offsets[pos:pos + p.length] = p.offsets[1:] + base
            pos += p.length
            base = int(end)
        if first.values is not None:
            return ArrowBuffers(length, validity, offsets,
                                np.concatenate([p.values for p in parts]))
        children = tuple(concat_buffers([p.children[i] for p in parts])
                         for i in range(len(first.children)))
        return ArrowBuffers(length, validity, offsets, None, children)
    values = None if first.values is None else np.concatenate([p.values for p in parts])
    children = tuple(concat_buffers([p.children[i] for p in parts])
                     for i in range(len(first.children)))
    return ArrowBuffers(length, validity, None, values, children, first.dictionary)


def _flat(block) -> bool:
    """Whether ``block`` is Arrow rows of one buffer of values or bytes (no
    children, no dictionary): rows any two of which concatenate cheaply."""
    return isinstance(block, ArrowBuffers) and not block.children and block.dictionary is None


def whole_chunks(blocks, chunklen: int, filled: int = 0):
    """Yield ``blocks`` (Arrow rows, or anything else) cut again so that each
    flat block of Arrow rows (values or offsets and bytes, no children or
    dictionary) ends on a chunk boundary: a block's last rows, fewer than a
    chunk, go out joined with the first rows of the next block (a copy of at
    most one chunk).  A carray's engine then builds every full chunk from
    rows, never from a leftover of items filled up (the slow path of a vlen
    engine).  ``filled`` is how many rows of the first chunk the carray's
    leftover already holds.  Other blocks pass through as they are, after
    any rows held back.
    """
    tail = None                     # rows held back: the start of a chunk
    need = -filled % chunklen       # rows that end the current chunk (0: on a boundary)
    for block in blocks:
        if not _flat(block) or (tail is not None and (tail.offsets is None) !=
                                (block.offsets is None)):
            if tail is not None:
                yield tail
                tail = None
            yield block
            need = None             # (where chunks end is no longer known here)
            continue
        if need is None:
            yield block
            continue
        if need:                    # the rows that end the current chunk, joined
            take = min(need, block.length)
            head = block.slice(0, take)
            tail = head if tail is None else concat_buffers([tail, head])
            need -= take
            block = block.slice(take, block.length)
            if need:
                continue
            yield tail
            tail = None
        cut = block.length - block.length % chunklen
        if cut:
            yield block.slice(0, cut)
        if cut < block.length:
            tail = block.slice(cut, block.length)
            need = chunklen - tail.length
    if tail is not None:
        yield tail
