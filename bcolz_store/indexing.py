"""Keys and positions: the small rules that turn bcolz's index arguments into
positions, shared by carray, ctable and the queries.

Pure functions on numbers and numpy arrays: nothing here knows a container.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["PYTHON_SCALAR_KINDS", "as_nitems", "calc_chunklen", "is_int", "matching_positions",
           "position", "positions", "within_rows"]

_MB = 1024 * 1024

# Dtype kinds whose single elements come back as Python scalars, as in bcolz
# (which returned what numpy's item() gives); others stay numpy scalars.
PYTHON_SCALAR_KINDS = "biufcSU"


def calc_chunklen(expectedlen: int, atomsize: int) -> int:
    """Chunk length bcolz picks for ``expectedlen`` atoms of ``atomsize`` bytes.

    Source: bcolz's chunk-size formula: the expected size in MB is clamped to
    [1e-4, 1e4], rounded down to a power of ten (``zone``), and the chunk size
    is ``4 KiB * int(2 ** (zone + 6))`` bytes, floored to whole atoms (at least
    one atom).  Checked against every fixture's chunklen.
    """
    size_mb = (expectedlen * atomsize) / float(_MB)
    size_mb = min(max(size_mb, 1e-4), 1e4)
    zone = int(math.log10(size_mb))
    chunksize = 4 * 1024 * int(2 ** (math.log10(10 ** zone) + 6))
    chunksize = (chunksize // atomsize) * atomsize
    return max(chunksize, atomsize) // atomsize


def matching_positions(mask, limit, skip, blen):
    """Yield arrays of the positions where ``mask`` is true, ``blen`` items at a time.

    ``skip`` true positions are passed over first, then at most ``limit``
    (None: all) are yielded: bcolz's limit/skip semantics for ``where``,
    ``wheretrue`` and the ctable queries.  ``mask`` is a boolean ndarray or
    carray.
    """
    skip = max(int(skip or 0), 0)
    remaining = None if limit is None else max(int(limit), 0)
    if remaining == 0:
        return
    for start in range(0, len(mask), blen):
        hits = np.flatnonzero(np.asarray(mask[start:start + blen]))
        if skip:
            dropped = min(skip, len(hits))
            skip -= dropped
            hits = hits[dropped:]
        if remaining is not None:
            hits = hits[:remaining]
            remaining -= len(hits)
        if len(hits):
            yield hits + start
        if remaining == 0:
            return


def as_nitems(nitems) -> int:
    """A count of items for trim/resize (bcolz also accepts floats).

    Raises
    ------
    TypeError
        If ``nitems`` is not a number.
    """
    if not isinstance(nitems, (int, float, np.integer, np.floating)):
        raise TypeError("`nitems` must be an integer")
    return int(nitems)


def is_int(key) -> bool:
    """True for an integer key (bools excluded, as numpy does)."""
    return isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_))


def position(key, length: int) -> int:
    """The position an int ``key`` names in ``length`` items (negative: from
    the end).

    Raises
    ------
    IndexError
        Out of range (bcolz's "index out of range").
    """
    i = int(key)
    if i < 0:
        i += length
    if not 0 <= i < length:
        raise IndexError("index out of range")
    return i


def positions(key, length: int) -> np.ndarray:
    """Integer positions (int64, in range) for an integer index array.

    Raises
    ------
    IndexError
        For a position out of range.
    """
    idx = np.asarray(key)
    if idx.dtype.kind == "u":
        if idx.size and idx.max() >= length:
            raise IndexError(f"index {int(idx.max())} out of range for length {length}")
        return idx.astype(np.int64)
    idx = idx.astype(np.int64)
    if idx.size:
        low, high = int(idx.min()), int(idx.max())
        if low < -length or high >= length:
            bad = low if low < -length else high
            raise IndexError(f"index {bad} out of range for length {length}")
        idx = np.where(idx < 0, idx + length, idx)
    return idx


def within_rows(key: tuple, rows=None) -> tuple:
    """For a tuple key, the index into ``x[key[0]]`` that gives numpy's ``x[key]``.

    An int first key drops the row dimension; a slice, mask or index array
    keeps it, and index arrays in the rest pair with the selected rows as
    numpy's advanced indexing does.  ``rows`` is ``key[0]`` as an array (a
    carray key read already), when it is neither an int nor a slice.
    """
    first, rest = key[0], key[1:]
    if is_int(first):
        return rest
    if isinstance(first, slice):
        return (slice(None),) + rest
    rows = np.asarray(first if rows is None else rows)
    n = int(rows.sum()) if rows.dtype == np.bool_ else rows.size
    if any(isinstance(k, (list, np.ndarray)) for k in rest):
        return (np.arange(n),) + rest
    return (slice(None),) + rest


def iterates_blocks(value) -> bool:
    """Whether ``value`` is a carray or a ctable selection of this package
    (anything whose class reads its rows block by block), without importing
    the classes."""
    return hasattr(type(value), "_iterblocks")


def is_carray(value) -> bool:
    """Whether ``value`` is a carray (rows read block by block, and a
    ``chunklen``), without importing the class."""
    return iterates_blocks(value) and hasattr(value, "chunklen")
