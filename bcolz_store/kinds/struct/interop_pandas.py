"""pandas <-> decimal and struct columns.

==========================================  ==============================  ====================
pandas column                               stored as                       read back as
==========================================  ==============================  ====================
``ArrowDtype(decimal128(p, s))`` (or 256)   ``decimal(p, s)``               the same ArrowDtype
``object`` of ``decimal.Decimal`` (None,   ``decimal(p, s)``, the least    ``object`` of Decimal
NaN, NA: missing)                           p and s that hold every item;
                                            nullable when one is missing
``ArrowDtype(struct<...>)``                 ``struct([...])``               the same ArrowDtype
``object`` of dicts (None: missing)         ``struct`` of the Arrow type    ``object`` of dicts
                                            pyarrow infers
==========================================  ==============================  ====================

The column's attrs record (under ``ARROW_ATTR``) the Arrow type of
an ``ArrowDtype`` column (an Arrow schema, base64), so that it comes back as it
was (``string`` fields stay ``string``, ``decimal256`` stays ``decimal256``).  pandas and pyarrow are the caller's (imported here
only inside functions).
"""

from __future__ import annotations

import base64
import decimal as _dec

import numpy as np

from ..decimal.types import decimal
from .types import arrow_type_of, column_type_of_arrow

__all__ = ["ARROW_ATTR", "composite_column", "composite_frame_values"]

ARROW_ATTR = "bcolz_store.pandas_arrow"


def _items(values) -> np.ndarray:
    """An object array of ``values``, pandas' NA as None."""
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = None if v is None or type(v).__name__ == "NAType" else v
    return out


def _arrow_record(pa, typ) -> str:
    """The Arrow type ``typ`` as text for the column's attrs (a schema, base64)."""
    return base64.b64encode(pa.schema([pa.field("x", typ)]).serialize().to_pybytes()) \
        .decode("ascii")


def _arrow_recorded(pa, text, kind):
    """The Arrow type recorded by :func:`_arrow_record` when it is one of a
    column of ``kind``, else ``kind``'s own Arrow type."""
    try:
        typ = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text))).field(0).type
    except (TypeError, ValueError, pa.ArrowException):
        return arrow_type_of(kind)
    return typ if column_type_of_arrow(typ) is not None else arrow_type_of(kind)


def _decimal_of(items: list):
    """The least decimal type holding every item (all Decimal), or None."""
    places, digits = 0, 1
    for v in items:
        if not v.is_finite():
            return None
        sign, ds, exp = v.as_tuple()
        places = max(places, -exp)
        digits = max(digits, len(ds) + exp)
    precision = digits + places
    if precision > 76:
        return None
    return decimal(max(precision, 1), places)


def composite_column(series):
    """``(items, type, attrs)`` of a pandas column stored as a decimal or struct
    column (see the module's table), else None.

    Raises
    ------
    TypeError
        An Arrow struct with a field of a type no column kind holds.
    """
    arrow = getattr(series.dtype, "pyarrow_dtype", None)
    if arrow is not None:
        kind = column_type_of_arrow(arrow)
        if kind is None:
            return None
        import pyarrow as pa
        return _items(series.tolist()), kind, {ARROW_ATTR: _arrow_record(pa, arrow)}
    if series.dtype != object or not len(series):
        return None
    values = series.tolist()
    present = [v for v in values if v is not None and not (isinstance(v, float) and v != v)
               and type(v).__name__ != "NAType"]
    if not present:
        return None
    if all(isinstance(v, _dec.Decimal) for v in present):
        kind = _decimal_of(present)     # (missing items: a nullable decimal)
        items = _items([v if isinstance(v, _dec.Decimal) else None for v in values])
        return (items, kind, {}) if kind is not None else None
    if all(isinstance(v, dict) for v in present):
        try:
            import pyarrow as pa
            typ = pa.array(present).type
            kind = column_type_of_arrow(typ)
        except (ImportError, TypeError, ValueError, pa.ArrowException):
            return None
        return (_items([v if isinstance(v, dict) else None for v in values]), kind, {}) \
            if kind is not None else None
    return None


def composite_frame_values(pd, col, values: np.ndarray):
    """The pandas values of a decimal or struct column's items ``values``: an
    ``ArrowDtype`` array when the column was one, else an object Series."""
    if ARROW_ATTR in col.attrs and col.attrs[ARROW_ATTR]:
        import pyarrow as pa
        typ = _arrow_recorded(pa, col.attrs[ARROW_ATTR], col.column_type)
        return pd.array(pa.array(values.tolist(), type=typ), dtype=pd.ArrowDtype(typ))
    return pd.Series(values, dtype=object, copy=False)
