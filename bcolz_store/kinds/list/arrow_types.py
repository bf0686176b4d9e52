"""The list and map types of Arrow types and back (the type half of
:mod:`bcolz_store.kinds.list.interop_arrow`, here so that the list kind takes it).

=============================================== ==========================================
Arrow                                           list carray type (kinds/list/meta.py)
=============================================== ==========================================
list, large_list, fixed_size_list of T          ``list_(T, size=, large=, field=)``
map<K, V> (keys_sorted)                         ``map_(K, V, keys_sorted=)``
struct<...> (as an element)                     ``struct_items([...])``
bool, int*, uint*, float*                       the numpy dtype
timestamp[unit] (any zone), duration[unit]      ``M8[unit]`` (UTC values), ``m8[unit]``
date32                                          ``M8[D]``
string, large_string, string_view / binary,     'str' / 'bytes'
large_binary, binary_view, fixed_size_binary
decimal128(P, S)                                ``decimal128(P,S)`` (``decimal.Decimal``)
=============================================== ==========================================

A type read from Arrow keeps the Arrow type itself (its IPC schema, base64,
in the type's ``arrow``), so that writing the column back gives the same type.
pyarrow is passed in by the callers; nothing here imports it.
"""

from __future__ import annotations

import base64
import dataclasses

import numpy as np

from .meta import DecimalItems, ListType, MapType, StructItems

__all__ = ["arrow_list_type", "is_arrow_list", "list_arrow_type"]


def _is(pa, typ, *names) -> bool:
    return any(getattr(pa.types, f"is_{n}", lambda t: False)(typ) for n in names)


def is_arrow_list(pa, typ) -> bool:
    """Whether ``typ`` makes a list column: a list, large_list or map, or a
    fixed_size_list whose elements are not plain numbers, bools or times
    (those stay rows of a fixed shape, as before)."""
    if _is(pa, typ, "list", "large_list", "map"):
        return True
    if _is(pa, typ, "fixed_size_list"):
        inner = typ.value_type
        while _is(pa, inner, "fixed_size_list"):
            inner = inner.value_type
        return not _is(pa, inner, "boolean", "integer", "floating", "timestamp", "date32",
                       "duration", "string", "large_string", "binary", "large_binary",
                       "fixed_size_binary")
    return False


def _element(pa, typ):
    """The element type of Arrow type ``typ``."""
    if _is(pa, typ, "list", "large_list", "fixed_size_list", "map"):
        return arrow_list_type(pa, typ, True, keep=False)
    if _is(pa, typ, "struct"):
        return StructItems(tuple((typ.field(i).name, _element(pa, typ.field(i).type),
                                  typ.field(i).nullable) for i in range(typ.num_fields)))
    if _is(pa, typ, "boolean", "integer", "floating"):
        return np.dtype(typ.to_pandas_dtype())
    if _is(pa, typ, "timestamp"):
        return np.dtype(f"M8[{typ.unit}]")
    if _is(pa, typ, "duration"):
        return np.dtype(f"m8[{typ.unit}]")
    if _is(pa, typ, "date32"):
        return np.dtype("M8[D]")
    if _is(pa, typ, "string", "large_string", "string_view"):
        return "str"
    if _is(pa, typ, "binary", "large_binary", "fixed_size_binary", "binary_view"):
        return "bytes"
    if _is(pa, typ, "decimal128"):
        return DecimalItems(typ.precision, typ.scale)
    raise TypeError(f"Arrow type {typ} cannot be the element of a list column")


def arrow_list_type(pa, typ, nullable: bool = True, keep: bool = True):
    """The list (or map) type of a column of Arrow type ``typ``.

    Parameters
    ----------
    pa : module
    typ : pyarrow.DataType
        A list, large_list, fixed_size_list or map type.
    nullable : bool
        Whether the column's field is nullable.
    keep : bool
        Keep ``typ`` itself in the result (``arrow``), for an exact export.

    Raises
    ------
    TypeError
        Elements of a type that has no list element type (see the module's table).
    """
    if _is(pa, typ, "map"):
        key, item = typ.key_field, typ.item_field
        out = MapType(_element(pa, key.type), _element(pa, item.type), nullable,
                      item.nullable, bool(typ.keys_sorted), ("entries", key.name, item.name))
    else:
        field = typ.value_field
        size = typ.list_size if _is(pa, typ, "fixed_size_list") else None
        out = ListType(_element(pa, field.type), nullable, field.nullable, size,
                       _is(pa, typ, "large_list"), field.name)
    if keep:
        raw = pa.schema([pa.field("x", typ, nullable)]).serialize().to_pybytes()
        out = dataclasses.replace(out, arrow=base64.b64encode(raw).decode("ascii"))
    return out


def _recorded(pa, typ):
    text = getattr(typ, "arrow", None)
    if not text:
        return None
    try:
        return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text))).field(0).type
    except Exception:           # a damaged record: the type's own mapping
        return None


def _arrow_element(pa, typ, nullable=True):
    if isinstance(typ, (ListType, MapType)):
        return list_arrow_type(pa, typ)
    if isinstance(typ, StructItems):
        return pa.struct([pa.field(n, _arrow_element(pa, t), nl) for n, t, nl in typ.fields])
    if isinstance(typ, DecimalItems):
        return pa.decimal128(typ.precision, typ.scale)
    if typ == "str":
        return pa.string()
    if typ == "bytes":
        return pa.binary()
    if typ.kind == "M" and np.datetime_data(typ)[0] == "D":
        return pa.date32()
    return pa.from_numpy_dtype(typ)


def list_arrow_type(pa, typ):
    """The Arrow type of a list column of type ``typ`` (the Arrow type it came
    from, when it came from Arrow).

    Raises
    ------
    TypeError
        Elements with no Arrow type (complex numbers...).
    """
    found = _recorded(pa, typ)
    if found is not None:
        return found
    if isinstance(typ, MapType):
        return pa.map_(pa.field(typ.names[1], _arrow_element(pa, typ.key), False),
                       pa.field(typ.names[2], _arrow_element(pa, typ.value),
                                typ.value_nullable), typ.keys_sorted)
    field = pa.field(typ.field, _arrow_element(pa, typ.item), typ.item_nullable)
    if typ.size is not None:
        return pa.list_(field, typ.size)
    return pa.large_list(field) if typ.large else pa.list_(field)
