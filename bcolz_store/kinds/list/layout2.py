"""Rows of list and map carrays of layout version 2 (kinds/list/files.py):
Arrow rows <-> the Python items reads give and writes take.

Python items are made from the rows' buffers in one pass per child column
(one array, or one list of elements, sliced row by row), the same items a
version-1 carray reads (kinds/list/meta_items.py): an array of a fixed dtype (a
``numpy.ma.MaskedArray`` when elements are missing), an object array of
str or bytes, a list of ``(key, value)`` tuples for a map, None for a
missing list.  Python items are written through the version-1 item
encoding, which checks every item, and decoded at once to Arrow rows.
"""

from __future__ import annotations

import dataclasses
from itertools import chain

import numpy as np

from .engine2 import child_buffers, child_store
from ..vlen.engine import VlenEngine
from ..vlen.chunk_items import as_items
from ..vlen.codec import rows_to_items
from .files import LIST_CODECS
from .meta_items import encode_items
from .meta import MapType
from ..arrow import from_pyarrow, to_pyarrow
from ..base import kind_of
from ..buffers import ArrowBuffers
from .arrow_types import list_arrow_type
from .codec import decode_raw
from .ragged import take_ranges

__all__ = ["ListCodec2", "as_arrow_buffers", "take_rows"]


def _pyarrow():
    try:
        import pyarrow
    except ImportError:                     # pragma: no cover - pyarrow is optional
        return None
    return pyarrow


def _text_type(pa, kind: str, offsets=None):
    large = offsets is None or np.asarray(offsets).dtype.itemsize == 8
    if kind == "str":
        return pa.large_string() if large else pa.string()
    return pa.large_binary() if large else pa.binary()


_NONE = type(None)
_PYTHON = {"i": {int}, "u": {int}, "f": {int, float}, "b": {bool}}


def _allowed(item, nullable: bool):
    """The Python types of elements ``item`` pyarrow converts as the item
    encoding does (None: none; such lists take the item encoding)."""
    if item in ("str", "bytes"):
        found = {str} if item == "str" else {bytes}
    elif isinstance(item, np.dtype) and item.kind in _PYTHON and \
            not (item.kind == "f" and item.itemsize < 4):
        found = set(_PYTHON[item.kind])
    else:
        return None
    return found | ({_NONE} if nullable else set())


def _python_arrow(pa, typ, lists: list):
    """Arrow rows of Python list items (lists of Python scalars, None; for a
    map lists of ``(key, value)`` tuples) made by pyarrow, or None where the
    items are of other kinds (the item encoding takes them, and refuses
    what the type does not hold)."""
    if not set(map(type, lists)) <= ({list, _NONE} if typ.nullable else {list}):
        return None
    present = filter(None, lists)        # the non-empty rows (each a list, or None)
    if isinstance(typ, MapType):
        keys, values = _allowed(typ.key, False), _allowed(typ.value, typ.value_nullable)
        pairs = list(chain.from_iterable(present))
        if keys is None or values is None or not set(map(type, pairs)) <= {tuple} or \
                not set(map(len, pairs)) <= {2}:
            return None
        if not set(map(type, (p[0] for p in pairs))) <= keys or \
                not set(map(type, (p[1] for p in pairs))) <= values:
            return None
    else:
        allowed = _allowed(typ.item, typ.item_nullable)
        if allowed is None or not set(map(type, chain.from_iterable(present))) <= allowed:
            return None
    try:
        plain = dataclasses.replace(typ, arrow=None)        # (not a recorded view type)
        return from_pyarrow(pa, pa.array(lists, type=list_arrow_type(pa, plain)))
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError,
            TypeError, ValueError):
        return None


def _fixed_values(rows, dtype: np.dtype) -> np.ndarray:
    values = np.asarray(rows.values)
    if values.dtype != dtype and values.dtype.itemsize == dtype.itemsize:
        values = values.view(dtype)
    return values


def _text(rows, kind: str) -> np.ndarray:
    """An object array of the str/bytes elements (None where missing)."""
    return rows_to_items(rows, kind, np.dtype(object))


