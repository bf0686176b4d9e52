"""Arrow dictionaries <-> a categorical carray's codes, with numpy.

A categorical carray (:mod:`bcolz_store.kinds.category.types`) stores codes into its
categories, which never change once it is made.  Rows arriving as an Arrow
dictionary array carry their own dictionary: :func:`dictionary_codes` maps
each dictionary entry to the code of the same category (by a sorted search
of fixed-width keys, no Python work per entry), then the rows' indices are
looked up in that table at once.  The categories are read once per carray
as Arrow's ``offsets`` + ``values`` (:func:`category_buffers`).
"""

from __future__ import annotations

import weakref

import numpy as np

from .types import category
from ..buffers import ArrowBuffers

__all__ = ["arrow_items", "category_buffers", "dictionary_codes", "items_of_buffers", "same_items"]

#: the most bytes the fixed-width keys of a dictionary may take (larger: a dict)
_MAX_KEY_BYTES = 1 << 26

#: per categories engine (shared by a carray's views): its Arrow buffers and sorted keys
_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _cached(engine) -> dict:
    """The memo of ``engine``'s categories (they never change once written)."""
    found = _CACHE.get(engine.categories)
    if found is None:
        found = _CACHE[engine.categories] = {}
    return found


def _to_bytes(items: list, kind: str) -> list:
    return [v.encode("utf-8", "surrogatepass") if kind == "str" else bytes(v) for v in items]


def category_buffers(engine) -> ArrowBuffers:
    """The categories of the CategoryEngine ``engine`` as Arrow buffers
    (``int64`` offsets, ``uint8`` values), read once and kept.

    Raises
    ------
    FormatError
        Damaged categories (as :meth:`CategoryEngine.lookup`).
    """
    memo = _cached(engine)
    found = memo.get("buffers")
    if found is None:
        table = engine.lookup()              # checks them; categories + a missing item
        raw = _to_bytes(table[:-1].tolist(), engine.categories.vlen.kind)
        offsets = np.zeros(len(raw) + 1, dtype=np.int64)
        np.cumsum([len(r) for r in raw], out=offsets[1:])
        values = np.frombuffer(b"".join(raw), dtype=np.uint8)
        if offsets[-1] < 2 ** 31:           # Arrow's string/binary take them as they are
            offsets = offsets.astype(np.int32)
        found = memo["buffers"] = ArrowBuffers(len(raw), None, offsets, values)
    return found


def _keys(offsets: np.ndarray, values: np.ndarray, width: int) -> np.ndarray:
    """Items ``values[offsets[i]:offsets[i+1]]`` as ``S(4 + width)`` keys: each
    item's length (big-endian) then its bytes, so that equal keys are equal items
    (numpy's ``S`` comparisons ignore trailing NULs; the length tells them)."""
    n = len(offsets) - 1
    lengths = np.diff(offsets).astype(np.int64)
    out = np.zeros((n, 4 + width), dtype=np.uint8)
    out[:, :4] = lengths.astype(">u4").view(np.uint8).reshape(n, 4)
    total = int(lengths.sum())
    if total:
        base = int(offsets[0])
        rows = np.repeat(np.arange(n, dtype=np.int64), lengths)
        starts = np.repeat(offsets[:-1].astype(np.int64) - base, lengths)
        cols = np.arange(total, dtype=np.int64) - starts + 4
        out[rows, cols] = values[base:base + total]
    return out.view(f"S{4 + width}").reshape(n)


def same_items(a: ArrowBuffers, b: ArrowBuffers) -> bool:
    """Whether two string/binary buffers hold the same items, in order."""
    if a.length != b.length:
        return False
    a, b = a.compact_offsets(), b.compact_offsets()
    return bool(np.array_equal(a.offsets, b.offsets) and
                np.array_equal(a.values[:int(a.offsets[-1])], b.values[:int(b.offsets[-1])]))


def dictionary_codes(engine, dictionary: ArrowBuffers) -> np.ndarray:
    """``int64`` codes of ``engine``'s categories for each entry of the Arrow
    ``dictionary`` (string/binary buffers): -1 for a null entry, -2 for an
    entry that is not a category."""
    cats = category_buffers(engine)
    dictionary = dictionary.compact_offsets()
    missing = dictionary.missing()
    if same_items(dictionary, cats):
        codes = np.arange(cats.length, dtype=np.int64)
    else:
        codes = _search(engine, cats, dictionary)
    if missing.any():
        codes[missing] = -1
    return codes


