"""What ``meta/storage`` says about a categorical carray: codes plus categories.

A categorical carray stores, in bcolz's folder layout, the *codes* of its
items (the smallest signed integer dtype that numbers every category; -1 for
a missing item) as an ordinary carray of Blosc chunks, and its *categories*
as a vlen carray (kinds/vlen/meta.py) in the folder ``categories``::

    ROOT/meta/storage        {"dtype": "category-int8: column 'NAME' holds ...",
                              "cparams": {...}, "chunklen": L, "expectedlen": E,
                              "dflt": -1, "categorical": {"codes": "int8",
                                                          "ordered": false}}
    ROOT/meta/sizes          the codes: {"shape": [n], "nbytes": N, "cbytes": C}
    ROOT/data/__N.blp        the codes, chunk N
    ROOT/categories/...      a vlen carray of the categories, in code order
    ROOT/__attrs__

As for vlen carrays, the ``dtype`` text makes the real bcolz refuse the
carray (``numpy.dtype()`` does not understand it), naming the column.
``dflt`` is a code (-1: a missing item).

Source: this library's own format (docs/format.md, "Categorical columns"),
inside bcolz format v1.0's folder layout (seeds/001).

Pure functions: nothing here opens a file.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import FormatError
from ..vlen.meta import VlenMeta

__all__ = ["CATEGORIES_DIR", "CATEGORY_KEY", "CategoryLayout", "CategoryMeta",
           "category_codes_of_text",
           "category_dtype_text", "codes_dtype", "dump_category", "load_category"]

CATEGORY_KEY = "categorical"
CATEGORIES_DIR = "categories"
_PREFIX = "category-"
_CODES = ("int8", "int16", "int32", "int64")


@dataclass(frozen=True)
class CategoryMeta:
    """The ``categorical`` entry of ``meta/storage``.

    Attributes
    ----------
    codes : numpy.dtype
        int8, int16, int32 or int64.
    ordered : bool
        Whether the categories are ordered (pandas' ``ordered``).
    """

    codes: np.dtype
    ordered: bool = False


@dataclass
class CategoryLayout:
    """What a categorical carray's metadata (a ``CarrayMeta``, whose ``atom`` is
    the dtype its reads return) keeps in its ``kind`` slot.

    Attributes
    ----------
    categorical : CategoryMeta
        The ``categorical`` entry (the codes' dtype, ordered or not).
    categories : CarrayMeta
        The metadata of its categories, a vlen carray in ``ROOT/categories``.
    items : VlenMeta
        The kind of its items, as a vlen carray's (missing items allowed).
    dflt_code : int
        Its ``dflt`` as the code stored (-1: a missing item).
    initial : numpy.ndarray or None
        The categories of a new carray, stored when its engine is made.
    """

    categorical: CategoryMeta
    categories: object
    items: VlenMeta
    dflt_code: int = -1
    initial: np.ndarray | None = None


def codes_dtype(ncategories: int) -> np.dtype:
    """The smallest signed integer dtype numbering ``ncategories`` categories and -1."""
    for name in _CODES:
        if ncategories <= np.iinfo(name).max:
            return np.dtype(name)
    raise ValueError(f"{ncategories} categories are too many")   # pragma: no cover


def category_dtype_text(codes: np.dtype, name: str) -> str:
    """The ``dtype`` text of ``meta/storage`` for a categorical carray called ``name``."""
    shown = "".join(c if c.isprintable() and c != "," else "?" for c in str(name))[:200]
    return (f"{_PREFIX}{np.dtype(codes).name}: column '{shown}' holds the codes of categorical "
            f"items that bcolz cannot read; bcolz-store convert --strings fixed writes a copy "
            f"it can")


def category_codes_of_text(text) -> np.dtype | None:
    """The codes dtype when ``text`` is the dtype text of a categorical carray, else None."""
    if not isinstance(text, str) or not text.startswith(_PREFIX):
        return None
    codes, sep, _rest = text[len(_PREFIX):].partition(":")
    if codes in _CODES and (sep or not _rest):
        return np.dtype(codes)
    return None


def dump_category(meta: CategoryMeta) -> dict:
    """The JSON value of the ``categorical`` key."""
    return {"codes": meta.codes.name, "ordered": bool(meta.ordered)}


def load_category(obj, codes: np.dtype, where: str = "meta/storage") -> CategoryMeta:
    """Parse the ``categorical`` key of ``meta/storage``.

    Raises
    ------
    FormatError
        If the value is not an object, its codes disagree with the dtype
        text, or ``ordered`` is not a bool.
    """
    if not isinstance(obj, dict):
        raise FormatError(f"{where}: the dtype names a categorical carray but the "
                          f"'categorical' entry is {'missing' if obj is None else type(obj).__name__}")
    if obj.get("codes") != codes.name:
        raise FormatError(f"{where}: categorical codes {obj.get('codes')!r:.40} disagree with "
                          f"the dtype ({codes.name})")
    ordered = obj.get("ordered")
    if not isinstance(ordered, bool):
        raise FormatError(f"{where}: categorical 'ordered' must be true or false")
    return CategoryMeta(codes, ordered)
