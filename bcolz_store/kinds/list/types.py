"""The types of list and map carrays (and ctable columns), and the metadata of a
new one.

A list carray holds, in each item, a list of any length of elements of one
type (or None)::

    >>> import bcolz_store as bcolz
    >>> c = bcolz.carray([[1, 2, 3], [], None], dtype=bcolz.list_("int64"))
    >>> c[0]
    array([1, 2, 3])
    >>> c[2] is None
    True

New carrays of elements of fixed numbers, bools, datetimes, str or bytes are
stored in layout version 2 (end offsets and child carrays,
kinds/list/files.py, kinds/list/engine2.py); others, and those written
before, as the items of a vlen carray of bytes (kinds/list/meta.py,
kinds/list/meta_items.py; the engine is :mod:`bcolz_store.kinds.list.engine`).
"""

from __future__ import annotations

import numpy as np

from ..vlen.chunk_items import vlen_chunklen
from ...datasets.carray_files import CarrayMeta
from ..vlen.files import MAX_VLEN_CHUNKLEN
from .files import new_list_layout
from .meta_items import encode_item, encode_items
from .meta import ListLayout, ListType, MapType, StructItems
from ...items import masked_to_objects
from ..vlen.meta import VLEN_DEFAULT_LEVEL
from ...indexing import is_int, iterates_blocks

__all__ = ["as_list_items", "list_", "list_request", "map_", "new_list_meta", "struct_items"]



def list_(item, nullable=True, item_nullable=True, size=None, *, large=False, field="item"):
    """The dtype of a carray or ctable column of variable-length lists.

    Parameters
    ----------
    item : numpy dtype (or its name), 'str', 'bytes', list_(...), map_(...) or struct_items(...)
        The type of the elements: a fixed numpy dtype (numbers, bools,
        datetimes, timedeltas, fixed-width ``S``/``U``), UTF-8 text, bytes,
        'decimal128(P,S)', a nested list, a map or a struct (also any object
        with ``fields``, a list of ``(name, type)``).
    nullable : bool, default True
        Whether a whole list may be missing (None).
    item_nullable : bool, default True
        Whether elements may be missing (reads give a ``numpy.ma.MaskedArray``
        for a list of a fixed dtype with missing elements, None elsewhere).
    size : int, optional
        The length of every list (Arrow's fixed_size_list); others are refused.
    large, field : bool, str
        What Arrow export writes: a ``large_list`` and the item field's name.

    Returns
    -------
    ListType

    Raises
    ------
    TypeError
        An element type that is not supported (objects, records: use
        :func:`struct_items`), flags that are not bools.
    ValueError
        A negative ``size``.

    Examples
    --------
    >>> list_("int32").item
    dtype('int32')
    >>> list_(list_("str")).item.item
    'str'
    """
    return ListType(item, nullable, item_nullable, size, large, field)


def map_(key, item, nullable=True, item_nullable=True, *, keys_sorted=False,
         names=("entries", "key", "value")):
    """The dtype of a carray or ctable column of maps (reads give lists of
    ``(key, value)`` tuples, as pyarrow's ``to_pylist``).

    Parameters
    ----------
    key, item : element types
        As for :func:`list_`; keys are never missing.
    nullable : bool, default True
        Whether a whole map may be missing.
    item_nullable : bool, default True
        Whether values may be missing.
    keys_sorted : bool, default False
    names : tuple of three str
        Arrow's entries, key and value field names.

    Returns
    -------
    MapType

    Raises
    ------
    TypeError, ValueError
        As :func:`list_`.
    """
    return MapType(key, item, nullable, item_nullable, keys_sorted, names)


def struct_items(fields):
    """The type of list elements that are structs (read as dicts).

    Parameters
    ----------
    fields : list of (name, type) or (name, type, nullable)
        Element types as for :func:`list_`; ``nullable`` defaults to True.

    Returns
    -------
    StructItems

    Raises
    ------
    TypeError, ValueError
        A name that is not a str, repeated names, no fields, an element type
        that is not supported.
    """
    return StructItems(tuple(tuple(f) for f in fields))