def _search(engine, cats: ArrowBuffers, dictionary: ArrowBuffers) -> np.ndarray:
    """:func:`dictionary_codes` by a sorted search of fixed-width keys (a dict
    when the keys would be too large)."""
    width = max(int(np.diff(cats.offsets).max(initial=0)),
                int(np.diff(dictionary.offsets).max(initial=0)))
    if (4 + width) * (cats.length + dictionary.length) > _MAX_KEY_BYTES:
        index = engine.index
        kind = engine.categories.vlen.kind
        items = items_of_buffers(dictionary, kind, np.dtype(object))
        return np.fromiter((index.get(v, -2) for v in items.tolist()), dtype=np.int64,
                           count=dictionary.length)
    memo = _cached(engine)
    found = memo.get("keys")
    if found is None or found[0] < width:
        keys = _keys(cats.offsets, cats.values, width)
        order = np.argsort(keys, kind="stable")
        found = memo["keys"] = (width, keys[order], order.astype(np.int64))
    have, sorted_keys, order = found
    want = _keys(dictionary.offsets, dictionary.values, have)
    if not cats.length:
        return np.full(dictionary.length, -2, dtype=np.int64)
    pos = np.minimum(np.searchsorted(sorted_keys, want), cats.length - 1)
    return np.where(sorted_keys[pos] == want, order[pos], -2)


def items_of_buffers(buffers: ArrowBuffers, kind: str, atom: np.dtype) -> np.ndarray:
    """The items of string/binary ``buffers`` as an array of ``atom`` (None
    for a missing item); one Python object per item."""
    buffers = buffers.compact_offsets()
    raw = buffers.values.tobytes()
    ends = buffers.offsets.tolist()
    valid = None if buffers.validity is None else buffers.validity.tolist()
    if kind == "str":
        items = [raw[ends[i]:ends[i + 1]].decode("utf-8", "surrogatepass")
                 for i in range(buffers.length)]
    else:
        items = [raw[ends[i]:ends[i + 1]] for i in range(buffers.length)]
    if valid is not None:
        items = [v if ok else None for v, ok in zip(items, valid)]
    out = np.empty(buffers.length, dtype=atom)
    out[:] = items if atom.kind != "O" else np.array(items + [None], dtype=object)[:-1]
    return out


def arrow_items(array, request):
    """``(category, ArrowBuffers)`` of the items of a new categorical carray
    given as a list (or tuple) of str, or of bytes, and None: the rows
    dictionary-encoded by pyarrow, the categories those of ``request`` (a
    :class:`~bcolz_store.category`) or else the distinct items, sorted.

    None when pyarrow is not installed or the items are not all of one kind
    (or are all missing, or are not ``request``'s kind): the caller's own
    conversion then takes them, and raises its errors.
    """
    if not isinstance(array, (list, tuple)) or not array:
        return None
    try:
        import pyarrow as pa
    except ImportError:                 # pragma: no cover (the optional dependency)
        return None
    try:
        arr = pa.array(array)
    except (pa.ArrowException, TypeError, ValueError, OverflowError, UnicodeError):
        return None
    typ = arr.type
    items = "str" if pa.types.is_string(typ) or pa.types.is_large_string(typ) else \
        "bytes" if pa.types.is_binary(typ) or pa.types.is_large_binary(typ) else None
    if items is None or request.kind not in (None, items):
        return None
    from ..arrow import from_pyarrow
    if request.categories is None:
        encoded = arr.dictionary_encode()
        request = category(sorted(encoded.dictionary.to_pylist()), request.ordered)
        return request, from_pyarrow(pa, encoded)
    import pyarrow.compute as pc
    cats = pa.array(request.categories, type=arr.type)
    codes = pc.index_in(arr, value_set=cats)        # (null: None, or not a category)
    if codes.null_count != arr.null_count:
        return None                 # an item that is not a category: refused by the caller
    return request, from_pyarrow(pa, pa.DictionaryArray.from_arrays(codes, cats))
