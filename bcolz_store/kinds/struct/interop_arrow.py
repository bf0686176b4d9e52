"""Arrow <-> decimal and struct columns.

=============================  ==========================================
Arrow type                     bcolz_store column
=============================  ==========================================
``decimal128(p, s)``           ``decimal(p, s)`` (p <= 38)
``decimal256(p, s)``           ``decimal(p, s)`` (p > 38: the width follows
                               the precision, as bcolz_store stores it)
``struct<...>``                ``struct([...])`` of the fields' kinds,
                               names, order and nullability kept
=============================  ==========================================

Decimal items go through Arrow's own buffer: 16 or 32 bytes of unscaled
integer per item, exactly as stored, never through floats.  pyarrow is
imported by the callers (the functions take the module).
"""

from __future__ import annotations

import numpy as np

from ..category.types import category
from ..decimal.types import decimal
from ..decimal.meta import DecimalMeta, decode_decimals, encode_decimals
from ..list.meta import ListType, MapType
from ..list.interop_arrow import arrow_list_type, is_arrow_list, list_arrow_type
from .codec import plain_item
from .types import (ARROW_TYPE_HOOKS, KIND_OF_ARROW_HOOKS, arrow_type_of,
                           column_type_of_arrow, struct)

__all__ = ["column_kind_of_arrow", "composite_arrow_type", "composite_from_arrow",
           "composite_to_arrow", "is_composite", "struct_categories"]


def is_composite(kind) -> bool:
    """Whether ``kind`` (what a column's ``column_type`` gives) is a decimal or struct type."""
    return isinstance(kind, (decimal, struct))


def composite_arrow_type(kind):
    """The Arrow type of a decimal or struct column of type ``kind``."""
    return arrow_type_of(kind)


def _decimal_to_arrow(pa, items: np.ndarray, kind: decimal, name: str):
    typ = arrow_type_of(kind)
    missing = np.fromiter((v is None for v in items.tolist()), dtype=bool, count=len(items))
    values = [0 if m else v for v, m in zip(items.tolist(), missing.tolist())]
    raw = encode_decimals(values, kind.meta, f"column {name!r}")
    validity = None
    if missing.any():
        validity = pa.py_buffer(np.packbits(~missing, bitorder="little").tobytes())
    return pa.Array.from_buffers(typ, len(items), [validity, pa.py_buffer(raw.tobytes())],
                                 null_count=int(missing.sum()))


def composite_to_arrow(pa, block: np.ndarray, kind, name: str):
    """A block of a decimal or struct column (an object array of Decimals or
    dicts, None for a missing item) as an Arrow array of :func:`composite_arrow_type`.

    Raises
    ------
    TypeError, ValueError
        Items that are not of the column's type (naming the column).
    """
    if isinstance(kind, decimal):
        return _decimal_to_arrow(pa, block.reshape(-1), kind, name)
    return pa.array([plain_item(v) for v in block.reshape(-1).tolist()], type=arrow_type_of(kind))


def composite_from_arrow(pa, arr, kind, name: str) -> np.ndarray:
    """Arrow values of a decimal or struct column as an object array of its
    items (Decimal or dict; None for a null).  Decimals are read from the
    array's data buffer, exactly."""
    if isinstance(arr, pa.ChunkedArray):
        arr = pa.concat_arrays(arr.chunks) if arr.num_chunks else pa.array([], arr.type)
    if isinstance(kind, decimal) and pa.types.is_decimal(arr.type):
        width = arr.type.byte_width
        raw = np.frombuffer(arr.buffers()[1], dtype=f"V{width}",
                            count=arr.offset + len(arr))[arr.offset:]
        out = decode_decimals(raw, DecimalMeta(arr.type.precision, arr.type.scale, width * 8))
        if arr.null_count:
            out[np.asarray(arr.is_null())] = None
        return out
    items = arr.to_pylist()
    return np.fromiter(items, dtype=object, count=len(items))


def column_kind_of_arrow(typ, nullable: bool = True):
    """The decimal or struct type of a column of Arrow type ``typ``, else None
    (a struct is ``nullable`` as its field says).

    Raises
    ------
    TypeError
        A struct with a field of a type no column kind holds.
    """
    return column_type_of_arrow(typ, nullable)


def struct_categories(pa, kind, arr):
    """``kind``, the struct type of an Arrow column, with each categorical field
    (at any depth) that has no categories taking those of that field's
    dictionary in ``arr`` (a StructArray: the column's first block), in its
    order, as a dictionary column takes the first batch's.

    Raises
    ------
    ValueError
        A dictionary with nulls or repeated values (no categories).
    """
    fields = []
    for i, (name, typ, flag) in enumerate(kind.fields):
        child = arr.field(i)
        if isinstance(typ, category) and typ.categories is None and \
                pa.types.is_dictionary(child.type):
            values = child.dictionary       # (views as plain text or bytes)
            text = any(getattr(pa.types, f"is_{t}", lambda _: False)(values.type)
                       for t in ("string", "large_string", "string_view"))
            values = values.cast(pa.large_string() if text else pa.large_binary())
            typ = category(values.to_pylist(), child.type.ordered)
        elif isinstance(typ, struct):
            typ = struct_categories(pa, typ, child)
        fields.append((name, typ, flag))
    return struct(fields, nullable=kind.nullable)


def _list_field_type(kind):
    if isinstance(kind, (ListType, MapType)):
        import pyarrow as pa
        return list_arrow_type(pa, kind)
    return None


def _list_field_of_arrow(pa, typ, nullable):
    return arrow_list_type(pa, typ, nullable) if is_arrow_list(pa, typ) else None


# a struct's fields may be lists and maps (kinds/struct/types.py knows no list kind)
if _list_field_type not in ARROW_TYPE_HOOKS:
    ARROW_TYPE_HOOKS.append(_list_field_type)
    KIND_OF_ARROW_HOOKS.append(_list_field_of_arrow)
