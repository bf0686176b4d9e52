"""The bytes of one item of a list or map carray (item encoding version 1).

An item is a *sequence* of ``n`` elements of one type ``T``
(kinds/list/meta.py); a map's item is the sequence of its entries, each a
struct of key and value.  A sequence is::

    n        uint32 LE      number of elements
    flags    uint8          bit 0: a validity bitmap follows; other bits 0
    bitmap   ceil(n/8)      only with bit 0: bit i (LSB first) = 1 when
                            element i is present, 0 when it is missing
    payload                 by T:

    fixed dtype D     n * D.itemsize bytes, little-endian, as numpy holds
                      them (NaN payloads, -0.0, NaT exact); a missing
                      element's bytes are zero
    str, bytes        n uint32 LE byte lengths, then the bytes end to end
                      (str as UTF-8; a missing element has length 0)
    decimal           n * 16 bytes: the unscaled value, int128 LE
    list, map         n uint32 LE lengths, then each element's own sequence
                      end to end (a missing element has length 0)
    struct            per field, in order: uint32 LE length, then the
                      sequence of that field's n values (a missing struct's
                      fields are missing too)

A missing whole list is not encoded: the vlen item is missing.  Every size is
checked against the bytes there are before anything is read or allocated;
a damaged item raises :class:`~bcolz_store.errors.FormatError`.

Source: this library's own format (docs/format.md, "List and map columns
(bcolz_store only)"), inside bcolz format v1.0's folder layout (seeds/001).

Pure functions: nothing here opens a file.
"""

from __future__ import annotations

import base64
import binascii
import decimal
import struct

import numpy as np

from ...errors import FormatError, LimitError
from .meta import DecimalItems, ListType, MapType, StructItems

__all__ = ["decode_item", "decode_items", "decode_list_dflt", "encode_item", "encode_items",
           "encode_list_dflt"]

_HDR = struct.Struct("<IB")
_U32 = np.dtype("<u4")
_MAX_LEN = 2 ** 32 - 1
_OBJ_BYTES = 64             # a guess of the bytes one decoded Python object takes


def _as_list(value, where: str) -> list:
    if isinstance(value, (str, bytes, bytearray, dict)) or not hasattr(value, "__len__"):
        raise TypeError(f"{where}: a list item must be a list, tuple or 1-d array (or None), "
                        f"not {type(value).__name__}")
    if isinstance(value, np.ndarray) and value.ndim != 1:
        raise ValueError(f"{where}: a list item must be one-dimensional, not of shape "
                         f"{value.shape}")
    return value


def _entries(value, where: str):
    """A map value as a list of (key, value) pairs."""
    if isinstance(value, dict):
        return list(value.items())
    value = _as_list(value, where)
    out = []
    for pair in value:
        if isinstance(pair, dict) and len(pair) == 2 and "key" in pair and "value" in pair:
            pair = (pair["key"], pair["value"])
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"{where}: a map entry is a (key, value) pair, not {pair!r:.60}")
        out.append(pair)
    return out


def _header(n: int, mask) -> bytes:
    if n > _MAX_LEN:
        raise ValueError(f"a list of {n} elements is longer than 2**32-1")
    if mask is None:
        return _HDR.pack(n, 0)
    return _HDR.pack(n, 1) + np.packbits(~mask, bitorder="little").tobytes()


def _fixed(values, dtype: np.dtype, may_null: bool, where: str) -> bytes:
    try:
        return _fixed_elements(values, dtype, may_null, where)
    except OverflowError as err:
        raise ValueError(f"{where}: {err}") from None
    except (TypeError, ValueError) as err:
        if str(err).startswith(where):
            raise
        raise type(err)(f"{where}: list elements of {dtype}: {err}") from None


