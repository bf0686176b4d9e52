"""pandas columns of lists and maps, kept as list columns (kinds/list/meta.py).

=================================== ================================ =========================
pandas column                       stored as                        ``todataframe``
=================================== ================================ =========================
``object`` of lists, tuples or      list column, type inferred       ``object`` of Python lists
numpy arrays (None/NaN missing)     (by pyarrow when installed)      (or of arrays, as given)
``ArrowDtype`` of list, large_list, list (or map) column, the Arrow  the same ``ArrowDtype``
fixed_size_list or map              type kept
=================================== ================================ =========================

The column attribute ``bcolz_store.pandas`` records what the column held
(``{"dtype": "object", "python": "list" | "ndarray", "na_value": ...}`` or
``{"dtype": "arrow"}``).  An object column whose items do not all share one
element type stays an object column, as before.

pandas and pyarrow are imported by the callers or inside the functions.
"""

from __future__ import annotations

import math

import numpy as np

from .meta import ListType, MapType
from .interop_arrow import arrow_list_type, is_arrow_list, lists_from_arrow, lists_to_arrow

__all__ = ["list_frame_values", "list_values"]


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or \
        type(v).__name__ in ("NAType", "NaTType")


def _pyarrow():
    try:
        import pyarrow as pa
    except ImportError:
        return None
    return pa


def _arrow_column(series):
    dtype = series.dtype
    if type(dtype).__name__ != "ArrowDtype":
        return None
    pa = _pyarrow()
    typ = dtype.pyarrow_dtype
    if pa is None or not is_arrow_list(pa, typ):
        return None
    arr = pa.chunked_array(series.array.__arrow_array__()).combine_chunks() \
        if len(series) else pa.array([], type=typ)
    listtype = arrow_list_type(pa, typ, True)
    return lists_from_arrow(pa, arr, listtype), listtype, {"dtype": "arrow"}


def _infer(present: list):
    """The list type of the present items, or None when they share none."""
    pa = _pyarrow()
    if pa is not None:
        try:
            typ = pa.array(present).type
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return None
        if not is_arrow_list(pa, typ) and not pa.types.is_fixed_size_list(typ):
            return None
        try:
            return arrow_list_type(pa, typ, True, keep=False)
        except TypeError:
            return None
    flat = [e for v in present for e in v]
    if flat and all(isinstance(e, str) or e is None for e in flat):
        return ListType("str")
    if flat and all(isinstance(e, bytes) or e is None for e in flat):
        return ListType("bytes")
    try:
        dtype = np.asarray([e for e in flat if e is not None]).dtype
    except (TypeError, ValueError):
        return None
    return ListType(dtype) if dtype.kind in "biufMm" else None


def list_values(series):
    """``(items, list type, record)`` of a pandas column of lists, or None.

    ``items`` is an object array with None for every missing value; the
    record is stored in the column's ``bcolz_store.pandas`` attribute.
    """
    found = _arrow_column(series)
    if found is not None or series.dtype != np.dtype(object) or not len(series):
        return found
    items = series.to_numpy(dtype=object, copy=True)
    values = items.tolist()
    marker = None
    present = []
    for i, v in enumerate(values):
        if _missing(v):
            marker = marker or ("None" if v is None else "nan")
            items[i] = None
        elif isinstance(v, (list, tuple)) or (isinstance(v, np.ndarray) and v.ndim == 1):
            present.append(v)
        else:
            return None
    if not present:
        return None
    kinds = {"ndarray" if isinstance(v, np.ndarray) else "list" for v in present}
    if len(kinds) > 1:
        return None
    typ = _infer(present)
    if typ is None:
        return None
    if isinstance(typ, ListType) and typ.size is not None:
        typ = ListType(typ.item, typ.nullable, typ.item_nullable)
    return items, typ, {"dtype": "object", "python": kinds.pop(), "na_value": marker or "None"}


def _pylist(value, typ):
    """A decoded item as nested Python lists (scalars as numpy gives them)."""
    if value is None:
        return None
    if isinstance(typ, MapType):
        return [(k, _pylist(v, typ.value) if isinstance(typ.value, (ListType, MapType)) else v)
                for k, v in value]
    item = typ.item
    if isinstance(value, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(value)
        return [None if m else v for v, m in zip(value.data.tolist(), mask)]
    if isinstance(item, (ListType, MapType)):
        return [_pylist(v, item) for v in value]
    return value.tolist()


def list_frame_values(pd, col, rows, name: str, record):
    """Rows ``rows`` of the list column ``col`` as pandas had them (see the
    module's table); a column without a record gives an ``object`` Series
    of the items as read.  ``record`` is the column's ``bcolz_store.pandas``
    attribute (None when it has none).

    Raises
    ------
    ImportError
        A column recorded as an ``ArrowDtype`` without pyarrow.
    """
    values = col[rows]
    if not isinstance(values, np.ndarray):      # one row
        return values
    record = record if isinstance(record, dict) else {}
    typ = col.listtype
    if record.get("dtype") == "arrow":
        import pyarrow as pa
        arr = lists_to_arrow(pa, values, typ, name)
        return pd.Series(pd.arrays.ArrowExtensionArray(arr), copy=False)
    if record.get("python") == "list":
        out = np.empty(len(values), dtype=object)
        for i, v in enumerate(values):
            out[i] = _pylist(v, typ)
        values = out
    if record.get("na_value") == "nan":
        values = values.copy()
        values[[v is None for v in values]] = np.nan
    return pd.Series(values, dtype=object, copy=False)
