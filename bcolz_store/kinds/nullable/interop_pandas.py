"""pandas' masked columns (``Int8``...``Int64``, ``UInt8``...``UInt64``,
``Float32``, ``Float64``, ``boolean``) as nullable ctable columns and back.

``fromdataframe`` stores such a column as a nullable column of the numpy
dtype of its values (NA: null; a ``Float64`` NaN stays a value) and records
the pandas dtype in the column's ``pandas`` attr, as categorical and string
columns record theirs; ``todataframe`` gives the same pandas dtype back.  A
nullable column without a record becomes the masked dtype of its values'
kind (``Int32`` for int32, ``boolean`` for bool...), or, for the kinds
pandas has no masked dtype of, a datetime64/timedelta64 column with NaT, or
an object column with None.

pandas is imported by the caller and passed in.
"""

from __future__ import annotations

import numpy as np

from .types import as_masked, pandas_masked

__all__ = ["masked_column", "nullable_series"]

_MASKED_NAMES = {"b": "boolean", "i": "Int", "u": "UInt", "f": "Float"}


def masked_column(series):
    """``(masked array, record)`` of a pandas masked column, else None."""
    if pandas_masked(series) is None:
        return None
    return as_masked(series, None, f"column {series.name!r}"), {"dtype": str(series.dtype)}


def _default_dtype(dtype: np.dtype):
    """The name of pandas' masked dtype of numpy ``dtype``, or None."""
    name = _MASKED_NAMES.get(dtype.kind)
    if name is None or (dtype.kind == "f" and dtype.itemsize < 4):
        return None
    return name if dtype.kind == "b" else f"{name}{dtype.itemsize * 8}"


def nullable_series(pd, values: np.ma.MaskedArray, record: dict):
    """The values of a nullable column as pandas keeps them (see the module)."""
    mask = np.ma.getmaskarray(values)
    data = np.asarray(values.data)
    name = record.get("dtype") if isinstance(record, dict) else None
    name = name if isinstance(name, str) else _default_dtype(data.dtype)
    if name is not None:
        try:
            dtype = pd.api.types.pandas_dtype(name)
            if hasattr(dtype, "numpy_dtype"):
                return dtype.construct_array_type()(data.astype(dtype.numpy_dtype), mask.copy())
        except (TypeError, ValueError):
            pass                    # a record this pandas does not know: as below
    if data.dtype.kind in "Mm":
        return values.filled(np.array("NaT", dtype=data.dtype))
    items = data.astype(object)
    items[mask] = None
    return pd.Series(items, dtype=object, copy=False)
