"""Functions that create carrays and ctables: ``fill``, ``zeros``, ``ones``,
``arange`` and ``fromiter``, with bcolz 1.x's signatures.

Containers are written block by block: ``zeros(5e9, dtype='i1', rootdir=...)``
never holds more than a few megabytes of uncompressed data.

Source: bcolz 1.x ``toplevel.py`` (signatures, defaults and behaviour).
"""

from __future__ import annotations

import itertools
import math
import operator

import numpy as np

from .carray import carray
from .ctable import ctable

__all__ = ["arange", "fill", "fromiter", "ones", "zeros"]

# Uncompressed bytes written per append when filling or generating.
_WRITE_BLOCK_BYTES = 4 * 2 ** 20


def _rows_per_write(chunklen: int, rowbytes: int) -> int:
    """A whole number of chunks holding about ``_WRITE_BLOCK_BYTES``."""
    nchunks = max(_WRITE_BLOCK_BYTES // max(chunklen * max(rowbytes, 1), 1), 1)
    return chunklen * nchunks



# ------------------------------------------------------ fill / zeros / ones

def _normalise_shape(shape) -> tuple:
    if isinstance(shape, (int, float, np.integer, np.floating)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        shape = tuple(operator.index(n) if not isinstance(n, (float, np.floating)) else int(n)
                      for n in shape)
    except TypeError as err:
        raise TypeError(f"shape must be an int or a tuple of ints, got {shape!r}") from err
    if not shape:
        raise ValueError("shape must have at least one dimension")
    if any(n < 0 for n in shape):
        raise ValueError(f"negative dimensions are not allowed, got shape {shape}")
    return shape


def _fill_carray(obj, length: int) -> None:
    """Append ``length`` rows of ``obj.dflt`` block by block."""
    atom = obj.dtype.shape if obj.dtype.shape else tuple(obj.shape[1:])
    rows = max(min(length, _rows_per_write(obj.chunklen, obj.dtype.itemsize * math.prod(atom))), 1)
    block = np.empty((rows,) + atom, dtype=obj.dtype.base)
    block[...] = obj.dflt
    for start in range(0, length, rows):
        obj.append(block[:min(rows, length - start)])
    obj.flush()


def _fill_ctable(obj, dtype: np.dtype, length: int, dflt) -> None:
    row = np.zeros((), dtype=dtype)
    if dflt is not None:
        row[()] = dflt
    chunklen = min(obj.cols[name].chunklen for name in obj.names)
    rows = max(min(length, _rows_per_write(chunklen, dtype.itemsize)), 1)
    block = np.empty(rows, dtype=dtype)
    block[...] = row
    for start in range(0, length, rows):
        obj.append(block[:min(rows, length - start)])
    obj.flush()


def fill(shape, dflt=None, dtype=float, **kwargs):
    """Return a new carray (or ctable, for a structured dtype) filled with ``dflt``.

    Parameters
    ----------
    shape : int or tuple of ints
        ``n`` or ``(n, d1, d2...)``: n rows of atoms of shape ``(d1, d2...)``.
        Floats are truncated (``1e6`` works).
    dflt : scalar, optional
        The fill value, also the result's ``dflt``.  Default zero.
    dtype : numpy dtype, optional
        Default float64.  A structured dtype (without a subarray shape)
        makes a ctable with one column per field.
    **kwargs
        Passed to the carray/ctable constructor: ``rootdir``, ``mode``,
        ``cparams``, ``chunklen``, ``expectedlen`` (default: the length).

    Returns
    -------
    carray or ctable
        Of ``shape[0]`` rows.

    Raises
    ------
    TypeError, ValueError
        For a bad shape (negative dimension, not integers).
    DatasetExistsError, ReadOnlyError
        As the carray constructor for ``rootdir``/``mode`` (an existing
        rootdir in mode 'a', mode 'r').

    Notes
    -----
    Compatibility: as bcolz, except that a structured ``dflt`` is honoured
    for ctables (bcolz always filled ctables with zeros, even in ``ones``).

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> bcolz.fill((4, 2), dflt=7, dtype="i2")[:]
    array([[7, 7],
           [7, 7],
           [7, 7],
           [7, 7]], dtype=int16)
    """
    dtype = np.dtype(dtype)
    shape = _normalise_shape(shape)
    if len(shape) > 1:
        dtype = np.dtype((dtype.base, shape[1:] + dtype.shape))
    length = shape[0]
    kwargs.setdefault("expectedlen", length)
    if dtype.kind == "V" and dtype.names is not None and dtype.shape == ():
        obj = ctable(np.zeros(0, dtype=dtype), **kwargs)
        _fill_ctable(obj, dtype, length, dflt)
        return obj
    obj = carray([], dtype=dtype, dflt=dflt, **kwargs)
    _fill_carray(obj, length)
    return obj


def zeros(shape, dtype=float, **kwargs):
    """Return a new carray (or ctable) of ``shape`` filled with zeros.

    Parameters and errors as :func:`fill` (with ``dflt`` zero).

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> bcolz.zeros(3, dtype="i4")[:]
    array([0, 0, 0], dtype=int32)
    """
    dtype = np.dtype(dtype)
    return fill(shape, dflt=np.zeros((), dtype=dtype.base), dtype=dtype, **kwargs)


def ones(shape, dtype=float, **kwargs):
    """Return a new carray (or ctable) of ``shape`` filled with ones.

    Parameters and errors as :func:`fill` (with ``dflt`` one).

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> bcolz.ones(3)[:]
    array([1., 1., 1.])
    """
    dtype = np.dtype(dtype)
    return fill(shape, dflt=np.ones((), dtype=dtype.base), dtype=dtype, **kwargs)


# ------------------------------------------------------------------ arange

def _arange_dtype(start, stop, step) -> np.dtype:
    """The dtype numpy's arange gives for these argument types, without a big array."""
    try:
        return np.arange(type(start)(0), type(stop)(0), type(step)(1)).dtype
    except (TypeError, ValueError):
        return np.arange(start, start, step).dtype


def _arange_length(start, stop, step) -> int:
    if all(isinstance(v, (int, np.integer)) for v in (start, stop, step)):
        start, stop, step = int(start), int(stop), int(step)
        return max(-((start - stop) // step), 0)
    return max(math.ceil((stop - start) / step), 0)


def _wrap64(value: int) -> np.int64:
    return np.int64(((int(value) + 2 ** 63) % 2 ** 64) - 2 ** 63)


class _ArangeBlocks:
    """Values ``first + i*delta`` as numpy computes them, for any range of i."""

    def __init__(self, start, step, dtype: np.dtype):
        self.dtype = dtype
        if dtype.kind in "iu":
            first, second = int(start), int(start + step)
            self.first, self.delta = _wrap64(first), _wrap64(second - first)
        elif dtype.kind in "fc":
            self.first = dtype.type(start)
            self.delta = dtype.type(start + step) - self.first
        else:
            self.start, self.step = start, step

    def __call__(self, i: int, j: int) -> np.ndarray:
        kind = self.dtype.kind
        if kind in "iu":
            with np.errstate(over="ignore"):
                values = np.arange(i, j, dtype=np.int64) * self.delta + self.first
            return values.astype(self.dtype)
        if kind in "fc":
            return np.arange(i, j).astype(self.dtype) * self.delta + self.first
        return np.arange(self.start + i * self.step, self.start + j * self.step, self.step,
                         dtype=self.dtype)[:j - i]


def arange(start=None, stop=None, step=None, dtype=None, **kwargs):
    """Return a carray of evenly spaced values in ``[start, stop)``, as numpy.arange.

    Called as ``arange(stop)``, ``arange(start, stop)`` or
    ``arange(start, stop, step)``.

    Parameters
    ----------
    start : number, optional
        First value (default 0).
    stop : number
        End of the interval (excluded).
    step : number, optional
        Spacing (default 1); may be negative, not zero.
    dtype : numpy dtype, optional
        Default: what ``numpy.arange`` infers from the arguments.
    **kwargs
        Passed to the carray constructor (``rootdir``, ``mode``, ``cparams``,
        ``chunklen``, ``expectedlen``...).

    Returns
    -------
    carray
        One-dimensional, ``ceil((stop - start) / step)`` values, equal to
        ``numpy.arange(start, stop, step, dtype)``.

    Raises
    ------
    ValueError
        Without a ``stop``, with ``step == 0``, or with a structured dtype
        (ctables are not supported).

    Notes
    -----
    Compatibility: bcolz truncated ``stop`` to an integer
    (``arange(0, 2.5, 0.5)`` missed ``2.0``); numpy's length rule is used
    here.  Values are generated one block at a time.

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> bcolz.arange(2, 11, 3)[:]
    array([2, 5, 8])
    """
    if start is None and stop is None:
        raise ValueError("You must pass a `stop` value at least.")
    if stop is None:
        start, stop = 0, start
    elif start is None:
        start = 0
    if step is None:
        step = 1
    if step == 0:
        raise ValueError("arange: step must not be zero")
    dtype = _arange_dtype(start, stop, step) if dtype is None else np.dtype(dtype)
    if dtype.kind == "V":
        raise ValueError("arange does not support ctables yet.")
    length = _arange_length(start, stop, step)
    kwargs.setdefault("expectedlen", length)
    obj = carray(np.empty(0, dtype=dtype), **kwargs)
    values = _ArangeBlocks(start, step, dtype)
    rows = _rows_per_write(obj.chunklen, dtype.itemsize)
    for i in range(0, length, rows):
        obj.append(values(i, min(i + rows, length)))
    obj.flush()
    return obj


# ---------------------------------------------------------------- fromiter

def fromiter(iterable, dtype, count, **kwargs):
    """Build a carray (or ctable, for a structured dtype) from an iterable.

    Parameters
    ----------
    iterable : iterable
        Yields values convertible to ``dtype`` (tuples for structured dtypes).
    dtype : numpy dtype
        Of the result.  A structured dtype makes a ctable.
    count : int
        Items to read; -1 reads until the iterable is exhausted.  Reading
        stops early, without error, if the iterable ends first.
    **kwargs
        Passed to the carray/ctable constructor (``rootdir``, ``mode``,
        ``cparams``, ``chunklen``, ``expectedlen``: default ``count``, or the
        iterable's length hint).

    Returns
    -------
    carray or ctable

    Raises
    ------
    ValueError
        If ``count`` is below -1, or an item cannot be converted to ``dtype``.

    Notes
    -----
    Compatibility: bcolz read the whole iterable whatever ``count`` said;
    here at most ``count`` items are consumed, as ``numpy.fromiter`` does.
    Items are read and appended one chunk at a time.

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> bcolz.fromiter((i * i for i in range(5)), dtype="i8", count=5)[:]
    array([ 0,  1,  4,  9, 16])
    """
    count = operator.index(count)
    if count < -1:
        raise ValueError(f"count must be -1 (read all) or >= 0, got {count}")
    iterator = iter(iterable)
    if count == -1:
        hint = operator.length_hint(iterator, -1)
        expected = hint if hint >= 0 else None
    else:
        expected = count
        iterator = itertools.islice(iterator, count)
    if expected is not None:
        kwargs.setdefault("expectedlen", expected)
    dtype = np.dtype(dtype)
    if dtype.kind == "V" and dtype.names is not None and dtype.shape == ():
        obj = ctable(np.zeros(0, dtype=dtype), **kwargs)
        blen = max(sum(obj.cols[name].chunklen for name in obj.names) // len(obj.names), 1)
    else:
        obj = carray(np.empty(0, dtype=dtype), **kwargs)
        blen = obj.chunklen
    while True:
        block = np.fromiter(itertools.islice(iterator, blen), dtype=dtype)
        if len(block) == 0:
            break
        obj.append(block)
    obj.flush()
    return obj
