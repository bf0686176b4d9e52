"""carrays as dask arrays and ctables as dask dataframes.

dask is an optional extra (``pip install 'bcolz_store[dask]'``: dask's array
and dataframe parts and ``distributed``); it is imported only when these
functions run.

Each block of a dask array, and each partition of a dask dataframe, is read
from whole chunks of the carray (its boundaries are chunk boundaries), by a
task that holds the carray or ctable.  A stored one travels to another
process or machine as its rootdir and opens there in mode ``'r'`` (see
:mod:`bcolz_store.handles`), so dask's threaded, process and distributed
schedulers all read the committed state; readers in threads share the
object (several threads may read one carray at once).

Writing a dask array or dataframe as a carray or ctable in parallel is
:mod:`bcolz_store.interop.dask_write`.
"""

from __future__ import annotations

import importlib
import math
import numbers
from contextlib import nullcontext

import numpy as np

from ..errors import MissingDependencyError
from .pandas_columns import frame_data

__all__ = ["DASK_EXTRA", "carray_to_dask", "ctable_to_dask", "import_dask", "is_dask_array",
           "is_dask_dataframe"]

DASK_EXTRA = "bcolz_store[dask]"
# Bytes of a dask array block and of a dataframe partition, by default.
BLOCK_BYTES = 32 << 20
PARTITION_BYTES = 64 << 20


def import_dask(module: str = "dask"):
    """Import ``module`` (``dask``, ``dask.array``, ``dask.dataframe``...).

    Raises
    ------
    MissingDependencyError
        When it is not installed (an ImportError), naming the extra to install.
    """
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingDependencyError(f"{module} is needed here; install it, e.g. "
                                     f"`pip install '{DASK_EXTRA}'`") from err


def is_dask_array(obj) -> bool:
    """Whether ``obj`` is a dask array (checked without importing dask)."""
    return type(obj).__module__.startswith("dask.array") and hasattr(obj, "chunks")


def is_dask_dataframe(obj) -> bool:
    """Whether ``obj`` is a dask DataFrame (checked without importing dask)."""
    module = type(obj).__module__
    return (module.startswith("dask.dataframe") or module.startswith("dask_expr")) and \
        hasattr(obj, "columns") and hasattr(obj, "npartitions")


def _commit_pending(obj) -> None:
    """Flush a stored carray or ctable open for writing: other processes read
    its committed state, which must hold every row the dask collection has."""
    if getattr(obj, "dataset", None) is not None and obj.mode != "r":
        obj.flush()


