"""Rows of bytes of any length, in numpy: each a run of bytes, the runs given
by their starts (or their lengths) in one ``uint8`` buffer.

The list kind's codec (:mod:`.codec`) builds and parses the bytes of many
list items at once with these, with no Python work per item.
"""

from __future__ import annotations

import numpy as np

__all__ = ["interleave", "range_indices", "take_ranges", "u32_rows"]

_U8 = np.dtype(np.uint8)


def range_indices(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """``int64`` indices ``starts[i] .. starts[i] + lens[i] - 1`` for each ``i``, end to end."""
    lens = np.asarray(lens, dtype=np.int64)
    total = int(lens.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    begins = np.cumsum(lens) - lens
    return np.arange(total, dtype=np.int64) + np.repeat(np.asarray(starts, dtype=np.int64)
                                                        - begins, lens)


def _in_runs(size: int, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """``bool`` of ``size``: True in the runs (disjoint, in increasing order)."""
    ends = starts + lens
    gaps = starts - np.concatenate(([0], ends[:-1]))
    counts = np.empty(2 * len(starts) + 1, dtype=np.int64)
    counts[0:-1:2], counts[1:-1:2], counts[-1] = gaps, lens, size - (ends[-1] if len(ends) else 0)
    flags = np.zeros(len(counts), dtype=bool)
    flags[1::2] = True
    return np.repeat(flags, counts)


def _contiguous(starts: np.ndarray, lens: np.ndarray) -> bool:
    return len(starts) < 2 or bool(np.array_equal(starts[1:], starts[:-1] + lens[:-1]))


def take_ranges(data: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """The runs ``data[starts[i]:starts[i] + lens[i]]`` (disjoint, in increasing
    order), end to end."""
    starts = np.asarray(starts, dtype=np.int64)
    lens = np.asarray(lens, dtype=np.int64)
    if len(starts) == 0:
        return data[:0]
    if _contiguous(starts, lens):
        first = int(starts[0])
        return data[first:first + int(lens.sum())]
    return data[_in_runs(len(data), starts, lens)]


def u32_rows(values: np.ndarray) -> tuple:
    """One ``uint32`` (little-endian) a row: ``(lens, bytes)``."""
    values = np.asarray(values)
    return np.full(len(values), 4, dtype=np.int64), values.astype("<u4").view(_U8)


def interleave(parts: list) -> tuple:
    """``(lens, bytes)`` of rows each made of the rows of ``parts`` (each a
    ``(lens, bytes)`` of as many rows) in order."""
    lens = np.zeros(len(parts[0][0]), dtype=np.int64)
    for plens, _ in parts:
        lens = lens + plens
    total = int(lens.sum())
    out = np.empty(total, dtype=_U8)
    pos = np.cumsum(lens) - lens
    for plens, pdata in parts:
        if len(pdata):
            out[_in_runs(total, pos, plens)] = pdata
        pos = pos + plens
    return lens, out
