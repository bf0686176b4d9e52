"""The oracle of the chunk statistics (``meta/stats``): what a carray's
statistics say, compared with statistics recomputed from the items it reads.

:func:`check_stats` is the check the operation machines, the crash test and
the hostile-input worker make: every statistic a carray (or every column of a
ctable) knows equals :func:`~bcolz_store.chunks.stats.piece_stats` of the
items of its chunk, read through the public reads; with ``complete`` (a
reader of a dataset bcolz_store committed) every chunk's, the leftover's
included, is known and the committed file was not found damaged.
"""

from __future__ import annotations

import numpy as np

from bcolz_store.carray_ops import chunk_stats
from bcolz_store.chunks.stats import piece_stats
from bcolz_store.format.stats_meta import NOT_KEPT

__all__ = ["check_stats", "index_lies", "stats_lies"]


def _columns(obj):
    names = getattr(obj, "names", None)
    if names is None:
        return [("", obj)]
    return [(name, obj.cols[name]) for name in names]


def _items(col, start: int, stop: int) -> np.ndarray:
    """The stored items of rows ``start:stop`` (a categorical's codes)."""
    if getattr(col, "category", None) is not None:
        return np.asarray(col.codes[start:stop])
    return col[start:stop]


def _stats_object(col):
    engine = col._engine
    return getattr(getattr(engine, "codes", engine), "stats", None)


def _want(items, kind: str) -> tuple:
    """``(min, max, nulls)`` the items of one chunk give: :func:`piece_stats`
    of bcolz's kinds; for a nullable or decimal column (``nullable:...``,
    ``decimal:...``), the statistics of its present items with its nulls
    counted."""
    if not kind.startswith(("nullable:", "decimal:")):
        return piece_stats(items, kind)
    if isinstance(items, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(items)
        present = np.asarray(items.data)[~mask]
    else:
        items = np.asarray(items)
        mask = np.array([v is None for v in items], dtype=bool) if items.dtype == object \
            else np.zeros(len(items), dtype=bool)
        present = items[~mask]
    nulls = int(np.count_nonzero(mask))
    base = kind[len("nullable:"):] if kind.startswith("nullable:") else kind
    if base.startswith("decimal:"):
        if not len(present):
            return None, None, nulls
        return min(present.tolist()), max(present.tolist()), nulls
    lo, hi, missing = piece_stats(present, base)
    return lo, hi, missing + nulls


def _same(got, want) -> bool:
    """One chunk's known statistics ``got`` (min, max, nulls) equal ``want``
    (:func:`piece_stats`); min and max compare as values (-0.0 == 0.0)."""
    lo, hi, nulls = want
    if int(got[2]) != nulls:
        return False
    if lo is None:
        return True
    return bool(got[0] == lo) and bool(got[1] == hi)


def stats_lies(obj, complete: bool = False) -> list:
    """What is wrong with the statistics of ``obj`` (a carray or ctable), one
    line each: a known statistic that differs from the items read, and with
    ``complete`` a chunk whose statistics are not known or a damaged file."""
    out = []
    for name, col in _columns(obj):
        stats = chunk_stats(col)
        label = f"column {name!r}" if name else "carray"
        if stats is None:
            continue
        if complete and _stats_object(col).damaged is not None:
            out.append(f"{label}: its meta/stats was not used: {_stats_object(col).damaged}")
        every = _items(col, 0, len(col)) if len(stats.starts) > 1 else None   # read once
        for n in range(len(stats.starts)):
            start, stop = int(stats.starts[n]), int(stats.stops[n])
            if not (complete or stats.known[n]):
                continue
            want = _want(_items(col, start, stop) if every is None else every[start:stop],
                         stats.kind)
            if not stats.known[n]:
                if want[2] != NOT_KEPT:     # (not kept: a text longer than MAX_STATS_TEXT)
                    out.append(f"{label}: chunk {n} (rows {start}:{stop}): statistics unknown")
                continue
            got = (stats.mins[n], stats.maxs[n], stats.nulls[n])
            if want[2] == NOT_KEPT or not _same(got, want):
                out.append(f"{label}: chunk {n} (rows {start}:{stop}) of {stats.kind}: "
                           f"statistics {got!r}, the items give {want!r}")
    return out


def check_stats(obj, complete: bool = False, what: str = "") -> None:
    """Raise AssertionError naming every lie of :func:`stats_lies`."""
    lies = stats_lies(obj, complete)
    assert not lies, f"{what}: chunk statistics:\n  " + "\n  ".join(lies[:8])


def index_lies(obj) -> list:
    """Queries through the secondary indexes of ``obj`` (a ctable) that answer
    differently from the scan, one line each: for each indexed column, the
    rows equal to a few of its values, planned (the index may be used, or
    refused as damaged) and scanned."""
    import bcolz_store
    out = []
    names = getattr(obj, "names", None)
    if names is None or getattr(obj, "rootdir", None) is None:
        return out
    for name in obj.indexes:
        col = obj.cols[name]
        if not len(col):
            continue
        values = col[[0, len(col) // 2, len(col) - 1]]
        for v in values:
            if v is None or (isinstance(v, float) and v != v):
                continue
            expr = f"{name} == v"
            planned = obj.fetchwhere(expr, user_dict={"v": v}, out_flavor="numpy")
            with bcolz_store.defaults_ctx(query_planning=False):
                scanned = obj.fetchwhere(expr, user_dict={"v": v}, out_flavor="numpy")
            if len(planned) != len(scanned) or (planned != scanned).any():
                out.append(f"column {name!r}: {expr} with v={v!r}: {len(planned)} rows "
                           f"through the index, {len(scanned)} scanned")
    return out