def _fixed_elements(values, dtype: np.dtype, may_null: bool, where: str) -> bytes:
    mask = None
    if isinstance(values, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(values)      # (masked slots hold zeros; NumPy 1.26's
        data = np.array(np.ma.getdata(values), dtype=dtype)     # filled() wants a scalar)
        if mask.any():
            data[mask] = np.zeros((), dtype)
    elif isinstance(values, np.ndarray) and values.dtype.kind != "O":
        data = np.asarray(values, dtype=dtype)
    else:
        values = list(values)
        nulls = [v is None for v in values] if may_null or None in values else None
        if nulls is not None and any(nulls):
            mask = np.array(nulls, dtype=bool)
            zero = np.zeros((), dtype)[()]
            values = [zero if m else v for v, m in zip(values, nulls)]
        data = np.asarray(values, dtype=dtype) if values else np.empty(0, dtype)
    if data.ndim != 1:
        raise ValueError(f"{where}: list elements of {dtype} must be scalars, found shape "
                         f"{data.shape[1:]}")
    if mask is not None:
        if not mask.any():
            mask = None
        elif not may_null:
            raise ValueError(f"{where}: a missing element (None) in a list whose elements "
                             f"may not be missing")
        else:
            data = data.copy()
            data[mask] = np.zeros((), dtype)
    return _header(len(data), mask) + np.ascontiguousarray(data, dtype=dtype).tobytes()


def _text(value, typ: str, where: str) -> bytes:
    if typ == "str":
        if not isinstance(value, str):
            raise TypeError(f"{where}: a str element must be str, not {type(value).__name__}")
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError as err:
            raise ValueError(f"{where}: {value!r:.40} cannot be stored as UTF-8 "
                             f"({err.reason})") from None
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"{where}: a bytes element must be bytes, not {type(value).__name__}")
    return bytes(value)


def _decimal(value, typ: DecimalItems, where: str) -> bytes:
    if not isinstance(value, (decimal.Decimal, int)) or isinstance(value, bool):
        raise TypeError(f"{where}: a decimal element must be a decimal.Decimal or int, not "
                        f"{type(value).__name__}")
    d = decimal.Decimal(value)
    if not d.is_finite():
        raise ValueError(f"{where}: {d} cannot be a decimal128 element")
    sign, digits, exp = d.as_tuple()
    shift = exp + typ.scale
    unscaled = int("".join(map(str, digits)) or "0")
    if shift >= 0:
        unscaled *= 10 ** shift
    elif unscaled % 10 ** -shift:
        raise ValueError(f"{where}: {d} has more than {typ.scale} digits after the point")
    else:
        unscaled //= 10 ** -shift
    if len(str(unscaled)) > typ.precision:
        raise ValueError(f"{where}: {d} has more than {typ.precision} digits")
    return (-unscaled if sign else unscaled).to_bytes(16, "little", signed=True)


def _sequence(values, typ, may_null: bool, where: str) -> bytes:
    """The sequence of ``values`` (elements of ``typ``)."""
    if isinstance(typ, np.dtype):
        return _fixed(values, typ, may_null, where)
    values = list(values)
    nulls = [v is None for v in values]
    mask = np.array(nulls, dtype=bool) if any(nulls) else None
    if mask is not None and not may_null:
        raise ValueError(f"{where}: a missing element (None) where elements may not be "
                         f"missing")
    if isinstance(typ, StructItems):
        return _header(len(values), mask) + _struct(values, typ, nulls, where)
    if isinstance(typ, DecimalItems):
        return _header(len(values), mask) + b"".join(
            bytes(16) if v is None else _decimal(v, typ, where) for v in values)
    if typ in ("str", "bytes"):
        parts = [b"" if v is None else _text(v, typ, where) for v in values]
    else:
        parts = [b"" if v is None else encode_item(v, typ, where) for v in values]
    lengths = np.array([len(p) for p in parts], dtype=np.int64)
    if lengths.size and lengths.max() > _MAX_LEN:
        raise ValueError(f"{where}: an element of more than 2**32-1 bytes")
    return _header(len(values), mask) + lengths.astype(_U32).tobytes() + b"".join(parts)


