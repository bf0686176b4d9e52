"""pyarrow arrays <-> :class:`~bcolz_store.kinds.buffers.ArrowBuffers`, without a copy
where Arrow's layout and numpy's agree (fixed items, offsets, bytes).

pyarrow is imported by the caller and passed in (``pa``), so that importing
this module loads nothing (``pip install 'bcolz_store[arrow]'`` for it).
Source: the Arrow columnar format (https://arrow.apache.org/docs/format/Columnar.html).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .buffers import ArrowBuffers

__all__ = ["from_pyarrow", "to_pyarrow", "unpack_validity"]


def unpack_validity(buf, offset: int, length: int) -> np.ndarray | None:
    """The ``bool`` validity of ``length`` rows from Arrow's bitmap ``buf`` (a
    pyarrow Buffer or None) starting at bit ``offset``; None when ``buf`` is."""
    if buf is None:
        return None
    bits = np.frombuffer(buf, dtype=np.uint8)
    return np.unpackbits(bits, bitorder="little", count=offset + length)[offset:].view(bool)


def _fixed_dtype(pa, typ) -> np.dtype:
    """The numpy dtype of one item of the fixed-width Arrow type ``typ``."""
    if pa.types.is_decimal(typ) or pa.types.is_fixed_size_binary(typ):
        return np.dtype((np.void, typ.byte_width))
    return np.dtype(typ.to_pandas_dtype()) if not pa.types.is_temporal(typ) else \
        np.dtype(f"<i{typ.bit_width // 8}")


def from_pyarrow(pa, arr) -> ArrowBuffers:
    """The buffers of a pyarrow Array (or ChunkedArray, combined first), with
    its Arrow type as ``type``.

    Views of ``arr``'s memory where the layouts agree; a bitmap (validity,
    ``bool`` values) is unpacked into a new array.  A view type (``string_view``,
    ``binary_view``) is cast to its large type first; an extension type's
    buffers are its storage's (``type`` stays the extension type).

    Raises
    ------
    TypeError
        A type with no buffers layout here (unions, run-end encoded).
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if pa.types.is_string_view(arr.type) or pa.types.is_binary_view(arr.type):
        arr = arr.cast(pa.large_string() if pa.types.is_string_view(arr.type)
                       else pa.large_binary())
    typ = arr.type
    if isinstance(typ, pa.BaseExtensionType):   # (its layout is its storage's)
        arr = arr.storage
    out = _from_pyarrow(pa, arr)
    return dataclasses.replace(out, type=typ) if out.type is None else out


def _from_pyarrow(pa, arr) -> ArrowBuffers:
    """:func:`from_pyarrow` of an Array; children without their ``type``."""
    typ = arr.type
    if pa.types.is_string_view(typ):
        arr, typ = arr.cast(pa.large_string()), pa.large_string()
    elif pa.types.is_binary_view(typ):
        arr, typ = arr.cast(pa.large_binary()), pa.large_binary()
    n, off, bufs = len(arr), arr.offset, arr.buffers()
    validity = unpack_validity(bufs[0], off, n) if arr.null_count else None
    if pa.types.is_null(typ):
        return ArrowBuffers(n, np.zeros(n, dtype=bool))
    if pa.types.is_dictionary(typ):
        indices = np.frombuffer(bufs[1], dtype=np.dtype(typ.index_type.to_pandas_dtype()))
        return ArrowBuffers(n, validity, None, indices[off:off + n], (),
                            _from_pyarrow(pa, arr.dictionary))
    if pa.types.is_boolean(typ):
        return ArrowBuffers(n, validity, None, unpack_validity(bufs[1], off, n).copy())
    if pa.types.is_string(typ) or pa.types.is_binary(typ) or \
            pa.types.is_large_string(typ) or pa.types.is_large_binary(typ):
        width = np.int64 if (pa.types.is_large_string(typ) or pa.types.is_large_binary(typ)) \
            else np.int32
        offsets = np.frombuffer(bufs[1], dtype=width)[off:off + n + 1]
        data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None \
            else np.empty(0, dtype=np.uint8)
        return ArrowBuffers(n, validity, offsets, data)
    if pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_map(typ):
        width = np.int64 if pa.types.is_large_list(typ) else np.int32
        offsets = np.frombuffer(bufs[1], dtype=width)[off:off + n + 1]
        return ArrowBuffers(n, validity, offsets, None, (_from_pyarrow(pa, arr.values),))
    if pa.types.is_fixed_size_list(typ):
        size = typ.list_size
        child = arr.values.slice(off * size, n * size)
        return ArrowBuffers(n, validity, None, None, (_from_pyarrow(pa, child),))
    if pa.types.is_struct(typ):
        children = tuple(_from_pyarrow(pa, arr.field(i).slice(0, n) if arr.field(i).offset == off
                                      else arr.field(i)[off:off + n])
                         for i in range(typ.num_fields))
        return ArrowBuffers(n, validity, None, None, children)
    if typ.bit_width and typ.bit_width % 8 == 0 and typ.num_buffers == 2:
        dtype = _fixed_dtype(pa, typ)
        values = np.frombuffer(bufs[1], dtype=dtype, count=off + n) if n else \
            np.empty(0, dtype=dtype)
        return ArrowBuffers(n, validity, None, values[off:off + n])
    raise TypeError(f"Arrow type {typ} has no buffers layout in bcolz_store")