def _elements(rows, item) -> list:
    """A map field's elements as a list (numpy scalars, str, bytes; None where missing)."""
    if item in ("str", "bytes"):
        return _text(rows, item).tolist()
    values = list(_fixed_values(rows, item))
    if rows.validity is not None:
        valid = np.asarray(rows.validity, dtype=bool).tolist()
        values = [v if ok else None for v, ok in zip(values, valid)]
    return values


def _row_slices(values, offsets: np.ndarray) -> np.ndarray:
    """An object array of ``values[a:b]`` for each row's bounds in
    ``offsets`` (slices made and taken in C, no tuple per row)."""
    n = len(offsets) - 1
    slices = map(slice, offsets[:-1].tolist(), offsets[1:].tolist())
    return np.fromiter(map(values.__getitem__, slices), dtype=object, count=n)


def _fixed_rows(rows, item, offsets) -> np.ndarray:
    child = rows.children[0]
    values = _fixed_values(child, item)
    out = _row_slices(values, offsets)
    if child.validity is not None:
        valid = np.asarray(child.validity, dtype=bool)
        misses = np.concatenate(([0], np.cumsum(~valid)))
        holed = np.flatnonzero(misses[offsets[1:]] > misses[offsets[:-1]])
        for i in holed.tolist():
            a, b = int(offsets[i]), int(offsets[i + 1])
            data = values[a:b].copy()
            data[~valid[a:b]] = 0
            out[i] = np.ma.MaskedArray(data, mask=~valid[a:b])
    return out


