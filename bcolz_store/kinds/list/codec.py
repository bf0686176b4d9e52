"""List and map items (item encoding version 1, kinds/list/meta_items.py) <->
Arrow buffers, many items at once.

The bytes are exactly those :func:`~bcolz_store.kinds.list.meta_items.encode_item`
gives one item at a time: per item a sequence header (``uint32`` count,
``uint8`` flags), a validity bitmap when an element is missing, then the
payload (fixed elements end to end; for str and bytes the ``uint32`` lengths
then the bytes; for a map, per field a ``uint32`` byte count and the field's
own sequence).  Here every item's header, bitmap and payload is computed
with numpy over all the items (:mod:`.ragged`), so that an Arrow write or
read does no Python work per element.

Elements handled: fixed numpy dtypes (numbers, bools, datetimes and
timedeltas of s/ms/us/ns), ``str`` and ``bytes``; a map's keys and values of
those.  :func:`fast_type` says whether a type is one of these.
"""

from __future__ import annotations

import numpy as np

from .files import list2_element
from ...errors import FormatError
from .meta import ListType, MapType
from ..buffers import ArrowBuffers
from .ragged import interleave, range_indices, take_ranges, u32_rows

__all__ = ["decode_raw", "encode_raw", "fast_type"]

_HEADER = np.dtype([("n", "<u4"), ("flags", "u1")])
_U8 = np.dtype(np.uint8)
_MAX_LEN = 2 ** 32 - 1


def fast_type(typ) -> bool:
    """Whether items of the list or map type ``typ`` are encoded here: elements
    a version-2 child carray takes (:func:`~bcolz_store.kinds.list.files.list2_element`)."""
    if isinstance(typ, MapType):
        return list2_element(typ.key) and list2_element(typ.value)
    return isinstance(typ, ListType) and typ.size is None and list2_element(typ.item)


# --------------------------------------------------------------------- encoding

def _header(counts: np.ndarray, flags: np.ndarray) -> tuple:
    head = np.empty(len(counts), dtype=_HEADER)
    head["n"], head["flags"] = counts, flags
    return np.full(len(counts), _HEADER.itemsize, dtype=np.int64), head.view(_U8).reshape(-1)