def _buffer(pa, arr: np.ndarray | None):
    return None if arr is None else pa.py_buffer(np.ascontiguousarray(arr))


def to_pyarrow(pa, buffers: ArrowBuffers, typ):
    """A pyarrow Array of type ``typ`` over ``buffers`` (no copy of the data
    buffers; a bitmap is packed from the validity).

    Raises
    ------
    TypeError
        A type with no buffers layout here.
    """
    if isinstance(typ, pa.BaseExtensionType):   # (over an array of its storage type)
        return pa.ExtensionArray.from_storage(typ, to_pyarrow(pa, buffers, typ.storage_type))
    n, bitmap = buffers.length, _buffer(pa, buffers.bitmap())
    nulls = buffers.null_count if bitmap is not None else 0
    if pa.types.is_dictionary(typ):
        dictionary = to_pyarrow(pa, buffers.dictionary, typ.value_type)
        indices = buffers.values.astype(typ.index_type.to_pandas_dtype(), copy=False)
        return pa.DictionaryArray.from_buffers(typ, n, [bitmap, _buffer(pa, indices)],
                                               dictionary, nulls)
    if pa.types.is_null(typ):
        return pa.nulls(n)
    if pa.types.is_boolean(typ):
        values = np.packbits(np.asarray(buffers.values, dtype=bool), bitorder="little")
        return pa.Array.from_buffers(typ, n, [bitmap, _buffer(pa, values)], nulls)
    if buffers.offsets is not None:
        large = pa.types.is_large_string(typ) or pa.types.is_large_binary(typ) or \
            pa.types.is_large_list(typ)
        offsets = buffers.offsets.astype(np.int64 if large else np.int32, copy=False)
        if buffers.values is not None:
            return pa.Array.from_buffers(typ, n, [bitmap, _buffer(pa, offsets),
                                                  _buffer(pa, buffers.values)], nulls)
        child_type = typ.value_type if not pa.types.is_map(typ) else \
            pa.struct([typ.key_field, typ.item_field])
        child = to_pyarrow(pa, buffers.children[0], child_type)
        return pa.Array.from_buffers(typ, n, [bitmap, _buffer(pa, offsets)], nulls,
                                     children=[child])
    if pa.types.is_fixed_size_list(typ):
        child = to_pyarrow(pa, buffers.children[0], typ.value_type)
        return pa.Array.from_buffers(typ, n, [bitmap], nulls, children=[child])
    if pa.types.is_struct(typ):
        children = [to_pyarrow(pa, child, typ.field(i).type)
                    for i, child in enumerate(buffers.children)]
        return pa.Array.from_buffers(typ, n, [bitmap], nulls, children=children)
    if typ.bit_width and typ.bit_width % 8 == 0 and typ.num_buffers == 2:
        return pa.Array.from_buffers(typ, n, [bitmap, _buffer(pa, buffers.values)], nulls)
    raise TypeError(f"Arrow type {typ} has no buffers layout in bcolz_store")
