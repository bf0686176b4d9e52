"""The type of a nullable carray (or ctable column): plain values of a fixed
numpy dtype plus which of them are present.

A nullable carray reads as ``numpy.ma.MaskedArray`` (mask True: null) and
takes, wherever it takes items, masked arrays, :data:`numpy.ma.masked`,
None, ``pandas.NA`` and pandas' masked arrays (``Int64``, ``boolean``,
``Float64``...); NaT written to a datetime64/timedelta64 carray is null,
while NaN written to a float carray stays a value::

    >>> import bcolz_store as bcolz
    >>> c = bcolz.carray([1, None, 3], dtype="int32", nullable=True)
    >>> c[:].tolist(), c[:].mask.tolist(), c[:].dtype
    ([1, None, 3], [False, True, False], dtype('int32'))
    >>> c[1] is np.ma.masked, int(c.sum()), list(c)[1] is np.ma.masked
    (True, 4, True)

Layout: :mod:`bcolz_store.kinds.nullable.meta`.
"""

from __future__ import annotations

import numpy as np

from .engine import row_mask
from .meta import NullableLayout, NullableMeta, fill_kind, fill_value
from ...indexing import iterates_blocks

__all__ = ["as_masked", "is_null_item", "new_nullable", "nullable_request", "pandas_masked"]


def is_null_item(value) -> bool:
    """Whether ``value`` is a null item: None, ``numpy.ma.masked`` or ``pandas.NA``."""
    return value is None or value is np.ma.masked or type(value).__name__ == "NAType"


def pandas_masked(value):
    """``(data, mask)`` numpy arrays of a pandas masked array (``Int64``,
    ``UInt8``, ``boolean``, ``Float64``...) or of a Series of one, else None.
    A Float64 NaN stays a value (pandas keeps it apart from NA)."""
    arr = getattr(value, "array", value) if type(value).__name__ == "Series" else value
    data, mask = getattr(arr, "_data", None), getattr(arr, "_mask", None)
    if isinstance(data, np.ndarray) and isinstance(mask, np.ndarray) and \
            mask.dtype == np.bool_ and mask.shape == data.shape:
        return data, mask
    return None


def nullable_request(array, dtype, nullable) -> bool:
    """Whether a new carray of ``array`` and ``dtype`` is nullable: as
    ``nullable`` says when it is given; else when ``array`` is a masked
    array, a pandas masked array (or Series of one), a nullable carray, or a
    list (or object array) holding None (``pandas.NA``, ``numpy.ma.masked``)
    with a ``dtype`` given that is not object (for datetime64/timedelta64,
    None is NaT as numpy converts it: only NA or masked items ask)."""
    if nullable is not None:
        return bool(nullable)
    if isinstance(array, np.ma.MaskedArray) or pandas_masked(array) is not None:
        return True
    if getattr(array, "nullable", False) is True and iterates_blocks(array):
        return True
    if isinstance(array, np.ndarray) and array.dtype == object and array.ndim == 1:
        array = list(array)         # objects: None items ask for it, as in a list
    if dtype is not None and isinstance(array, (list, tuple)):
        try:
            kind = np.dtype(dtype).kind
        except TypeError:
            return False
        if kind in "Mm":            # None is NaT, as numpy converts it
            return any(v is not None and is_null_item(v) for v in array)
        return kind != "O" and any(is_null_item(v) for v in array)
    return False