def _sequence(child: ArrowBuffers, item, starts, counts, may_null: bool, where: str) -> tuple:
    """``(lens, bytes)`` of the sequences of elements ``child[starts[i]:starts[i] + counts[i]]``."""
    if counts.size and int(counts.max()) > _MAX_LEN:
        raise ValueError(f"{where}: a list of more than 2**32-1 elements")
    parts, validity = [], child.validity
    flagged = np.zeros(len(counts), dtype=bool)
    if validity is not None:
        misses = np.concatenate(([0], np.cumsum(~validity, dtype=np.int64)))
        flagged = misses[starts + counts] > misses[starts]
        if flagged.any() and not may_null:
            raise ValueError(f"{where}: item {int(np.argmax(flagged))}: a missing element "
                             f"(None) where elements may not be missing")
    parts.append(_header(counts, flagged.astype(np.uint8)))
    if flagged.any():
        nbytes = np.where(flagged, (counts + 7) // 8, 0)
        fstarts, fcounts = starts[flagged], counts[flagged]
        bitstart = (np.cumsum(nbytes[flagged]) - nbytes[flagged]) * 8
        bits = np.zeros(int(nbytes.sum()) * 8, dtype=bool)
        elements = range_indices(fstarts, fcounts)
        bits[elements + np.repeat(bitstart - fstarts, fcounts)] = validity[elements]
        parts.append((nbytes, np.packbits(bits, bitorder="little")))
    elements = range_indices(starts, counts)
    present = None if validity is None else validity[elements]
    if isinstance(item, np.dtype):
        values = child.values[elements]
        if values.dtype.itemsize != item.itemsize:
            raise TypeError(f"{where}: elements of {values.dtype} where the list holds {item}")
        if present is not None and not present.all():
            values[~present] = 0
        parts.append((counts * item.itemsize, values.view(_U8)))
    else:
        offsets = child.offsets.astype(np.int64, copy=False)
        lens = offsets[elements + 1] - offsets[elements]
        if present is not None:
            lens[~present] = 0
        if lens.size and int(lens.max()) > _MAX_LEN:
            raise ValueError(f"{where}: an element of more than 2**32-1 bytes")
        sums = np.concatenate(([0], np.cumsum(lens)))
        first = np.cumsum(counts) - counts
        parts.append((counts * 4, lens.astype("<u4").view(_U8)))
        parts.append((sums[first + counts] - sums[first],
                      take_ranges(child.values, offsets[elements], lens)))
    return interleave(parts)


def _map_sequence(entries: ArrowBuffers, typ: MapType, starts, counts, where: str) -> tuple:
    parts = [_header(counts, np.zeros(len(counts), dtype=np.uint8))]
    for (name, ftyp, nullable), field in zip(typ.entries.fields, entries.children):
        lens, data = _sequence(field, ftyp, starts, counts, nullable, f"{where}: field {name!r}")
        parts += [u32_rows(lens), (lens, data)]
    return interleave(parts)


def encode_raw(buffers: ArrowBuffers, typ, where: str) -> np.ndarray:
    """The encoded items of the Arrow rows ``buffers`` (a list or map layout),
    an object array of ``bytes`` (None: a missing item).

    Raises
    ------
    ValueError
        A missing item in a type that is not nullable, a missing element
        where none may be, a list or element too long for the format.
    TypeError
        Elements whose width is not the type's.
    """
    n = buffers.length
    valid = np.ones(n, dtype=bool) if buffers.validity is None else buffers.validity
    if not typ.nullable and not valid.all():
        raise ValueError(f"{where}: item {int(np.argmin(valid))} is None and this list type "
                         f"is not nullable")
    offsets = buffers.offsets.astype(np.int64, copy=False)
    starts, counts = offsets[:-1][valid], np.diff(offsets)[valid]
    child = buffers.children[0]
    if isinstance(typ, MapType):
        lens, data = _map_sequence(child, typ, starts, counts, where)
    else:
        lens, data = _sequence(child, typ.item, starts, counts, typ.item_nullable, where)
    whole = data.tobytes()
    ends = np.cumsum(lens).tolist()
    pieces = np.empty(len(ends), dtype=object)
    pieces[:] = [whole[a:b] for a, b in zip([0] + ends[:-1], ends)]
    if len(pieces) == n:
        return pieces
    out = np.full(n, None, dtype=object)
    out[valid] = pieces
    return out


# --------------------------------------------------------------------- decoding

def _damaged(where: str, why: str) -> FormatError:
    return FormatError(f"{where}: damaged list item: {why}")


def _room(pos, need, ends, where: str, what: str) -> None:
    if bool((pos + need > ends).any()):
        raise _damaged(where, f"{what} past the item's end")


def _parse(data, pos, ends, item, where: str) -> tuple:
    """``(counts, child, pos)``: the sequences at ``pos`` (each before ``ends``)."""
    _room(pos, _HEADER.itemsize, ends, where, "a header")
    head = data[pos[:, None] + np.arange(_HEADER.itemsize)].copy().view(_HEADER).reshape(-1)
    counts, flags = head["n"].astype(np.int64), head["flags"]
    if bool((flags > 1).any()):
        raise _damaged(where, "unknown flags")
    pos = pos + _HEADER.itemsize
    total = int(counts.sum())
    first = np.cumsum(counts) - counts
    validity = None
    flagged = flags == 1
    if flagged.any():
        nbytes = np.where(flagged, (counts + 7) // 8, 0)
        _room(pos, nbytes, ends, where, "a bitmap")
        bits = np.unpackbits(take_ranges(data, pos[flagged], nbytes[flagged]),
                             bitorder="little").view(bool)
        fcounts = counts[flagged]
        bitstart = (np.cumsum(nbytes[flagged]) - nbytes[flagged]) * 8
        validity = np.ones(total, dtype=bool)
        validity[range_indices(first[flagged], fcounts)] = \
            bits[range_indices(bitstart, fcounts)]
        pos = pos + nbytes
    if isinstance(item, MapType):
        children = []
        for _, ftyp, _ in item.entries.fields:
            _room(pos, 4, ends, where, "a field's size")
            size = data[pos[:, None] + np.arange(4)].copy().view("<u4").reshape(-1)
            pos = pos + 4
            end = pos + size.astype(np.int64)
            _room(pos, size, ends, where, "a field")
            fcounts, field, fpos = _parse(data, pos, end, ftyp, where)
            if not (np.array_equal(fcounts, counts) and np.array_equal(fpos, end)):
                raise _damaged(where, "a map field of another length than its entries")
            children.append(field)
            pos = end
        return counts, ArrowBuffers(total, validity, None, None, tuple(children)), pos
    if isinstance(item, np.dtype):
        nbytes = counts * item.itemsize
        _room(pos, nbytes, ends, where, "elements")
        raw = np.ascontiguousarray(take_ranges(data, pos, nbytes))
        values = raw.view(item if item.kind not in "mM" else np.dtype("<i8"))
        return counts, ArrowBuffers(total, validity, None, values), pos + nbytes
    _room(pos, counts * 4, ends, where, "element lengths")
    lens = np.ascontiguousarray(take_ranges(data, pos, counts * 4)).view("<u4")
    pos = pos + counts * 4
    offsets = np.concatenate(([0], np.cumsum(lens, dtype=np.int64)))
    nbytes = offsets[first + counts] - offsets[first]
    _room(pos, nbytes, ends, where, "element bytes")
    values = np.ascontiguousarray(take_ranges(data, pos, nbytes))
    return counts, ArrowBuffers(total, validity, offsets, values), pos + nbytes


def decode_raw(raw: np.ndarray, typ, where: str) -> ArrowBuffers:
    """The Arrow buffers (a list or map layout, ``int64`` offsets) of the
    encoded items ``raw`` (an object array of ``bytes``, None: missing).

    Raises
    ------
    FormatError
        A damaged item (sizes past its end, unknown flags, bytes left over).
    """
    n = len(raw)
    valid = np.not_equal(raw, None).astype(bool, copy=False).reshape(-1)
    present = raw[valid].tolist() if not valid.all() else raw.tolist()
    lens = np.fromiter(map(len, present), dtype=np.int64, count=len(present))
    data = np.frombuffer(b"".join(present), dtype=_U8)
    ends = np.cumsum(lens)
    item = typ if isinstance(typ, MapType) else typ.item
    counts, child, pos = _parse(data, ends - lens, ends, item, where)
    if not np.array_equal(pos, ends):
        raise _damaged(where, "bytes left after the elements")
    full = np.zeros(n, dtype=np.int64)
    full[valid] = counts
    offsets = np.concatenate(([0], np.cumsum(full)))
    return ArrowBuffers(n, None if valid.all() else valid, offsets, None, (child,))
