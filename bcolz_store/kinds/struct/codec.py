"""Struct rows <-> the fields' engines, as Arrow buffers.

A struct carray keeps one carray per field (and a ``bool`` carray of
validity when items may be missing; layout in
:mod:`bcolz_store.kinds.struct.meta`).  Its Arrow buffers are the struct's
validity plus one child per field, so encoding hands each child to its
field's engine and decoding gathers each field's rows as a child:

* a field of a registered column kind (``kind_of(field meta)``) encodes and
  decodes through that kind;
* a field of a fixed dtype (a plain or nullable carray) takes the child's
  ``values`` (and validity) as numpy arrays, as they are;
* any other field (a kind not registered) goes through pyarrow: the child as
  a pyarrow array, converted to numpy items for the field's engine, and its
  numpy rows back to Arrow with ``pyarrow.array``.

A missing struct stores each field's fill item (as dict items do), so that
the fields' own reads are the same whichever way rows were written.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...chunks.engine import ChunkEngine
from ..nullable.engine import NullableEngine
from ...items import masked_to_objects
from ..arrow import from_pyarrow, to_pyarrow
from ..base import kind_of
from ..buffers import ArrowBuffers

__all__ = ["decode_struct", "encode_struct", "plain_item"]


def _fixed_values(values: np.ndarray, atom: np.dtype, where: str) -> np.ndarray:
    """A child's fixed ``values`` as the field's dtype ``atom`` (a view where
    only numpy's name for the bytes differs: timestamps as int64)."""
    if values.dtype == atom:
        return values
    if values.dtype.itemsize == atom.itemsize and atom.kind in "mM" and values.dtype.kind == "i":
        return values.view(atom)
    if np.can_cast(values.dtype, atom, casting="safe"):
        return values.astype(atom)
    raise ValueError(f"{where}: Arrow values of {values.dtype} do not fit the field's {atom}")


def _fill_missing(values: np.ndarray, absent: np.ndarray | None, fill) -> np.ndarray:
    """``values`` with ``fill`` where ``absent`` (a missing struct), copied only then."""
    if absent is None:
        return values
    out = np.array(values, copy=True)
    out[absent] = fill if fill is not None else 0
    return out


def _fixed_part(engine, child: ArrowBuffers, absent, fill, where):
    """What a fixed-dtype field's engine appends for ``child``."""
    if isinstance(engine, NullableEngine):
        atom = engine.values.atom.base
        values = _fill_missing(_fixed_values(child.values, atom, where), absent, fill)
        valid = np.ones(child.length, dtype=bool) if child.validity is None else \
            np.array(child.validity, dtype=bool, copy=True)
        if absent is not None:
            valid[absent] = True
        return values, valid
    values = _fixed_values(child.values, engine.atom.base, where)
    if child.validity is not None:
        missing = ~child.validity if absent is None else ~child.validity & ~absent
        if missing.any():
            raise ValueError(f"{where}: row {int(np.argmax(missing))} is null, and the field "
                             f"holds no missing items")
    return _fill_missing(values, absent, fill)


def _kind_child(child: ArrowBuffers, absent, fill) -> ArrowBuffers:
    """A child for a field's kind: at a missing struct's rows, a fixed-size
    child holds the field's fill (present); other layouts pass as they are."""
    if absent is None or child.offsets is not None or child.values is None or \
            child.children or child.dictionary is not None or fill is None:
        return child
    try:
        values = _fill_missing(child.values, absent, fill)
    except (TypeError, ValueError):
        return child
    validity = None
    if child.validity is not None:
        validity = child.validity | absent
    return dataclasses.replace(child, values=values, validity=validity)


def _unviewed(pa, typ):
    """``typ`` with a view type as its large type (the layout its buffers have)."""
    if pa.types.is_string_view(typ):
        return pa.large_string()
    if pa.types.is_binary_view(typ):
        return pa.large_binary()
    return typ


def encode_struct(pa, engine, buffers: ArrowBuffers, field_metas, field_types) -> None:
    """Append the struct ``buffers`` to the StructEngine ``engine``.

    ``field_metas`` are the fields' ``CarrayMeta`` (in order),
    ``field_types`` their Arrow types (those of ``buffers.type``, when it is
    a struct type, instead: the children's own).

    Raises
    ------
    ValueError
        A missing struct where the carray holds none, a null in a field that
        holds none, a child count that is not the fields', values a field
        cannot hold (naming the field).
    """
    where = getattr(engine, "where", "struct carray")
    if len(buffers.children) != len(engine.fields):
        raise ValueError(f"{where}: Arrow rows with {len(buffers.children)} fields; the "
                         f"struct has {len(engine.fields)}")
    absent = None
    if buffers.validity is not None and buffers.null_count:
        if engine.validity is None:
            raise ValueError(f"{where}: row {int(np.argmax(~buffers.validity))} is null, and "
                             f"this struct carray holds no missing items")
        absent = ~buffers.validity
    if buffers.type is not None and getattr(buffers.type, "num_fields", None) == \
            len(field_types):
        field_types = [_unviewed(pa, buffers.type.field(i).type)
                       for i in range(buffers.type.num_fields)]
    writes = []
    for (name, fengine, fill), fmeta, ftype, child in zip(engine.fields, field_metas,
                                                         field_types, buffers.children):
        fwhere = f"{where}: field {name!r}"
        if child.length != buffers.length:
            raise ValueError(f"{fwhere}: {child.length} rows, the struct has {buffers.length}")
        child = dataclasses.replace(child, type=ftype) if child.type is None else child
        fkind = kind_of(fmeta)
        if fkind is not None:
            writes.append((fkind.encode, fengine, _kind_child(child, absent, fill)))
        elif isinstance(fengine, (ChunkEngine, NullableEngine)) and child.values is not None \
                and child.offsets is None and child.values.dtype.kind != "V":
            writes.append((_append, fengine, _fixed_part(fengine, child, absent, fill, fwhere)))
        else:
            items = to_pyarrow(pa, child, ftype).to_numpy(zero_copy_only=False)
            if absent is not None:
                items = np.array(items, dtype=object, copy=True)
                items[absent] = fill
            writes.append((_append, fengine, engine.convert_field(name, fengine, items)))
    for write, fengine, part in writes:
        write(fengine, part)
    if engine.validity is not None:
        engine.validity.append(np.ones(buffers.length, dtype=bool) if absent is None
                               else ~absent)


def _append(engine, part) -> None:
    engine.append(part)


def plain_item(value):
    """An item of a field read as objects, as pyarrow takes it: arrays (a masked
    item None) as lists, recursively."""
    if isinstance(value, dict):
        return {k: plain_item(v) for k, v in value.items()}
    if isinstance(value, np.ma.MaskedArray):
        return [plain_item(v) for v in masked_to_objects(value).tolist()]
    if isinstance(value, np.ndarray):
        return [plain_item(v) for v in value.tolist()] if value.dtype == object else value.tolist()
    if isinstance(value, (list, tuple)):
        return type(value)(plain_item(v) for v in value)
    return value


def _categorical(pa, fengine, rows, ftype):
    """A categorical field's rows as a DictionaryArray of its categories, in
    their order."""
    import pyarrow.compute as pc
    values = pa.array(rows, type=ftype.value_type) if rows.dtype != object else \
        pa.array(rows.tolist(), type=ftype.value_type)
    dictionary = pa.array(fengine.lookup()[:-1].tolist(), type=ftype.value_type)
    indices = pc.index_in(values, value_set=dictionary).cast(ftype.index_type)
    return pa.DictionaryArray.from_arrays(indices, dictionary, ordered=ftype.ordered)


def _field_rows(pa, fengine, fmeta, ftype, start: int, stop: int) -> ArrowBuffers:
    """Rows ``[start, stop)`` of one field as a child's buffers."""
    fkind = kind_of(fmeta)
    if fkind is not None:
        return fkind.decode(fengine, start, stop)
    n = stop - start
    if isinstance(fengine, NullableEngine):
        valid = np.asarray(fengine.valid_range(start, stop), dtype=bool)
        values = fengine.values.read_range(start, stop)
        return ArrowBuffers(n, None if valid.all() else valid, None, values)
    if isinstance(fengine, ChunkEngine) and fengine.atom.kind not in "OSUV" and \
            not fengine.atom.shape:
        return ArrowBuffers(n, None, None, fengine.read_range(start, stop))
    rows = fengine.read_range(start, stop)
    if pa.types.is_dictionary(ftype) and hasattr(fengine, "lookup"):
        return from_pyarrow(pa, _categorical(pa, fengine, rows, ftype))
    if isinstance(rows, np.ma.MaskedArray):
        arr = pa.array(np.ma.getdata(rows), type=ftype, mask=np.ma.getmaskarray(rows))
    elif rows.dtype == object:
        arr = pa.array([plain_item(v) for v in rows.tolist()], type=ftype)
    else:
        arr = pa.array(rows, type=ftype)
    return from_pyarrow(pa, arr)


def decode_struct(pa, engine, start: int, stop: int, field_metas, field_types,
                  typ) -> ArrowBuffers:
    """Rows ``[start, stop)`` of the StructEngine ``engine`` as Arrow buffers of
    the struct type ``typ`` (fields' metadata and Arrow types as for
    :func:`encode_struct`)."""
    children = []
    for (_, fengine, _), fmeta, ftype in zip(engine.fields, field_metas, field_types):
        child = _field_rows(pa, fengine, fmeta, ftype, start, stop)
        children.append(dataclasses.replace(child, type=None))
    validity = None
    if engine.validity is not None:
        valid = np.asarray(engine.validity.read_range(start, stop), dtype=bool)
        validity = None if valid.all() else valid
    return ArrowBuffers(stop - start, validity, None, None, tuple(children), None, typ)