def list_request(array, dtype):
    """The list or map type a new carray of ``array`` and ``dtype`` asks for, or None
    (``dtype`` such a type, or no ``dtype`` and ``array`` a list carray)."""
    if isinstance(dtype, (ListType, MapType)):
        return dtype
    if dtype is None:
        found = getattr(array, "listtype", None)
        if isinstance(found, (ListType, MapType)):
            return found
    return None


def _pandas_missing(value) -> bool:
    """A missing value of a pandas column: None, NaN, NA or NaT."""
    return value is None or (isinstance(value, float) and value != value) or \
        type(value).__name__ in ("NAType", "NaTType")


def _seq_like(value) -> bool:
    return isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and value.ndim)


def _fits(value, typ) -> bool:
    """Whether ``value`` has the shape of one element (or item) of type
    ``typ``: None anywhere, lists at the list levels (an empty one at any),
    dicts or pairs for maps, dicts or tuples for structs, no sequence where a
    scalar, a str or bytes goes."""
    if value is None:
        return True
    if isinstance(typ, ListType):
        if isinstance(value, np.ndarray) and value.dtype.kind != "O":
            levels, inner = 0, typ
            while isinstance(inner, ListType):
                levels, inner = levels + 1, inner.item
            return value.ndim == levels if value.size else 1 <= value.ndim <= levels
        return bool(_seq_like(value)) and all(_fits(v, typ.item) for v in value)
    if isinstance(typ, MapType):
        if isinstance(value, dict):
            return all(_fits(k, typ.key) and _fits(v, typ.value) for k, v in value.items())
        return bool(_seq_like(value)) and all(_fits_element(v, typ) for v in value)
    if isinstance(typ, StructItems):
        if isinstance(value, dict):
            return True
        return bool(_seq_like(value)) and len(value) == len(typ.fields) and \
            all(_fits(v, t) for v, (_, t, _) in zip(value, typ.fields))
    return not _seq_like(value) and not isinstance(value, dict)


def _fits_element(value, typ) -> bool:
    """Whether ``value`` has the shape of one element of a list (or an entry,
    a (key, value) pair, of a map) of type ``typ``."""
    if isinstance(typ, MapType):
        return value is None or (bool(_seq_like(value)) and len(value) == 2 and
                                 _fits(value[0], typ.key) and _fits(value[1], typ.value))
    return _fits(value, typ.item)


def _looks_like(value, typ) -> bool:
    """Whether ``value`` is one item of ``typ`` rather than a sequence of
    items, judged by its first element that fits only one of the two
    readings (``[[], [['x']]]`` of lists of lists of str: two items); a
    value that fits both is a sequence of items (``[[], []]``: two)."""
    if isinstance(value, np.ndarray) and value.dtype.kind != "O":
        return value.ndim == 1
    for element in value:
        if element is None:
            continue
        as_element, as_item = _fits_element(element, typ), _fits(element, typ)
        if as_element != as_item:
            return as_element
        if not as_element:
            return False        # fits neither: its item is refused, named
    return False


def _is_one(value, typ, arrlen) -> bool:
    if value is None or isinstance(value, (dict, np.ma.MaskedArray)):
        return True
    if not _seq_like(value):
        return False
    if isinstance(value, np.ndarray) and value.dtype.kind != "O":
        return value.ndim == 1
    n = len(value)
    if arrlen is not None and n != arrlen:
        return arrlen == 1
    if n == 0 or all(v is None for v in value):
        return False
    return _looks_like(value, typ)


