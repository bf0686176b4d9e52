"""The missing items of an array of text (``StringDType`` or object items),
which chunk statistics count and the vlen kind's items use."""

from __future__ import annotations

import numpy as np

__all__ = ["NAN_STRING", "missing_mask"]

# Missing items as NaN-like nulls: np.isnan finds them, comparisons are false.
NAN_STRING = np.dtypes.StringDType(na_object=np.nan) if hasattr(np.dtypes, "StringDType") \
    else None


def missing_mask(arr: np.ndarray):
    """Boolean mask of the missing items of ``arr`` (StringDType or object), or
    None when none can be missing (a StringDType without ``na_object``)."""
    if arr.dtype.kind == "T":
        if not hasattr(arr.dtype, "na_object"):
            return None
        return np.isnan(arr.astype(NAN_STRING))
    return np.fromiter(map(lambda v: v is None, arr.tolist()), dtype=bool, count=len(arr))
