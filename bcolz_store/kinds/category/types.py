"""The type of a categorical carray (or ctable column): codes plus categories.

A categorical carray reads and writes items (str or bytes, None for a
missing one) like a vlen carray, but stores each item as a code, the
smallest signed integer dtype that numbers its categories, and the
categories once, as a vlen carray (layout in
:mod:`bcolz_store.kinds.category.meta`)::

    >>> import bcolz_store as bcolz
    >>> c = bcolz.carray(["red", "blue", None, "red"], dtype=bcolz.category())
    >>> c[:].tolist(), c.codes[:].tolist(), c.category.categories
    (['red', 'blue', None, 'red'], [1, 0, -1, 1], ['blue', 'red'])

The categories are fixed when the carray is created; writing an item that is
not one of them raises ValueError, as pandas does.  A pandas ``Categorical``
(or a Series of dtype ``category``) given as the data keeps its categories,
their order and ``ordered``.
"""

from __future__ import annotations

import base64
import binascii
import weakref

import numpy as np

from ..vlen.chunk_items import as_items, average_nbytes, vlen_chunklen
from ...datasets.carray_files import CarrayMeta
from .meta import CategoryLayout, CategoryMeta, codes_dtype
from ..vlen.meta import VlenMeta, vlen_result_dtype
from ...indexing import calc_chunklen, is_int, iterates_blocks, positions

__all__ = ["CodesView", "category", "category_from_json", "category_of", "category_request",
           "category_to_json", "new_category_meta", "pandas_categorical"]


class category:
    """category(categories=None, ordered=False)

    The dtype of a categorical carray or ctable column.

    Parameters
    ----------
    categories : sequence of str or of bytes, optional
        The categories, in code order (no repeats, no None).  Default: the
        distinct items of the initial data, sorted.
    ordered : bool, default False
        Whether the categories are ordered (pandas' ``ordered``; kept for
        the round trip, not used by comparisons).

    Raises
    ------
    TypeError
        Categories mixing str and bytes, or of another type.
    ValueError
        Repeated categories, or None among them.
    """

    __slots__ = ("categories", "ordered")

    def __init__(self, categories=None, ordered=False):
        if categories is not None:
            categories = list(categories)
            kinds = {type(c) for c in categories}
            if None in categories:
                raise ValueError("None cannot be a category (it is a missing item)")
            if not (kinds <= {str} or kinds <= {bytes}):
                raise TypeError(f"categories must be all str or all bytes, not "
                                f"{sorted(k.__name__ for k in kinds)}")
            if len(set(categories)) != len(categories):
                raise ValueError("categories repeat an item")
        self.categories = categories
        self.ordered = bool(ordered)

    nullable = True     # a code of -1 is a missing item

    @property
    def kind(self) -> str | None:
        """'str' or 'bytes' (None while the categories are not known)."""
        if not self.categories:
            return None
        return "bytes" if isinstance(self.categories[0], bytes) else "str"

    def __repr__(self):
        shown = self.categories if self.categories is None or len(self.categories) <= 8 \
            else self.categories[:8] + ["..."]
        return f"category({shown!r}, ordered={self.ordered})"

    def __eq__(self, other):
        return isinstance(other, category) and (self.categories, self.ordered) == \
            (other.categories, other.ordered)

    def __hash__(self):
        return hash((tuple(self.categories or ()), self.ordered))


def category_to_json(cat: category) -> dict:
    """A :class:`category` as JSON (how other formats' metadata record it):
    ``{"kind", "categories", "ordered"}``, bytes categories as base64."""
    cats = cat.categories or []
    if cat.kind == "bytes":
        cats = [base64.b64encode(c).decode("ascii") for c in cats]
    return {"kind": cat.kind or "str", "categories": list(cats), "ordered": cat.ordered}


def category_from_json(obj) -> category:
    """The :class:`category` :func:`category_to_json` recorded.

    Raises
    ------
    ValueError, TypeError
        When ``obj`` is not such a record.
    """
    if not isinstance(obj, dict) or not isinstance(obj.get("categories"), list):
        raise TypeError("a category record is a JSON object with a list of categories")
    cats = obj["categories"]
    if obj.get("kind") == "bytes":
        try:
            cats = [base64.b64decode(c.encode("ascii"), validate=True) for c in cats]
        except (AttributeError, UnicodeEncodeError, binascii.Error) as err:
            raise ValueError(f"bytes categories must be base64 ({err})") from None
    elif obj.get("kind") != "str":
        raise ValueError(f"category kind must be 'str' or 'bytes', not {obj.get('kind')!r}")
    return category(cats, bool(obj.get("ordered", False)))


def category_of(meta, engine) -> category | None:
    """The :class:`category` type of a carray (None unless categorical)."""
    slot = getattr(meta, "kind", None)
    if not isinstance(slot, CategoryLayout):
        return None
    items = _CATEGORIES.get(engine.categories)
    if items is None:       # (the engine checked them: no repeats, no None)
        items = _CATEGORIES[engine.categories] = engine.lookup()[:-1].tolist()
    out = category.__new__(category)
    out.categories, out.ordered = list(items), bool(slot.categorical.ordered)
    return out