def as_list_items(value, typ, arrlen=None, where: str = "list carray") -> np.ndarray:
    """``value`` as an object array of list items (each a list, tuple, array,
    dict or None), not yet checked against ``typ``.

    ``value`` is one item (None, a dict for a map, a list of scalars, a 1-d
    numeric array), or a sequence of items: a list, tuple, object array, 2-d
    array, pandas Series, pyarrow array or carray (a list of None: missing
    items; an empty list: no items; a 0-d object array: the one item it
    holds).  With ``arrlen``, one item is repeated
    ``arrlen`` times.

    Raises
    ------
    ValueError
        A sequence whose length is not ``arrlen``.
    TypeError
        A value that is neither.
    """
    if iterates_blocks(value):
        value = value[:]
    if isinstance(value, np.ma.MaskedArray) and value.dtype == object:
        value = masked_to_objects(value)        # (a field of masked rows: its items)
    module = type(value).__module__ or ""
    if module.startswith("pyarrow"):
        value = value.to_pylist()
    elif module.startswith("pandas") and hasattr(value, "to_numpy"):
        if type(getattr(value, "dtype", None)).__name__ == "ArrowDtype":
            value = value.array.__arrow_array__().to_pylist()   # nulls stay None
        else:
            value = [None if _pandas_missing(v) else v for v in value.to_numpy(dtype=object)]
    if isinstance(value, np.ndarray) and value.dtype.kind != "O" and value.ndim == 2:
        value = list(value)
    zero_d = isinstance(value, np.ndarray) and value.ndim == 0     # a row's field: one item
    if zero_d:
        value = value[()]
    one = zero_d or _is_one(value, typ, arrlen)
    if not one and not _seq_like(value):
        try:
            value = list(value)
        except TypeError:
            raise TypeError(f"{where}: {type(value).__name__} is neither a list item nor a "
                            f"sequence of them") from None
    if one:
        out = np.empty(1 if arrlen is None else arrlen, dtype=object)
        for i in range(len(out)):
            out[i] = value
        return out
    out = np.fromiter(value, dtype=object, count=len(value))    # (items stay whole)
    if arrlen is not None and len(out) != arrlen:
        if len(out) == 1:
            return np.repeat(out, arrlen)
        raise ValueError(f"{where}: cannot assign {len(out)} items to {arrlen} positions")
    return out


def _zero(typ):
    """The zero element of ``typ``: 0, '', b'', an empty list, a struct of zeros."""
    if isinstance(typ, (ListType, MapType)):
        return _empty_item(typ)
    if isinstance(typ, StructItems):
        return {name: _zero(t) for name, t, _ in typ.fields}
    if isinstance(typ, np.dtype):
        return np.zeros((), typ)[()]
    return {"str": "", "bytes": b""}.get(typ, 0)


def _empty_item(typ):
    """The fill value of a list type that is not nullable: an empty list (of
    ``size`` zero elements for a fixed-size one)."""
    if isinstance(typ, ListType) and typ.size:
        return [_zero(typ.item)] * typ.size
    return []


def new_list_meta(request, array, cparams, dflt, expectedlen, chunklen):
    """The metadata of a new list carray, and its initial items.

    Parameters
    ----------
    request : ListType or MapType
    array : sequence of items, or a carray (appended by the caller; then the
        returned items are empty)
    cparams : cparams
        Kept in ``meta/storage`` (Blosc parameters do not apply).
    dflt : list item or None
        The fill value of ``resize`` (default None, a missing list; for a
        type that is not nullable, an empty list).
    expectedlen, chunklen : int or None

    Returns
    -------
    (CarrayMeta, numpy.ndarray)

    Raises
    ------
    TypeError, ValueError
        Items or ``dflt`` the type does not hold; a bad chunklen.
    """
    if iterates_blocks(array):
        items = np.empty(0, dtype=object)
        length = len(array)
    else:
        items = as_list_items([] if array is None else array, request, where="new carray")
        length = len(items)
    if isinstance(dflt, np.ndarray) and dflt.ndim == 0:
        dflt = dflt[()]
    if dflt is None and not request.nullable:
        dflt = _empty_item(request)
    if dflt is not None:
        encode_item(dflt, request, "dflt")          # refused now, not on resize
    expectedlen = int(length if expectedlen is None else expectedlen)
    if chunklen is None:
        sample = encode_items(items[:256], request, "new carray")
        avg = np.mean([len(r) if r is not None else 0 for r in sample]) if len(sample) else 64
        chunklen = vlen_chunklen(expectedlen, avg)
    elif not is_int(chunklen) or chunklen < 1:
        raise ValueError("chunklen must be a positive integer")
    elif chunklen > MAX_VLEN_CHUNKLEN:
        raise ValueError(f"chunklen {chunklen} is above {MAX_VLEN_CHUNKLEN}, the most items a "
                         f"list chunk may hold")
    fill = np.empty((), dtype=object)
    fill[()] = dflt
    meta = CarrayMeta(np.dtype(object), cparams, int(chunklen), expectedlen, fill,
                      kind=ListLayout(request, VLEN_DEFAULT_LEVEL))
    new_list_layout(meta)       # layout version 2 where its elements allow
    return meta, items
