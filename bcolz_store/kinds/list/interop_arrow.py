"""List and map columns <-> Arrow: types and values, exactly each way.

The types map each way as the table of :mod:`bcolz_store.kinds.list.arrow_types`
says (that module holds the type half; this one the values).

Nullability (of a whole list, of elements, of struct fields, of map values)
goes into the type.  A type read from Arrow also keeps the Arrow type itself
(its IPC schema, base64, in the type's ``arrow``), so that writing the column
back gives the same type: list vs large_list, field names, zones, string vs
large_string.  A column's own type written to Arrow maps as the table says.

pyarrow is passed in by the callers; nothing here imports it at module level.
"""

from __future__ import annotations


import numpy as np

from .meta import ListType, MapType, StructItems
from .arrow_types import arrow_list_type, is_arrow_list, list_arrow_type

__all__ = ["arrow_list_type", "is_arrow_list", "list_arrow_type", "lists_from_arrow",
           "lists_to_arrow"]

_UNITS = ("s", "ms", "us", "ns")

def _is(pa, typ, *names) -> bool:
    return any(getattr(pa.types, f"is_{n}", lambda t: False)(typ) for n in names)


def _pyvalue(value, typ):
    """A decoded item (or element) as Python values pyarrow takes exactly."""
    if value is None:
        return None
    if isinstance(typ, MapType):
        return [(_pyvalue(k, typ.key), _pyvalue(v, typ.value)) for k, v in value]
    if isinstance(typ, StructItems):
        return {n: _pyvalue(value.get(n), t) for n, t, _ in typ.fields}
    if isinstance(typ, ListType):
        return _pylist(value, typ.item)
    if isinstance(typ, np.dtype):
        if value is np.ma.masked:
            return None
        if typ.kind in "Mm":
            return int(np.asarray(value).view(np.int64))
        return value.item() if hasattr(value, "item") else value
    return value


def _pylist(values, item):
    if isinstance(item, np.dtype) and isinstance(values, np.ndarray):
        mask = np.ma.getmaskarray(values) if isinstance(values, np.ma.MaskedArray) else None
        data = np.asarray(values.data if mask is not None else values, dtype=item)
        out = (data.view(np.int64) if item.kind in "Mm" else data).tolist()
        if mask is not None:
            out = [None if m else v for v, m in zip(out, mask.tolist())]
        return out
    return [_pyvalue(v, item) for v in values]


def lists_to_arrow(pa, block: np.ndarray, typ, name: str):
    """A block of a list column's items (an object array, None: missing) as an
    Arrow array of :func:`list_arrow_type`.

    Raises
    ------
    ValueError
        Values Arrow refuses for that type, naming the column.
    """
    target = list_arrow_type(pa, typ)
    values = [_pyvalue(v, typ) for v in block]
    try:
        return pa.array(values, type=target)
    except (pa.ArrowException, TypeError, ValueError) as err:
        raise ValueError(f"column {name!r}: {err}") from None


def _numbers(pa, arr, dtype: np.dtype):
    """A flat Arrow array of a fixed element type as numpy values (and the
    mask of its nulls, or None)."""
    mask = None
    if arr.null_count:
        mask = np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    if dtype.kind in "Mm":
        if _is(pa, arr.type, "date32"):
            ints = arr.cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False)
        else:
            ints = arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        data = ints.astype(np.int64).view(dtype)
    else:
        if mask is not None:
            arr = arr.fill_null(pa.scalar(False if dtype.kind == "b" else 0, arr.type))
        data = np.asarray(arr.to_numpy(zero_copy_only=False), dtype=dtype)
    return data, mask


def _elements(pa, arr, item):
    """The values of a flat Arrow array of elements of ``item``: a numpy array
    and mask for a fixed dtype, else a list."""
    if isinstance(item, np.dtype):
        return _numbers(pa, arr, item)
    if isinstance(item, (ListType, MapType)):
        return _items(pa, arr, item), None
    if isinstance(item, StructItems):
        cols = [_as_list(*_elements(pa, f, t)) for f, (_, t, _) in zip(arr.flatten(),
                                                                        item.fields)]
        names = [f[0] for f in item.fields]
        valid = arr.is_valid().to_pylist() if arr.null_count else None
        rows = [dict(zip(names, r)) for r in zip(*cols)] if cols else []
        if valid is not None:
            rows = [r if ok else None for r, ok in zip(rows, valid)]
        return rows, None
    return arr.to_pylist(), None


def _as_list(values, mask):
    if isinstance(values, np.ndarray):
        out = list(values)
        if mask is not None:
            out = [None if m else v for v, m in zip(out, mask.tolist())]
        return out
    return values


def _items(pa, arr, typ) -> list:
    """The items of an Arrow list (or map) array, as the list carray takes them."""
    if _is(pa, arr.type, "fixed_size_list"):
        size = arr.type.list_size
        start = arr.offset * size
        offsets = np.arange(len(arr) + 1, dtype=np.int64) * size + start
    else:
        offsets = np.asarray(arr.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    child = arr.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0])) if len(arr) \
        else arr.values.slice(0, 0)
    offsets = offsets - offsets[0]
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else None
    if isinstance(typ, MapType):
        keys, _ = _elements(pa, child.field(0), typ.key)
        vals = _as_list(*_elements(pa, child.field(1), typ.value))
        keys = _as_list(keys, None)
        out = [list(zip(keys[a:b], vals[a:b])) for a, b in zip(offsets[:-1], offsets[1:])]
    else:
        values, mask = _elements(pa, child, typ.item)
        if isinstance(values, np.ndarray):
            parts = np.split(values, offsets[1:-1])
            if mask is not None:
                masks = np.split(mask, offsets[1:-1])
                parts = [np.ma.MaskedArray(p, mask=m) if m.any() else p
                         for p, m in zip(parts, masks)]
            out = parts if len(arr) else []
        else:
            out = [values[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
    if valid is not None:
        out = [v if ok else None for v, ok in zip(out, valid)]
    return out


def lists_from_arrow(pa, arr, typ) -> np.ndarray:
    """An Arrow array of a list column as an object array of its items (None:
    missing), values exact (times as their integer counts, no Python
    datetime in between)."""
    if _is(pa, arr.type, "dictionary"):
        arr = arr.dictionary_decode()
    items = _items(pa, arr, typ)
    out = np.empty(len(items), dtype=object)
    for i, v in enumerate(items):
        out[i] = v
    return out