#: the categories of each categorical carray's categories engine, as a list
#: (they never change once written; the engine is shared by the carray's views)
_CATEGORIES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def pandas_categorical(array):
    """``(items, category)`` of a pandas Categorical or category Series, else None."""
    values = getattr(array, "array", array)
    if type(values).__name__ != "Categorical":
        return None
    cats = list(values.categories)
    codes = np.asarray(values.codes)
    table = np.empty(len(cats) + 1, dtype=object)
    table[:-1] = cats
    table[-1] = None
    return table[np.where(codes < 0, len(cats), codes)], category(cats, values.ordered)


def category_request(array, dtype):
    """The :class:`category` a new carray of ``array`` and ``dtype`` asks for, or None.

    ``dtype`` a :class:`category` or ``'category'``; or no ``dtype`` and
    ``array`` a categorical carray or a pandas Categorical.
    """
    if isinstance(dtype, category):
        return dtype
    if isinstance(dtype, str) and dtype == "category":
        return category()
    if dtype is not None:
        return None
    found = getattr(array, "category", None)    # a categorical carray's own
    if isinstance(found, category):
        return found
    found = pandas_categorical(array)
    return found[1] if found is not None else None


def new_category_meta(request: category, array, cparams, expectedlen, chunklen, dflt=None):
    """The metadata of a new categorical carray, and its initial items.

    ``dflt`` (what growing fills in) is one of the categories, or None for a
    missing item; it is stored as its code.

    Returns
    -------
    (CarrayMeta, numpy.ndarray)
        The metadata (its ``kind.initial`` the categories to store) and
        the initial items (empty when ``array`` is a carray, whose items the
        caller appends block by block).

    Raises
    ------
    TypeError
        Items of another type than the categories'.
    ValueError
        An initial item that is not one of given categories, a ``dflt`` that
        is not a category, a bad chunklen, or no way to tell the kind (no
        categories and no items).
    """
    found = pandas_categorical(array)
    source = iterates_blocks(array)     # a carray
    if found is not None:
        array = found[0]
    cats = request.categories
    kind = request.kind
    if source:                      # a carray: its items come block by block
        head = array[:min(len(array), 1 << 16)]
        kind = kind or ("bytes" if any(isinstance(v, bytes) for v in head.tolist()) else "str")
        items = np.empty(0, dtype=vlen_result_dtype(kind, True))
    else:
        raw = array.tolist() if isinstance(array, np.ndarray) else list(array)
        kind = kind or ("bytes" if any(isinstance(v, bytes) for v in raw) else "str")
        items = as_items(raw, kind, vlen_result_dtype(kind, True), True, where="new carray")
    if cats is None:
        if source:
            raise ValueError("give the categories (category(categories=...)) to make a "
                             "categorical copy of a carray that is not one")
        cats = sorted({v for v in items.tolist() if v is not None})
    atom = vlen_result_dtype(kind, True)
    values = as_items(cats, kind, vlen_result_dtype(kind, False), False, where="categories")
    cat_meta = CarrayMeta(values.dtype, cparams, vlen_chunklen(len(cats),
                                                               average_nbytes(values, kind)),
                          len(cats), np.array("" if kind == "str" else b"", dtype=values.dtype),
                          kind=VlenMeta(kind))
    expectedlen = int(len(array) if expectedlen is None else expectedlen)
    codes = codes_dtype(len(cats))
    if chunklen is None:
        chunklen = calc_chunklen(expectedlen, codes.itemsize)
    elif not is_int(chunklen) or chunklen < 1:
        raise ValueError("chunklen must be a positive integer")
    item, code = _dflt_code(dflt, values.tolist())
    fill = np.empty((), dtype=atom)
    fill[()] = item
    meta = CarrayMeta(atom, cparams, int(chunklen), expectedlen, fill,
                      kind=CategoryLayout(CategoryMeta(codes, request.ordered), cat_meta,
                                          VlenMeta(kind, nullable=True), code, values))
    return meta, items


def _dflt_code(dflt, cats: list):
    """``(item, code)`` of a categorical carray's ``dflt``: None and -1 for a
    missing item.

    Raises
    ------
    ValueError
        A ``dflt`` that is not one of ``cats``.
    """
    if isinstance(dflt, np.ndarray) and dflt.ndim == 0:
        dflt = dflt[()]
    if dflt is None:
        return None, -1
    if isinstance(dflt, np.str_):
        dflt = str(dflt)
    for code, cat in enumerate(cats):
        if type(cat) is type(dflt) and cat == dflt:
            return cat, code
    raise ValueError(f"dflt {dflt!r} is not one of the {len(cats)} categories")


class CodesView:
    """``carray.codes``: the codes of a categorical carray, read by ``[key]``
    (an int, a slice of any step, or an integer array); -1 is a missing item."""

    def __init__(self, engine, length: int):
        self._engine = engine
        self._length = length

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, key):
        codes = self._engine.codes
        if is_int(key):
            i = int(key) + (self._length if key < 0 else 0)
            if not 0 <= i < self._length:
                raise IndexError("index out of range")
            return int(codes.read_range(i, i + 1)[0])
        if isinstance(key, slice):
            start, stop, step = key.indices(self._length)
            if step == 1:
                return codes.read_range(start, max(start, stop))
            return codes.gather(np.arange(start, stop, step, dtype=np.int64))
        return codes.gather(positions(np.asarray(key), self._length))