class ListCodec2:
    """The rows of one list or map type (``listtype``); ``where`` names errors."""

    def __init__(self, listtype, where: str = "list carray", children=None):
        self.listtype = listtype
        self.where = where
        # each child's own column kind, where one is registered for its carray
        self.kinds = {folder: kind_of(meta) for folder, meta in (children or {}).items()}

    def child_range(self, folder, engine, lo: int, hi: int):
        """Child rows ``[lo, hi)`` decoded by the child's own kind, or None."""
        kind = self.kinds.get(folder)
        return None if kind is None else kind.decode(engine, lo, hi)

    def child_append(self, folder, engine):
        """``write(rows, idx)`` appending Arrow child rows ``idx`` through the
        child's own kind, or None where it has none."""
        kind = self.kinds.get(folder)
        if kind is None:
            return None
        return lambda rows, idx: kind.encode(engine, take_rows(rows, idx))

    def to_python(self, rows) -> np.ndarray:
        """An object array of the items of the Arrow rows ``rows``."""
        n = rows.length
        typ = self.listtype
        offsets = np.asarray(rows.offsets, dtype=np.int64)
        if isinstance(typ, MapType):
            entries = rows.children[0]
            pairs = list(zip(_elements(entries.children[0], typ.key),
                             _elements(entries.children[1], typ.value)))
            out = _row_slices(pairs, offsets)
        elif typ.item in ("str", "bytes"):
            out = _row_slices(_text(rows.children[0], typ.item), offsets)
        else:
            out = _fixed_rows(rows, typ.item, offsets)
        if rows.validity is not None and n:
            out[~np.asarray(rows.validity, dtype=bool)] = None
        return out

    def from_python(self, items) -> ArrowBuffers:
        """The Arrow rows of list items, each checked as the item encoding does.

        Raises
        ------
        TypeError, ValueError
            An item the type does not hold.
        """
        pa = _pyarrow()
        if pa is not None:
            lists = items.reshape(-1).tolist() if isinstance(items, np.ndarray) else \
                list(items)
            found = _python_arrow(pa, self.listtype, lists) if pa is not None else None
            if found is not None:
                return found
        if not isinstance(items, np.ndarray) or items.dtype != object:
            arr = np.empty(len(items), dtype=object)
            for i, item in enumerate(items):
                arr[i] = item
            items = arr
        raw = encode_items(items.reshape(-1), self.listtype, self.where)
        return decode_raw(raw, self.listtype, self.where)

    # the rows of a child column <-> what its engine reads and appends (text
    # through pyarrow where it is installed: no Python work per element)

    def child_rows(self, engine, values):
        """The Arrow rows of a child's values as its engine reads them."""
        pa = _pyarrow() if isinstance(engine, VlenEngine) else None
        if pa is None:
            return child_buffers(engine, values)
        objs = np.asarray(values).astype(object, copy=False)
        return from_pyarrow(pa, pa.array(objs, _text_type(pa, engine.vlen.kind)))

    def child_values(self, engine, rows, idx: np.ndarray):
        """Rows ``idx`` of the Arrow child ``rows`` as its engine appends them."""
        pa = _pyarrow() if isinstance(engine, VlenEngine) else None
        if pa is None:
            return child_store(engine, rows, idx)
        kind = engine.vlen.kind
        arr = to_pyarrow(pa, ArrowBuffers(rows.length, rows.validity, rows.offsets, rows.values),
                         _text_type(pa, kind, rows.offsets))
        if len(idx) and int(idx[-1]) - int(idx[0]) + 1 == len(idx):
            arr = arr.slice(int(idx[0]), len(idx))
        else:
            arr = arr.take(pa.array(idx, pa.int64()))
        objs = arr.to_numpy(zero_copy_only=False)
        return as_items(objs, kind, engine.atom, engine.vlen.nullable)

    def check(self, rows) -> None:
        """Refuse Arrow rows the type does not hold.

        Raises
        ------
        ValueError
            A missing list in a type that is not nullable, a missing element
            (or map key) where none may be.
        """
        typ = self.listtype
        if rows.validity is not None and not typ.nullable and \
                not np.asarray(rows.validity, dtype=bool).all():
            first = int(np.argmin(rows.validity))
            raise ValueError(f"{self.where}: item {first} is None and this list type is not "
                             f"nullable")
        valid = np.ones(rows.length, dtype=bool) if rows.validity is None else \
            np.asarray(rows.validity, dtype=bool)
        offsets = np.asarray(rows.offsets, dtype=np.int64)
        if isinstance(typ, MapType):
            fields = list(zip(rows.children[0].children, ("key", "value"),
                              (False, typ.value_nullable)))
        else:
            fields = [(rows.children[0], "element", typ.item_nullable)]
        for child, what, may in fields:
            if may or child.validity is None:
                continue
            misses = np.concatenate(([0], np.cumsum(~np.asarray(child.validity, dtype=bool))))
            bad = (misses[offsets[1:]] > misses[offsets[:-1]]) & valid
            if bad.any():
                raise ValueError(f"{self.where}: item {int(np.argmax(bad))}: a missing {what} "
                                 f"(None) where {what}s may not be missing")


def take_rows(rows, idx: np.ndarray) -> ArrowBuffers:
    """Rows ``idx`` (increasing) of flat Arrow rows (fixed values, or text
    with offsets) as :class:`ArrowBuffers`."""
    idx = np.asarray(idx, dtype=np.int64)
    valid = None if rows.validity is None else np.asarray(rows.validity, dtype=bool)[idx]
    if rows.offsets is None:
        return ArrowBuffers(len(idx), valid, None, np.asarray(rows.values)[idx],
                            type=getattr(rows, "type", None))
    offsets = np.asarray(rows.offsets, dtype=np.int64)
    starts, lens = offsets[idx], offsets[idx + 1] - offsets[idx]
    values = take_ranges(np.asarray(rows.values, dtype=np.uint8), starts, lens)
    return ArrowBuffers(len(idx), valid, np.concatenate(([0], np.cumsum(lens))),
                        np.ascontiguousarray(values), type=getattr(rows, "type", None))


def as_arrow_buffers(rows) -> ArrowBuffers:
    """Rows of the version-2 engine as :class:`ArrowBuffers` (datetimes as ``int64``)."""
    values = rows.values
    if isinstance(values, np.ndarray) and values.dtype.kind in "mM":
        values = values.view(np.int64)
    children = tuple(as_arrow_buffers(c) for c in rows.children)
    return ArrowBuffers(rows.length, rows.validity, rows.offsets, values, children)


LIST_CODECS.append(ListCodec2)
