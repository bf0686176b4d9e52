"""A carray or ctable seen as named columns read in blocks of whole chunks.

What :mod:`.fixed_width` and the format converters
(:mod:`bcolz_store.converters`) share:

- :func:`kind_of`, :func:`columns_of`, :func:`column_attrs`, :func:`atom_of`:
  a carray or ctable as ``[(name, column)]``;
- :func:`block_rows`, :func:`row_blocks`: rows read at a time, a whole
  number of chunks, about :data:`BLOCK_BYTES` of all columns;
- :func:`check_fixed_width`: the limit on how much a fixed-width string
  column may pad its values (one huge string among many short ones).

This module sits below the carray and ctable classes and does not import
them: a container is recognised by its public attributes (a ctable has
``names`` and ``cols``; a carray has ``chunklen``, ``dtype`` and ``shape``).
"""

from __future__ import annotations

import numpy as np

from ..errors import LimitError
from ..limits import check_alloc

__all__ = ["BLOCK_BYTES", "FIXED_WIDTH_FREE", "FIXED_WIDTH_SLACK", "as_arrow_source", "atom_of",
           "block_rows", "check_fixed_width", "column_attrs", "columns_of", "kind_of",
           "row_blocks"]

BLOCK_BYTES = 16 << 20      # uncompressed bytes per streamed block (all columns)
# A fixed-width (S/U) column is as wide as its longest value: one 10 MiB string
# among 200,000 short ones makes 8 TB of U.  A column whose padded size is over
# FIXED_WIDTH_FREE bytes and over FIXED_WIDTH_SLACK times what its values hold is
# refused (LimitError, suggesting strings='vlen').
FIXED_WIDTH_FREE = 1 << 30
FIXED_WIDTH_SLACK = 64

_TABLE_ATTRS = ("names", "cols", "attrs")
_ARRAY_ATTRS = ("chunklen", "dtype", "shape", "attrs")


def kind_of(obj) -> str:
    """Whether ``obj`` is a ctable or a carray.

    Parameters
    ----------
    obj : carray or ctable

    Returns
    -------
    {'ctable', 'carray'}
        'ctable' for an object with ``names``, ``cols`` and ``attrs``;
        'carray' for one with ``chunklen``, ``dtype``, ``shape`` and
        ``attrs`` (and no ``names``).

    Raises
    ------
    TypeError
        For anything else (a numpy array, a DataFrame...).
    """
    if all(hasattr(obj, name) for name in _TABLE_ATTRS):
        return "ctable"
    if all(hasattr(obj, name) for name in _ARRAY_ATTRS) and not hasattr(obj, "names"):
        return "carray"
    raise TypeError(f"expected a bcolz_store carray or ctable, not {type(obj).__name__}")


def columns_of(obj) -> list:
    """A ctable's columns, or a carray as one column.

    Parameters
    ----------
    obj : carray or ctable

    Returns
    -------
    list of (str, carray)
        ``[(name, column)]`` in column order; a carray is ``[('data', obj)]``.

    Raises
    ------
    TypeError
        When ``obj`` is neither a carray nor a ctable.
    """
    if kind_of(obj) == "carray":
        return [("data", obj)]
    return [(name, obj.cols[name]) for name in obj.names]


def column_attrs(obj) -> dict:
    """The attrs of a ctable's columns that have any.

    Parameters
    ----------
    obj : carray or ctable

    Returns
    -------
    dict
        ``{name: {key: value}}`` for the columns with attrs ({} for a carray).

    Raises
    ------
    TypeError
        When ``obj`` is neither a carray nor a ctable.
    """
    if kind_of(obj) == "carray":
        return {}
    return {name: col.attrs.getall() for name, col in columns_of(obj) if len(col.attrs)}


def atom_of(col) -> np.dtype:
    """A column's atom: its dtype, with the shape of one row as a subarray shape.

    Parameters
    ----------
    col : carray

    Returns
    -------
    numpy.dtype
    """
    return np.dtype((col.dtype, tuple(col.shape[1:]))) if len(col.shape) > 1 else col.dtype


def block_rows(obj, target_bytes: int = BLOCK_BYTES) -> int:
    """Rows per streamed block.

    Parameters
    ----------
    obj : carray or ctable
    target_bytes : int, default :data:`BLOCK_BYTES`
        About how many uncompressed bytes of all columns a block holds.

    Returns
    -------
    int
        A whole number of the smallest chunklen of the columns, at least one
        chunk.

    Raises
    ------
    TypeError
        When ``obj`` is neither a carray nor a ctable.
    """
    cols = [col for _, col in columns_of(obj)]
    chunklen = min((int(c.chunklen) for c in cols), default=1)
    rowbytes = sum(atom_of(c).itemsize for c in cols) or 1
    return max(chunklen, (target_bytes // rowbytes) // chunklen * chunklen)


def row_blocks(obj, blen: int):
    """Consecutive row ranges of a carray or ctable, read column by column.

    Parameters
    ----------
    obj : carray or ctable
    blen : int
        Rows per block.

    Yields
    ------
    list of numpy.ndarray
        One block per column (a carray is one column).
    """
    cols = [col for _, col in columns_of(obj)]
    for start in range(0, len(obj), blen):
        yield [col[start:start + blen] for col in cols]


def check_fixed_width(where: str, name: str, dtype, values: int, held: int) -> None:
    """Refuse a fixed-width string column that would pad its values absurdly.

    Parameters
    ----------
    where : str
        The source, for the message.
    name : str
        The column.
    dtype : numpy.dtype
        Its ``S<n>`` or ``U<n>`` dtype (the width of its longest value).
    values : int
        How many values (rows times values per row) it holds.
    held : int
        The characters (U) or bytes (S) its values hold together.

    Raises
    ------
    LimitError
        When ``values * dtype.itemsize`` is over :data:`FIXED_WIDTH_FREE`
        bytes and over :data:`FIXED_WIDTH_SLACK` times what the values hold,
        or when one value is more than this process can allocate; the
        message names the column and suggests ``strings='vlen'``.
    """
    dtype = np.dtype(dtype)
    check_alloc(dtype.itemsize, f"{where}: one value of column {name!r} ({dtype.str})")
    padded = int(values) * dtype.itemsize
    unit = 4 if dtype.kind == "U" else 1
    if padded > FIXED_WIDTH_FREE and padded > FIXED_WIDTH_SLACK * max(int(held), 1) * unit:
        raise LimitError(f"{where}: column {name!r}: its longest value makes it {dtype.str} "
                         f"(fixed width) for {values:,} values, {padded:,} bytes, more than "
                         f"{FIXED_WIDTH_SLACK} times the {int(held) * unit:,} its values hold; "
                         f"read it as a vlen column instead: strings='vlen' (bcolz-store "
                         f"convert --strings vlen)")


def as_arrow_source(obj):
    """``obj``, or the pyarrow ChunkedArray of a pandas Series or array of an
    ``ArrowDtype``: such values are read as the Arrow data they are (numpy's
    conversion of them gives pandas' NA objects, or 'NA' text, for nulls)."""
    if type(obj).__module__.startswith("pandas") and \
            hasattr(getattr(obj, "dtype", None), "pyarrow_dtype"):
        return getattr(obj, "array", obj).__arrow_array__()
    return obj