def _struct(rows: list, typ: StructItems, nulls: list, where: str) -> bytes:
    out = []
    names = [f[0] for f in typ.fields]
    pairs = rows and all(isinstance(r, (tuple, list)) or r is None for r in rows)
    for k, (name, ftyp, fnull) in enumerate(typ.fields):
        if pairs:
            col = [None if r is None else r[k] for r in rows]
        else:
            col = []
            for r in rows:
                if r is None:
                    col.append(None)
                elif not isinstance(r, dict):
                    raise TypeError(f"{where}: a struct element is a dict, not "
                                    f"{type(r).__name__}")
                else:
                    col.append(r.get(name))
        part = _sequence(col, ftyp, fnull or any(nulls), f"{where}: field {name!r}")
        out.append(struct.pack("<I", len(part)) + part)
    if not pairs:
        for r in rows:
            if r is not None and set(r) - set(names):
                raise ValueError(f"{where}: struct element has fields "
                                 f"{sorted(map(str, set(r) - set(names)))} not in {names}")
    return b"".join(out)


def encode_item(value, typ, where: str = "list item") -> bytes:
    """The bytes of one present list (or map) ``value`` of type ``typ``.

    Parameters
    ----------
    value : list, tuple, 1-d numpy array (masked arrays: masked elements
        missing); a map: a dict or a list of (key, value) pairs
    typ : ListType or MapType

    Raises
    ------
    TypeError
        A value or element of another type.
    ValueError
        A missing element where none may be, a list whose length is not the
        type's ``size``, text that is not UTF-8, a decimal that does not fit.
    """
    if isinstance(typ, MapType):
        return _sequence(_entries(value, where), typ.entries, False, where)
    value = _as_list(value, where)
    if typ.size is not None and len(value) != typ.size:
        raise ValueError(f"{where}: a list of {len(value)} elements where every list has "
                         f"{typ.size}")
    item = typ.item
    if isinstance(item, np.dtype) and type(value) is np.ndarray and value.dtype == item \
            and value.ndim == 1:
        return _HDR.pack(len(value), 0) + value.tobytes()       # the common case, fast
    return _sequence(value, item, typ.item_nullable, where)


def encode_items(values, typ, where: str = "list carray") -> np.ndarray:
    """An object array of the bytes of each item of ``values`` (None: missing).

    Raises
    ------
    ValueError
        A missing item when the type is not nullable; as :func:`encode_item`.
    TypeError
        As :func:`encode_item`.
    """
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        if v is None:
            if not typ.nullable:
                raise ValueError(f"{where}: item {i} is None and this list type is not "
                                 f"nullable")
            continue
        out[i] = encode_item(v, typ, f"{where}: item {i}")
    return out


# --------------------------------------------------------------------- decoding

def _unchecked(nbytes: int, what: str) -> None:
    """No check of an allocation (the caller passes limits.check_alloc)."""


def _damaged(where: str, why: str) -> FormatError:
    return FormatError(f"{where}: damaged list item: {why}")


def _objects(items, n: int) -> np.ndarray:
    out = np.empty(n, dtype=object)
    for i, v in enumerate(items):
        out[i] = v
    return out


def _lengths(buf, pos: int, end: int, n: int, where: str):
    if n * 4 > end - pos:
        raise _damaged(where, f"{n} lengths need {n * 4} bytes, {end - pos} are left")
    lengths = np.frombuffer(buf, _U32, n, pos).astype(np.int64)
    pos += n * 4
    if int(lengths.sum()) > end - pos:
        raise _damaged(where, f"elements of {int(lengths.sum())} bytes, {end - pos} are left")
    return lengths, pos


