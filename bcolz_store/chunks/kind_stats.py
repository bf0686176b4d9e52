"""Chunk statistics of nullable and decimal carrays (``meta/stats`` version 2;
see :mod:`bcolz_store.format.stats_meta`).

A nullable carray keeps its values in one engine and its validity in
another: the fill stored under a null item is no item, so a chunk's
statistics are those of its present items (its nulls counted as missing).
The values engine cannot tell them when it writes a chunk (it does not see
the validity), so it records nothing (:meth:`KindStats.of` is None for a
nullable carray) and :class:`~.nullable_engine.NullableEngine` records the
statistics of the full chunks an append wrote from the items and validity
it holds (:meth:`KindStats.pushed_rows`).  A :class:`KindStats` is the
``source`` of the carray's :class:`~.stats.ChunkStats`, which asks it for
every chunk's statistics; any other chunk is read with its
validity when the carray stages ``meta/stats``.

A decimal carray stores 16-byte unscaled integers: its statistics are the
least and greatest of them as exact Python ints (two int64 limbs reduced by
numpy), given to the planner as ``decimal.Decimal`` at the column's scale.
"""

from __future__ import annotations

import decimal as _dec

import numpy as np

from ..format.stats_meta import decimal_scale
from .stats import attach_stats, stored_stats

__all__ = ["KindStats", "attach_kind_stats", "decimal_minmax", "kind_stats_kind"]

_CONTEXT = _dec.Context(prec=200)   # exact for any 128-bit integer at any scale kept


def kind_stats_kind(base, nullable: bool, scale=None):
    """The statistics kind of a nullable carray of statistics kind ``base`` (a
    fixed atom's), or of a decimal carray of 16-byte integers at ``scale``
    (``base`` None); None when it keeps none."""
    if scale is not None:
        base = f"decimal:{int(scale)}"
    if base is None:
        return None
    return f"nullable:{base}" if nullable else base


def decimal_minmax(raw: np.ndarray) -> tuple:
    """``(min, max)`` as Python ints of 16-byte little-endian two's complement
    integers ``raw`` (at least one)."""
    limbs = np.ascontiguousarray(raw).view("<u8").reshape(-1, 2)
    low, high = limbs[:, 0], limbs[:, 1].view("<i8")
    out = []
    for pick in (np.min, np.max):
        top = pick(high)
        bottom = pick(low[high == top])
        out.append((int(top) << 64) | int(bottom))
    return tuple(out)


class KindStats:
    """How the :class:`~.stats.ChunkStats` of a nullable or decimal carray
    computes its statistics (its ``source``).

    Parameters
    ----------
    kind : str
        ``nullable:<dtype>``, ``decimal:<scale>`` or ``nullable:decimal:<scale>``.
    chunklen : int
        Items per chunk.
    values : ChunkEngine
        The engine of the stored items (the fill under a null included).
    nullable : NullableEngine or None
        The engine whose validity tells the null items.
    """

    def __init__(self, kind: str, chunklen: int, values, nullable=None):
        self.kind, self.chunklen = kind, chunklen
        self.stats = None           # the ChunkStats it serves (attach_stats sets it)
        self.base = kind[len("nullable:"):] if kind.startswith("nullable:") else kind
        self.scale = decimal_scale(kind)
        self.values, self.nullable = values, nullable

    def of(self, values: np.ndarray):
        """The statistics of a chunk the values engine writes: unknown for a
        nullable carray (its validity is not known there)."""
        return None if self.nullable is not None else self.of_items(values, None)

    def of_items(self, values: np.ndarray, valid) -> tuple:
        """The statistics of the stored items ``values`` of which ``valid`` (a
        bool array, or None: all) are present."""
        nulls = 0
        if valid is not None:
            valid = np.asarray(valid, dtype=bool)
            nulls = len(valid) - int(np.count_nonzero(valid))
            if nulls:
                values = values[valid]
        if self.scale is not None:
            if not len(values):
                return None, None, nulls
            lo, hi = decimal_minmax(values)
            return lo, hi, nulls
        lo, hi, missing = stored_stats(values, self.base, self.stats.quantize)
        return lo, hi, missing + nulls

    def _valid(self, start: int, stop: int):
        return None if self.nullable is None else self.nullable.valid_range(start, stop)

    def read_entries(self, nchunks: list):
        """Yield ``(n, statistics)`` of the full chunks ``nchunks``, read."""
        cl = self.chunklen
        for n in nchunks:
            raw = self.values.chunk_array(n)
            yield n, self.of_items(raw, self._valid(n * cl, n * cl + len(raw)))

    def leftover_entry(self, nleft: int):
        """The statistics of the leftover (``nleft`` items)."""
        start = len(self.values.chunks) * self.chunklen
        return self.of_items(self.values.leftover[:nleft], self._valid(start, start + nleft))

    def pushed_rows(self, start: int, values: np.ndarray, valid: np.ndarray) -> None:
        """Items ``values`` (validity ``valid``) were appended from row
        ``start``: record the statistics of the full chunks made of them alone."""
        cl = self.chunklen
        for n in range(-(-start // cl), len(self.values.chunks)):
            lo = n * cl - start
            if lo + cl > len(values):
                break
            self.stats.record(n, self.of_items(values[lo:lo + cl], valid[lo:lo + cl]), pushed=True)

    def shown(self, got):
        """The :class:`~.stats.ColumnStats` ``got`` as the planner compares them:
        a decimal carray's as ``decimal.Decimal`` at its scale."""
        if self.scale is None:
            return got
        exp = -self.scale

        def scaled(arr):
            out = np.empty(len(arr), dtype=object)
            out[:] = [_dec.Decimal(int(v)).scaleb(exp, _CONTEXT) for v in arr.tolist()]
            return out
        return got._replace(mins=scaled(got.mins), maxs=scaled(got.maxs))


def attach_kind_stats(values, nullable, kind, chunklen: int, store, length: int,
                      new: bool) -> None:
    """Give the values engine ``values`` a :class:`KindStats` of ``kind``
    (loaded as :func:`~.stats.attach_stats` does); ``nullable``: the
    NullableEngine over it, or None."""
    if kind is None or store is None:
        return
    attach_stats(values, kind, chunklen, store, length, new,
                 KindStats(kind, chunklen, values, nullable))
