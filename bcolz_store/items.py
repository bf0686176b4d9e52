"""Items given to a carray: the forms a constructor or a write takes (numpy,
masked and object arrays, Arrow arrays, pandas Series, carrays, Python
sequences and scalars) turned into numpy arrays of items.

Pure functions on numpy arrays, duck-typed: nothing here imports a container
or a column kind.
"""

from __future__ import annotations

import numpy as np

from .indexing import is_carray

__all__ = ["composite_items", "masked_to_objects"]


def masked_to_objects(values) -> np.ndarray:
    """A masked array as an object array, None for each masked item
    (``MaskedArray.filled(None)`` would fill with the dtype's default, '?'
    for objects)."""
    out = np.ma.getdata(values).astype(object)
    out[np.ma.getmaskarray(values)] = None
    return out


def composite_items(value, arrlen=None, where="carray") -> np.ndarray:
    """``value`` as an object array of Python items, one per row (the items of a
    decimal or struct carray): a str, a number, a dict or None is one item; a
    masked array's masked items are None.

    Parameters
    ----------
    value : array_like, carray, pyarrow Array, pandas Series/Index or scalar
    arrlen : int or None
        The rows the items fill: one item is repeated to ``arrlen``.
    where : str
        What is written, for the message of an error.

    Returns
    -------
    numpy.ndarray
        One-dimensional, of object.

    Raises
    ------
    ValueError
        Values that cannot be broadcast to ``arrlen``.
    """
    if isinstance(value, np.ma.MaskedArray):
        value = masked_to_objects(value)
    if is_carray(value):
        value = value[:]
    if hasattr(value, "to_pylist"):             # an Arrow array
        value = value.to_pylist()
    elif type(value).__name__ in ("Series", "Index"):
        value = value.tolist()
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = [value[()]]
    elif value is None or isinstance(value, (str, bytes, dict)) or \
            not hasattr(value, "__len__"):
        value = [value]
    if isinstance(value, np.ndarray):
        value = value.reshape(-1)
    items = np.fromiter(value, dtype=object, count=len(value))
    if arrlen is not None and len(items) != arrlen:
        if len(items) != 1:
            raise ValueError(f"{where}: cannot assign {len(items)} items to {arrlen} positions")
        items = np.fromiter([items[0]] * arrlen, dtype=object, count=arrlen)
    return items
