"""Struct carrays: the metadata of a new one (its fields' carrays made by the
carray's own rules for their kinds), and ``carray.field(name)``.

Layout: :mod:`bcolz_store.format.struct_meta`.
"""

from __future__ import annotations

import numpy as np

from .carray_edit import composite_items
from .category_type import category
from .decimal_type import decimal, decimal_of
from .errors import LimitError
from .datasets.struct_files import struct_carray_meta
from .format.struct_meta import FieldMeta, StructMeta, field_folders
from .indexing import calc_chunklen, is_int
from .struct_type import struct, struct_of

__all__ = ["column_type_of", "field_carray", "is_struct", "new_struct_meta", "struct_request"]

# bytes per row a field counts for when sizing chunks (text: a guess)
_VAR_ITEM_BYTES = 16


def struct_request(array, dtype) -> struct | None:
    """The :class:`struct` a new carray of ``array`` and ``dtype`` asks for, or None:
    ``dtype`` a :class:`struct`; or no ``dtype`` and ``array`` a struct carray."""
    if isinstance(dtype, struct):
        return dtype
    if dtype is None and isinstance(getattr(array, "column_type", None), struct):
        return array.column_type
    return None


def _item_bytes(kind) -> int:
    if isinstance(kind, np.dtype):
        return kind.itemsize
    if isinstance(kind, struct):
        return sum(_item_bytes(k) for _, k, _ in kind.fields) + kind.nullable
    return getattr(kind, "bits", _VAR_ITEM_BYTES * 8) // 8


def _depth(kind) -> int:
    if not isinstance(kind, struct):
        return 0
    return 1 + max(_depth(k) for _, k, _ in kind.fields)


# struct folders below a ctable column, at most (the dataset layout's MAX_NESTING
# counts the column, the struct levels and a categorical field's categories)
MAX_STRUCT_DEPTH = 12


def new_struct_meta(request: struct, array, cparams, expectedlen, chunklen, to_ndarray,
                    new_meta):
    """The metadata of a new struct carray (and of each field's carray), and
    its initial items (dicts; empty when ``array`` is a carray).

    ``new_meta`` is :func:`bcolz_store.carray_meta.new_meta`, which makes
    each field's metadata by the rules of its kind (a categorical field
    without categories takes them from the initial items).

    Raises
    ------
    TypeError, ValueError
        As the fields' kinds; items that are not dicts (or None) are refused
        when written.
    LimitError
        Structs nested more than ``MAX_STRUCT_DEPTH`` (12) deep.
    """
    if _depth(request) > MAX_STRUCT_DEPTH:
        raise LimitError(f"structs nest {_depth(request)} deep: at most {MAX_STRUCT_DEPTH} "
                         f"can be stored and read back")
    source = hasattr(type(array), "_iterblocks")
    items = np.empty(0, dtype=object) if source else composite_items(array, where="new carray")
    expectedlen = int((len(array) if source else len(items)) if expectedlen is None
                      else expectedlen)
    if chunklen is None:
        chunklen = calc_chunklen(expectedlen, max(_item_bytes(request), 1))
    elif not is_int(chunklen) or chunklen < 1:
        raise ValueError("chunklen must be a positive integer")
    folders = field_folders(request.names)
    fields = []
    for name, kind, flag in request.fields:
        wanted = isinstance(kind, (category, struct)) and not source
        values = [item[name] for item in items.tolist() if isinstance(item, dict)
                  and name in item and item[name] is not None] if wanted else []
        sample = composite_items(values) if isinstance(kind, struct) else values
        nullable = None                 # a field that may hold nulls: a nullable carray
        if flag and isinstance(kind, decimal) and kind.nullable is None:
            kind = decimal(kind.precision, kind.scale, True)
        elif flag and isinstance(kind, np.dtype) and kind.kind not in "OV":
            nullable = True
        fmeta, _ = new_meta(sample, cparams, kind, None, expectedlen, int(chunklen),
                            to_ndarray, nullable)
        if fmeta.chunklen != int(chunklen) or (fmeta.composite is None and fmeta.atom.shape):
            raise TypeError(f"struct field {name!r}: its carray cannot share the struct's "
                            f"chunks")
        fields.append(FieldMeta(name, folders.get(name, name), flag, fmeta))
    smeta = StructMeta(fields, request.nullable)
    return struct_carray_meta(smeta, cparams, int(chunklen), expectedlen), items


def column_type_of(meta, engine):
    """The :class:`~bcolz_store.decimal` or :class:`struct` type of a carray of
    metadata ``meta`` and engine ``engine``, else None."""
    return decimal_of(meta) or struct_of(meta, engine)


def is_struct(meta) -> bool:
    """Whether ``meta`` describes a struct carray (whose ``c['name']`` is a field)."""
    return isinstance(getattr(meta, "composite", None), StructMeta)


def field_carray(self, name):
    """Field ``name`` of this struct carray, as a read-only carray sharing its
    engine (rows appended but not yet flushed included).

    Parameters
    ----------
    name : str
        The field's name, as the struct type gives it.

    Returns
    -------
    carray
        Of the field's kind and the struct's length; mode ``'r'`` (write
        through the struct carray: a field alone cannot change length).

    Raises
    ------
    TypeError
        When this carray is not a struct carray.
    KeyError
        When it has no such field.
    """
    smeta = self._meta.composite
    if not isinstance(smeta, StructMeta):
        raise TypeError("only struct carrays have fields")
    engine = self._engine.field_engine(name)
    field = next(f for f in smeta.fields if f.name == name)
    out = self.view()
    out._engine = engine
    out._meta = field.meta
    out._mode = "r"
    return out