def _mask_time(data: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``mask`` with NaT items of a datetime64/timedelta64 ``data`` null too."""
    if data.dtype.kind in "Mm" and data.size:
        nat = np.isnat(data)
        if nat.ndim > 1:
            nat = nat.reshape(len(data), -1).any(axis=1)
        return mask | nat
    return mask


def as_masked(value, dtype, where: str = "carray") -> np.ma.MaskedArray:
    """``value`` as a masked array of ``dtype`` (None: numpy's choice), one
    mask entry per item (True: null), every null slot holding the fill of
    the dtype (docs/format.md, "Nullable columns").

    Raises
    ------
    ValueError
        Values that cannot be converted to ``dtype`` (naming ``where``).
    """
    dtype = None if dtype is None else np.dtype(dtype)
    with np.errstate(invalid="raise"):      # NaN or a float out of range to an integer
        return _as_masked(value, dtype, where)


#: Items from which :func:`_arrow_masked` has pyarrow convert a list (fewer: numpy does).
ARROW_ITEMS = 2048


def _arrow_masked(items, dtype):
    """``(data, mask)`` of a list of numbers, bools and None for a numeric or
    bool ``dtype``, converted by pyarrow (``pa.array``, in C++), or None to
    convert them as before: pyarrow missing, few items, another dtype, or
    items pyarrow refuses (floats for an integer dtype, values out of range,
    strings, ``numpy.ma.masked``...: numpy's conversion decides)."""
    if dtype is None or len(items) < ARROW_ITEMS or dtype.shape or not dtype.isnative or \
            not (dtype.kind in "biu" or dtype.kind == "f" and dtype.itemsize in (4, 8)):
        return None
    try:
        import pyarrow as pa
    except ImportError:
        return None
    try:
        arr = pa.array(items, type=pa.from_numpy_dtype(dtype), from_pandas=False)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None
    n, bufs = len(arr), arr.buffers()
    if dtype.kind == "b":
        data = np.unpackbits(np.frombuffer(bufs[1], dtype=np.uint8), count=n,
                             bitorder="little").view(bool)
    else:
        data = np.frombuffer(bufs[1], dtype=dtype, count=n).copy()
    if not arr.null_count:
        return data, np.zeros(n, dtype=bool)
    mask = np.unpackbits(np.frombuffer(bufs[0], dtype=np.uint8), count=n,
                         bitorder="little").view(bool)
    return data, ~mask


def _as_masked(value, dtype, where: str) -> np.ma.MaskedArray:
    try:
        if is_null_item(value):
            data = np.zeros(1, dtype=dtype or np.float64)
            mask = np.ones(1, dtype=bool)
        elif isinstance(value, np.ma.MaskedArray):
            data = np.asarray(value.data, dtype=dtype)
            if data.ndim == 0:
                data = data.reshape(1)
            mask = row_mask(np.ma.getmaskarray(value).reshape(data.shape), len(data))
        elif pandas_masked(value) is not None:
            data, mask = pandas_masked(value)
            data = np.asarray(data, dtype=dtype)
        elif (type(value).__name__ in ("Series", "Index") or isinstance(value, np.ndarray)) \
                and value.dtype == object and (dtype is None or dtype.kind != "O"):
            return as_masked(list(value), dtype, where)     # objects: None items null
        elif isinstance(value, (list, tuple)) and \
                (fast := _arrow_masked(value, dtype)) is not None:
            data, mask = fast
        elif isinstance(value, (list, tuple)) and any(is_null_item(v) for v in value):
            mask = np.array([is_null_item(v) for v in value], dtype=bool)
            present = [v for v in value if not is_null_item(v)]
            known = np.asarray(present, dtype=dtype) if present else \
                np.zeros(0, dtype=dtype or np.float64)
            data = np.empty((len(value),) + known.shape[1:], dtype=known.dtype)
            data[~mask] = known
        else:
            data = np.asarray(value, dtype=dtype)
            if data.ndim == 0:
                data = data.reshape(1)
            mask = np.zeros(len(data), dtype=bool)
    except (TypeError, ValueError, OverflowError, FloatingPointError) as err:
        raise ValueError(f"{where}: cannot convert to a nullable array of "
                         f"{dtype or 'any dtype'}: {err}") from err
    data = np.array(data, copy=True) if not data.flags.writeable else np.ascontiguousarray(data)
    mask = _mask_time(data, np.array(mask, dtype=bool, copy=True))
    if mask.any():
        data[mask] = fill_value(data.dtype)
    full = mask.reshape((-1,) + (1,) * (data.ndim - 1))
    return np.ma.MaskedArray(data, mask=np.broadcast_to(full, data.shape).copy()
                             if data.ndim > 1 else mask)


def new_nullable(meta, dflt) -> None:
    """Make ``meta`` (a new fixed carray's CarrayMeta) nullable: its ``kind`` a
    :class:`~.meta.NullableLayout` of its ``nullable`` entry, and without
    ``dflt`` its dflt the fill (growing adds nulls)."""
    meta.kind = NullableLayout(NullableMeta(fill_kind(meta.atom),
                                            "null" if dflt is None else "dflt"))
    if dflt is None:
        meta.dflt = fill_value(meta.atom)
