"""Nullable columns and Arrow: the validity as Arrow's validity bitmap.

A nullable column (:mod:`bcolz_store.kinds.nullable.types`) is written with its
null items as Arrow nulls (a float NaN stays a NaN value, as Arrow keeps
it) and recorded as ``"nullable": true`` in the column's entry of the schema
metadata (:mod:`.arrow_meta`).  Read back, a column so recorded, or a column
of a file bcolz_store did not write that holds nulls and is of a fixed
non-temporal type (integers, unsigned, bool, float16/32/64, binary, string,
fixed_size_binary), becomes a nullable column whose null items are Arrow's
nulls, so a Parquet file round-trips exactly.  Temporal columns without the
record keep their earlier reading: a null is NaT.

pyarrow is passed in by the callers, which import it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["column_reader", "masked_from_arrow", "masked_to_arrow", "nullable_names"]


def masked_to_arrow(pa, block: np.ma.MaskedArray, plain):
    """The Arrow array of a nullable column's ``block``: ``plain(data)`` (the
    column's conversion of the values) with the null items null."""
    pc = _compute()
    arr = plain(np.ascontiguousarray(block.data))
    mask = np.ma.getmaskarray(block)
    mask = mask.reshape(len(block), -1).any(axis=1) if mask.ndim > 1 else mask
    if not mask.any():
        return arr
    return pc.if_else(pa.array(~mask), arr, pa.scalar(None, type=arr.type))


def _compute():
    import pyarrow.compute as pc
    return pc


def _zero(pa, typ):
    """A scalar of ``typ`` that stands in for a null while the values convert."""
    t = pa.types
    if t.is_boolean(typ):
        return pa.scalar(False, type=typ)
    if t.is_integer(typ) or t.is_floating(typ):
        return pa.scalar(np.zeros((), dtype=typ.to_pandas_dtype())[()], type=typ)
    if t.is_fixed_size_binary(typ):
        return pa.scalar(bytes(typ.byte_width), type=typ)
    if t.is_binary(typ) or t.is_large_binary(typ):
        return pa.scalar(b"", type=typ)
    if t.is_string(typ) or t.is_large_string(typ):
        return pa.scalar("", type=typ)
    return None                     # temporal: the conversion makes nulls NaT


def masked_from_arrow(pa, arr, convert) -> np.ma.MaskedArray:
    """The values of Arrow array ``arr`` (``convert(arr)``: the column's
    conversion, which refuses nulls) as a masked array, Arrow's nulls masked."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    mask = arr.is_null().to_numpy(zero_copy_only=False)
    if mask.any() and not _temporal(pa, arr.type):
        # a neighbour's value stands in (a width check never sees a stand-in)
        pc = _compute()
        arr = pc.fill_null_backward(pc.fill_null_forward(arr))
        zero = _zero(pa, arr.type)
        if arr.null_count and zero is not None:
            arr = arr.fill_null(zero)
    values = convert(arr)
    full = mask.reshape((-1,) + (1,) * (values.ndim - 1))
    return np.ma.MaskedArray(values, mask=np.broadcast_to(full, values.shape).copy()
                             if values.ndim > 1 else mask)


def _temporal(pa, typ) -> bool:
    t = pa.types
    return t.is_timestamp(typ) or t.is_date(typ) or t.is_duration(typ) or t.is_time(typ)


def nullable_names(pa, schema, meta: dict, names, vlens: dict, batches, blen: int) -> set:
    """The columns of ``names`` that become nullable: recorded so in ``meta``
    (the schema metadata), or, with no record of the column, of a fixed
    non-temporal Arrow type and holding nulls (``batches(names, blen)``
    read once to count them)."""
    out, scan = set(), []
    recorded = meta.get("columns", {}) if isinstance(meta, dict) else {}
    for name in names:
        if name in vlens:
            continue
        entry = recorded.get(name)
        if isinstance(entry, dict) and "dtype" in entry:
            if entry.get("nullable") is True:
                out.add(name)
            continue
        typ = schema.field(name).type
        if schema.field(name).nullable and not _temporal(pa, typ) and \
                not pa.types.is_fixed_size_list(typ):
            scan.append(name)
    if scan:
        for batch in batches(scan, blen):
            for name in scan:
                if name not in out and batch.column(name).null_count:
                    out.add(name)
    return out


def column_reader(pa, atoms: dict, vlens: dict, nulls: set, convert):
    """``read(batch, name)``: the values of column ``name`` of a record batch,
    a masked array for the columns of ``nulls`` (``convert(pa, arr, atom,
    name, vlen)``: :func:`.arrow_types.from_arrow_array`)."""
    def read(batch, name):
        if name in nulls:
            return masked_from_arrow(pa, batch.column(name),
                                     lambda arr: convert(pa, arr, atoms[name], name))
        return convert(pa, batch.column(name), atoms[name], name, vlens.get(name))
    return read