def _seq(buf, pos: int, end: int, typ, where: str, check, tuples: bool = False):
    """``(values, n, pos)`` of the sequence at ``pos`` (before ``end``)."""
    if end - pos < _HDR.size:
        raise _damaged(where, "truncated header")
    n, flags = _HDR.unpack_from(buf, pos)
    pos += _HDR.size
    if flags & ~1:
        raise _damaged(where, f"unknown flags {flags:#x}")
    valid = None
    if flags:
        nb = (n + 7) // 8
        if nb > end - pos:
            raise _damaged(where, "truncated validity bitmap")
        valid = np.unpackbits(np.frombuffer(buf, np.uint8, nb, pos), count=n,
                              bitorder="little").astype(bool)
        pos += nb
    if isinstance(typ, np.dtype):
        need = n * typ.itemsize
        if need > end - pos:
            raise _damaged(where, f"{n} elements of {typ} need {need} bytes, {end - pos} "
                                  f"are left")
        arr = np.frombuffer(buf, typ, n, pos).copy()
        if valid is not None and not valid.all():
            arr = np.ma.MaskedArray(arr, mask=~valid)
        return arr, n, pos + need
    if isinstance(typ, DecimalItems):
        if n * 16 > end - pos:
            raise _damaged(where, f"{n} decimals need {n * 16} bytes")
        check(n * _OBJ_BYTES, f"{where}: decoding {n} decimals")
        raw = bytes(buf[pos:pos + n * 16])
        vals = [decimal.Decimal(f"{int.from_bytes(raw[16 * i:16 * i + 16], 'little', signed=True)}"
                                f"E{-typ.scale}") for i in range(n)]
        if valid is not None:
            vals = [v if ok else None for v, ok in zip(vals, valid)]
        return _objects(vals, n), n, pos + n * 16
    if isinstance(typ, StructItems):
        return _struct_rows(buf, pos, end, n, valid, typ, where, check, tuples)
    lengths, pos = _lengths(buf, pos, end, n, where)
    check(n * _OBJ_BYTES, f"{where}: decoding {n} elements")
    vals = []
    for i, size in enumerate(lengths.tolist()):
        if valid is not None and not valid[i]:
            if size:
                raise _damaged(where, f"missing element {i} has {size} bytes")
            vals.append(None)
        elif typ == "bytes":
            vals.append(bytes(buf[pos:pos + size]))
        elif typ == "str":
            try:
                vals.append(bytes(buf[pos:pos + size]).decode("utf-8"))
            except UnicodeDecodeError as err:
                raise _damaged(where, f"element {i} is not UTF-8 ({err.reason})") from None
        else:
            vals.append(_value(buf, pos, pos + size, typ, where, check))
        pos += size
    return _objects(vals, n), n, pos


def _struct_rows(buf, pos, end, n, valid, typ: StructItems, where, check, tuples):
    if n * len(typ.fields) > end - pos:         # every field's value takes a byte at least
        raise _damaged(where, f"{n} structs of {len(typ.fields)} fields in {end - pos} bytes")
    check(n * _OBJ_BYTES * (1 + len(typ.fields)), f"{where}: decoding {n} structs")
    cols = []
    for name, ftyp, _ in typ.fields:
        if end - pos < 4:
            raise _damaged(where, f"field {name!r}: truncated length")
        (size,) = struct.unpack_from("<I", buf, pos)
        pos += 4
        if size > end - pos:
            raise _damaged(where, f"field {name!r}: {size} bytes, {end - pos} are left")
        vals, count, stop = _seq(buf, pos, pos + size, ftyp, where, check)
        if count != n or stop != pos + size:
            raise _damaged(where, f"field {name!r} holds {count} values in {stop - pos} of "
                                  f"{size} bytes, for {n} structs")
        cols.append(_elements(vals))
        pos += size
    names = [f[0] for f in typ.fields]
    rows = [tuple(r) if tuples else dict(zip(names, r)) for r in zip(*cols)] if cols else []
    if valid is not None:
        rows = [r if ok else None for r, ok in zip(rows, valid)]
    return (rows if tuples else _objects(rows, n)), n, pos