def _rows_per_block(blen, chunklen: int, rowbytes: int, target: int, what: str) -> int:
    """``blen``, or whole chunks making about ``target`` bytes.

    Raises
    ------
    ValueError
        When ``blen`` is not a positive multiple of ``chunklen``.
    """
    if blen is None:
        return chunklen * max(target // max(chunklen * rowbytes, 1), 1)
    if isinstance(blen, bool) or not isinstance(blen, numbers.Integral) or blen < 1 \
            or blen % chunklen:
        raise ValueError(f"blen must be a positive multiple of the chunklen {chunklen} "
                         f"(rows of whole chunks per {what}), not {blen!r}")
    return int(blen)


def carray_to_dask(c, blen=None):
    """A dask array reading the carray ``c``, block by block.

    Parameters
    ----------
    c : carray
    blen : int, optional
        Rows per block, a multiple of ``c.chunklen`` (default: whole chunks
        making about 32 MiB).  Blocks along the other dimensions are whole.

    Returns
    -------
    dask.array.Array
        Of ``c.shape`` and ``c.dtype``; its blocks start at chunk boundaries.
        A stored carray open for writing is flushed first (tasks in other
        processes read the committed state).

    Raises
    ------
    ImportError
        When dask is not installed.
    ValueError
        A ``blen`` that is not a positive multiple of the chunklen.
    """
    da = import_dask("dask.array")
    from dask.base import tokenize
    _commit_pending(c)
    rowbytes = c.dtype.itemsize * math.prod(c.shape[1:])
    blen = _rows_per_block(blen, c.chunklen, rowbytes, BLOCK_BYTES, "block")
    length = len(c)
    rows = tuple(min(blen, length - start) for start in range(0, length, blen)) or (0,)
    chunks = (rows,) + tuple((n,) for n in c.shape[1:])
    name = "bcolz-carray-" + tokenize(c, blen)
    return da.from_array(c, chunks=chunks, name=name, lock=False, asarray=True, fancy=False,
                         meta=np.empty((0,) * c.ndim, dtype=c.dtype))


def _frame_part(bounds, table, names, select=None):
    """Rows ``bounds = (start, stop)`` of ``table`` (those ``select(start,
    stop)`` gives, with ``select``) as a pandas DataFrame, its columns of the
    dtypes ``todataframe`` gives (vlen and categorical columns as pandas had
    them)."""
    import pandas as pd
    start, stop = bounds
    rows = slice(start, stop) if select is None else select(start, stop)
    data = frame_data(table, names, pd, rows)
    frame = pd.DataFrame(data, columns=names)       # (restored Series count from 0)
    frame.index = pd.RangeIndex(start, stop) if select is None else pd.Index(rows)
    return frame


def ctable_to_dask(table, blen=None, columns=None, select=None):
    """A dask DataFrame reading the ctable ``table``, partition by partition.

    Parameters
    ----------
    table : ctable
    blen : int, optional
        Rows per partition, a multiple of the largest chunklen of the columns
        (default: whole chunks of that column making about 64 MiB of rows).
    columns : sequence of str, optional
        The columns to take (default all).
    select : RowFilter, optional
        Each partition holds only the rows ``select(start, stop)`` gives
        (sorted positions); partitions for which ``select.may_match(start,
        stop)`` is false are left out
        (:class:`bcolz_store.ctable_select.RowFilter`).

    Returns
    -------
    dask.dataframe.DataFrame
        Indexed by row number (its divisions are the partitions' first rows).
        A stored table open for writing is flushed first.

    Raises
    ------
    ImportError
        When dask or pandas is not installed.
    KeyError
        An unknown column.
    ValueError
        A column whose items are arrays (a dataframe column holds scalars),
        or a bad ``blen``.
    """
    dd = import_dask("dask.dataframe")
    _commit_pending(table)
    names = list(table.names if columns is None else columns)
    for name in names:
        if name not in table.cols:
            raise KeyError(f"{name!r} is not a column of the ctable {table.names}")
        if table.cols[name].ndim > 1:
            raise ValueError(f"column {name!r} holds items of shape "
                             f"{table.cols[name].shape[1:]}; a dataframe column holds scalars")
    chunklen = max((table.cols[n].chunklen for n in names), default=1)
    rowbytes = sum(table.cols[n].dtype.itemsize for n in names)
    blen = _rows_per_block(blen, chunklen, rowbytes, PARTITION_BYTES, "partition")
    length = len(table)
    bounds = [(start, min(start + blen, length)) for start in range(0, length, blen)]
    if select is not None:
        bounds = [b for b in bounds if select.may_match(*b)]
    bounds = bounds or [(0, 0)]
    meta = _frame_part((0, 0), table, names)
    last = bounds[-1][1] - 1
    divisions = tuple(b[0] for b in bounds) + (last,) if last >= 0 else (None, None)
    # dask turns object columns into strings by default: decimals, lists, structs and
    # bytes would arrive as their repr
    import dask
    keep = _items_dask_would_stringify(table, names, meta)
    with dask.config.set({"dataframe.convert-string": False}) if keep else nullcontext():
        return dd.from_map(_frame_part, bounds, table=table, names=names, select=select,
                           meta=meta, divisions=divisions, label="bcolz-ctable",
                           enforce_metadata=False)


def _items_dask_would_stringify(table, names, meta) -> bool:
    """Whether a column of ``names`` is a dataframe column of objects that are
    not text (decimals, lists, maps, structs, bytes)."""
    for name in names:
        col = table.cols[name]
        text = col.dtype.kind == "U" or getattr(getattr(col, "vlen", None), "kind", None) == "str"
        if meta[name].dtype == object and not text:
            return True
    return False
