"""New struct carrays: what the constructor's arguments ask for (a
:class:`~.types.struct` dtype, or a struct carray's rows), the metadata of the
struct and of each field's carray, and the initial items as Arrow buffers
when pyarrow builds them.

Source: this library's own format (docs/format.md, "Struct columns").
"""

from __future__ import annotations

import itertools
import operator

import numpy as np

from ...errors import LimitError
from ...indexing import calc_chunklen, is_int, iterates_blocks
from ...items import composite_items
from ..arrow import from_pyarrow
from ..category.types import category
from ..decimal.meta import DecimalLayout
from ..decimal.types import decimal
from ..vlen.types import vlen
from .files import struct_carray_meta
from .meta import FieldMeta, StructMeta, field_folders
from .types import arrow_type_of, struct

__all__ = ["MAX_STRUCT_DEPTH", "new_struct_meta", "struct_request"]

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


def new_struct_meta(request: struct, making):
    """The metadata of a new struct carray (and of each field's carray), and
    its initial items (dicts; empty when ``making.array`` is a carray).

    ``making`` holds the constructor's arguments
    (:class:`~bcolz_store.carray_meta.Making`); its ``any(array, dtype,
    nullable, expectedlen, chunklen)`` makes a field's metadata by the rules
    of its kind (a categorical field without categories takes them from the
    initial items).

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
    array, cparams, expectedlen, chunklen = (making.array, making.cparams,
                                             making.expectedlen, making.chunklen)
    source = iterates_blocks(array)
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
        fmeta, _ = making.any(sample, kind, nullable, expectedlen, int(chunklen))
        composite = isinstance(fmeta.kind, (DecimalLayout, StructMeta))
        if fmeta.chunklen != int(chunklen) or (not composite and fmeta.atom.shape):
            raise TypeError(f"struct field {name!r}: its carray cannot share the struct's "
                            f"chunks")
        fields.append(FieldMeta(name, folders.get(name, name), flag, fmeta))
    smeta = StructMeta(fields, request.nullable)
    return struct_carray_meta(smeta, cparams, int(chunklen), expectedlen), \
        arrow_items(items, request)


def _plain_kind(kind) -> bool:
    """Whether a field of type ``kind`` takes the same Python items through
    ``pyarrow.array`` as through numpy (numbers, booleans, text, bytes,
    structs of them)."""
    if isinstance(kind, struct):
        return all(_plain_kind(k) for _, k, _ in kind.fields)
    if isinstance(kind, vlen):
        return True
    return isinstance(kind, np.dtype) and not kind.shape and (
        kind.kind in "iub" or (kind.kind == "f" and kind.itemsize >= 4))


def _holds_none(kind, flag) -> bool:
    """Whether a field of type ``kind`` (Arrow flag ``flag``) stores None."""
    if isinstance(kind, vlen):
        return kind.nullable is not False
    if isinstance(kind, struct):
        return kind.nullable
    return bool(flag)


def _fits(arr, request: struct) -> bool:
    """Whether the pyarrow StructArray ``arr`` has nulls only where ``request``
    (and its nested structs) hold them."""
    if arr.null_count and not request.nullable:
        return False
    for i, (_, kind, flag) in enumerate(request.fields):
        child = arr.field(i)
        if isinstance(kind, struct):
            if not _fits(child, kind):
                return False
        elif child.null_count and not _holds_none(kind, flag):
            return False
    return True


_TEXT_TYPES = {"str": {str, type(None)}, "bytes": {bytes, type(None)}}


def _exact_keys(items: list, kind: struct) -> bool:
    """Whether every item is None or a dict of exactly the fields (nested too),
    with text fields of str and bytes fields of bytes (or None) only (checked
    with builtins' maps, no Python code per item: a dict of as many keys as
    there are fields, each field found in it, has exactly the fields)."""
    if not set(map(type, items)) <= {dict, type(None)}:
        return False
    rows = list(itertools.compress(items, map(operator.is_not, items,
                                              itertools.repeat(None))))
    if not set(map(len, rows)) <= {len(kind.names)}:
        return False
    for name, sub, _ in kind.fields:
        try:
            values = list(map(operator.itemgetter(name), rows))
        except (KeyError, TypeError):
            return False
        if isinstance(sub, vlen) and sub.kind in _TEXT_TYPES:
            if not set(map(type, values)) <= _TEXT_TYPES[sub.kind]:
                return False
        elif isinstance(sub, struct) and not _exact_keys(values, sub):
            return False
    return True


# Python items from this many on go to Arrow rows first (pyarrow builds them)
_ARROW_ITEMS = 1


def arrow_items(items: np.ndarray, request: struct):
    """The initial ``items`` (dicts) of a new struct carray as Arrow buffers for
    its kind to encode, when pyarrow is installed and takes every item as the
    carray's own conversion does (plain fields, exact keys, None only where
    held); else ``items`` as they are (the struct engine converts them)."""
    if len(items) < _ARROW_ITEMS or not _plain_kind(request):
        return items
    try:
        import pyarrow as pa
    except ImportError:                     # pragma: no cover - pyarrow is optional
        return items
    rows = items.tolist()
    if not _exact_keys(rows, request):
        return items
    try:
        arr = pa.array(rows, type=arrow_type_of(request))
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return items
    if not _fits(arr, request):
        return items
    return from_pyarrow(pa, arr)