def _elements(vals) -> list:
    """The elements of a decoded sequence as a list (None where missing)."""
    if isinstance(vals, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(vals)
        return [None if m else v for v, m in zip(vals.data, mask)]
    return list(vals)


def _value(buf, pos: int, end: int, typ, where: str, check):
    """The list (or map) encoded in ``buf[pos:end]``, every byte used."""
    if isinstance(typ, MapType):
        vals, n, stop = _seq(buf, pos, end, typ.entries, where, check, tuples=True)
    else:
        vals, n, stop = _seq(buf, pos, end, typ.item, where, check)
        if typ.size is not None and n != typ.size:
            raise _damaged(where, f"a list of {n} elements where every list has {typ.size}")
    if stop != end:
        raise _damaged(where, f"{end - stop} bytes left over")
    return vals


def decode_item(data, typ, where: str = "list item", check=None):
    """The value of one present item from its bytes (see the module's docstring).

    Returns
    -------
    numpy.ndarray (a ``numpy.ma.MaskedArray`` when elements are missing) of
    a fixed element dtype; an object array of str/bytes/Decimal/None, of
    nested values, or of dicts (struct elements); a list of (key, value)
    tuples for a map.

    Raises
    ------
    FormatError
        Damaged bytes: any size beyond the data, bytes left over, unknown
        flags, text that is not UTF-8.
    LimitError
        From ``check(nbytes, what)``, called before the Python objects of
        a sequence are made (``bcolz_store.limits.check_alloc``; None: no
        check).
    """
    try:
        return _value(data, 0, len(data), typ, where, check or _unchecked)
    except (struct.error, ValueError) as err:
        if isinstance(err, (FormatError, LimitError)):
            raise
        raise _damaged(where, str(err)) from None


def _fast_fixed(raw: list, typ: ListType, where: str):
    """The lists of a fixed dtype, none with missing elements, decoded at once
    (None when any has a bitmap, or a size disagrees: the slow way tells)."""
    dtype = typ.item
    lens = np.fromiter(map(len, raw), dtype=np.int64, count=len(raw))
    if not len(raw) or lens.min() < _HDR.size:
        return None
    joined = np.frombuffer(b"".join(raw), np.uint8)
    offs = np.cumsum(lens) - lens
    cols = offs[:, None] + np.arange(_HDR.size)
    hdr = joined[cols]
    n = np.ascontiguousarray(hdr[:, :4]).view(_U32).ravel().astype(np.int64)
    if hdr[:, 4].any() or (lens != _HDR.size + n * dtype.itemsize).any():
        return None
    if typ.size is not None and (n != typ.size).any():
        return None
    keep = np.ones(len(joined), dtype=bool)
    keep[cols.ravel()] = False
    values = joined[keep].view(dtype)
    ends = np.cumsum(n).tolist()
    return [values[a:b] for a, b in zip([0] + ends[:-1], ends)]


def decode_items(raw, typ, where: str = "list carray", check=None) -> np.ndarray:
    """An object array of the values of the encoded items ``raw`` (None: missing).

    Lists of a fixed dtype without missing elements are decoded in one pass
    (their arrays share one buffer).

    Raises
    ------
    FormatError, LimitError
        As :func:`decode_item`.
    """
    n = len(raw)
    out = np.empty(n, dtype=object)
    present = [i for i, r in enumerate(raw) if r is not None] if n else []
    if not present:
        return out
    items = [raw[i] for i in present]
    if isinstance(typ, ListType) and isinstance(typ.item, np.dtype):
        found = _fast_fixed(items, typ, where)
        if found is not None:
            if len(present) == n:
                for i, v in enumerate(found):
                    out[i] = v
            else:
                for i, v in zip(present, found):
                    out[i] = v
            return out
    for i, r in zip(present, items):
        out[i] = decode_item(r, typ, f"{where}: item {i}", check)
    return out


def encode_list_dflt(value, typ):
    """The JSON ``dflt`` of a list carray: null (a missing list) or the base64
    text of the encoded item."""
    if value is None:
        return None
    return base64.b64encode(encode_item(value, typ, "dflt")).decode("ascii")


def decode_list_dflt(value, typ, where: str = "meta/storage"):
    """The fill value the JSON ``dflt`` of a list carray stands for.

    Raises
    ------
    FormatError
        Neither null nor the base64 text of an item of the type (nor null
        for a type that is not nullable).
    """
    if value is None:
        if not typ.nullable:
            raise FormatError(f"{where}: dflt null for a list type that is not nullable")
        return None
    if not isinstance(value, str) or len(value) > 1 << 20:
        raise FormatError(f"{where}: dflt of a list carray must be null or base64 text")
    try:
        data = base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as err:
        raise FormatError(f"{where}: dflt of a list carray is not base64 ({err})") from None
    return decode_item(data, typ, f"{where}: dflt")
