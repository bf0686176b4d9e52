"""Rows of a nullable carray between Arrow buffers and its engine's values and
validity (:class:`~bcolz_store.kinds.nullable.engine.NullableEngine`).

The values buffer is the carray's values, item for item, once the Arrow
integers of a temporal type are seen as the carray's datetime64/timedelta64
(``date32``/``time32`` widened to 64 bits); Arrow's validity is the
``valid/`` carray's bool.  A null row's slot is written as the fill of the
dtype (:func:`~bcolz_store.kinds.nullable.meta.fill_value`), whatever
Arrow's slot held.
"""

from __future__ import annotations

import numpy as np

from .meta import fill_value
from ..buffers import ArrowBuffers

__all__ = ["accepted", "arrow_of_dtype", "decode_rows", "dtype_of_arrow", "encode_rows"]

_UNITS = ("s", "ms", "us", "ns")
_NAT = np.iinfo(np.int64).min
_INT32 = np.iinfo(np.int32)


def arrow_of_dtype(dtype):
    """``make(pa)``: the Arrow type of a nullable carray of ``dtype``, or None
    for a dtype without one here (then the carray keeps the numpy path)."""
    dtype = np.dtype(dtype)
    if dtype.shape or dtype.names is not None or not dtype.isnative:
        return None
    kind = dtype.kind
    if kind == "b":
        return lambda pa: pa.bool_()
    if kind in "iu" or (kind == "f" and dtype.itemsize in (2, 4, 8)):
        return lambda pa: pa.from_numpy_dtype(dtype)
    if kind in "Mm":
        unit, count = np.datetime_data(dtype)
        if count != 1:
            return None
        if unit in _UNITS:
            return (lambda pa: pa.timestamp(unit)) if kind == "M" else \
                (lambda pa: pa.duration(unit))
        if unit == "D" and kind == "M":
            return lambda pa: pa.date32()
    return None


def dtype_of_arrow(pa, typ) -> np.dtype | None:
    """The numpy dtype a nullable carray of Arrow type ``typ`` holds, or None."""
    t = pa.types
    if t.is_boolean(typ):
        return np.dtype(bool)
    if t.is_integer(typ) or t.is_floating(typ):
        return np.dtype(typ.to_pandas_dtype())
    if t.is_timestamp(typ):
        return np.dtype(f"M8[{typ.unit}]")
    if t.is_date32(typ):
        return np.dtype("M8[D]")
    if t.is_date64(typ):
        return np.dtype("M8[ms]")
    if t.is_duration(typ) or t.is_time32(typ) or t.is_time64(typ):
        return np.dtype(f"m8[{typ.unit}]")
    return None


def accepted(pa, typ, dtype: np.dtype) -> bool:
    """Whether Arrow rows of ``typ`` encode as they are into a nullable carray of ``dtype``."""
    return dtype_of_arrow(pa, typ) == dtype


def encode_rows(buffers: ArrowBuffers, dtype: np.dtype) -> tuple:
    """``(values, valid)`` of ``buffers`` for a nullable carray of ``dtype``: the
    values as ``dtype`` (a view where they are already), each null slot the
    fill; ``valid`` a bool array (True: present).

    Raises
    ------
    ValueError
        Buffers whose values are not one item a row.
    """
    n = buffers.length
    values = np.asarray(buffers.values) if buffers.values is not None else None
    if values is None or len(values) != n:
        raise ValueError(f"nullable carray: Arrow rows of {buffers.type} are not one "
                         f"{dtype} item a row")
    if dtype.kind in "Mm":
        if values.dtype != np.int64:
            values = values.astype(np.int64)
        values = values.view(dtype)
    elif values.dtype != dtype:
        values = values.astype(dtype)
    valid = buffers.validity
    if valid is None:
        return values, np.ones(n, dtype=bool)
    valid = np.asarray(valid, dtype=bool)
    if not valid.all():
        values = np.array(values, copy=True)
        values[~valid] = fill_value(dtype)
    return values, valid


def decode_rows(engine, start: int, stop: int, dtype: np.dtype) -> ArrowBuffers:
    """Rows ``[start, stop)`` of a nullable carray's ``engine`` as Arrow buffers
    of :func:`arrow_of_dtype`'s type (a NaT value is null, as Arrow has no NaT).

    Raises
    ------
    ValueError
        A datetime64[D] value outside Arrow's date32 range.
    """
    if hasattr(engine, "valid_range"):
        values = engine.values.read_range(start, stop)
        valid = engine.valid_range(start, stop)
    else:
        block = engine.read_range(start, stop)
        values, valid = np.ma.getdata(block), ~np.ma.getmaskarray(block)
    if dtype.kind in "Mm":
        ints = values.view(np.int64)
        nat = ints == _NAT
        if nat.any():
            valid = valid & ~nat
        if dtype == np.dtype("M8[D]"):
            days = np.where(valid, ints, 0)
            if len(days) and (days.min() < _INT32.min or days.max() > _INT32.max):
                raise ValueError("nullable carray: dates beyond the range of Arrow's date32")
            values = days.astype(np.int32)
        else:
            values = ints
    n = stop - start
    return ArrowBuffers(n, None if valid.all() else valid, None, values)
