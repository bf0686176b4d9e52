"""String conditions for expressions over columns of variable-length items.

Columns of ``str``/``bytes`` items of any length (vlen carrays) are
evaluated by the ``'python'`` engine, block by block, on numpy arrays:
``StringDType`` arrays for str on numpy 2, object arrays otherwise.  Equality
and ordering (``name == 'AAPL'``, ``name != ''``, ``name < 'M'``) are numpy's
own vectorised comparisons; these functions add what has no operator::

    startswith(name, 'A')      endswith(name, '.com')     contains(name, 'ab')
    isnull(name)               notnull(name)              isin(name, ['a', 'b'])

A missing item (None) matches no comparison and no function but
``isnull``: before evaluation the block's missing items become NaN-like
nulls (``StringDType(na_object=np.nan)``), whose comparisons are all false.
(Left as ``na_object=None``, numpy would find a missing item equal to ``''``.)

Source: numpy's ``numpy.strings`` functions and ``StringDType`` null
semantics (numpy 2 documentation, "StringDType: missing data").
"""

from __future__ import annotations

import warnings

import numpy as np

from ..kinds.vlen.chunk_items import NAN_STRING, missing_mask

__all__ = ["FixedBytesItems", "NullableItems", "SIGNED_BYTES", "STRING_FUNCTIONS", "TextItems",
           "as_operand", "fixed_bytes_operand", "is_vlen_operand"]

#: Whether numpy orders fixed bytes (``S``) items as signed chars (NumPy 1.x: ``b'\x80' <
#: b'a'``); NumPy 2 orders them as unsigned bytes, as Python's ``bytes`` do.
SIGNED_BYTES = np.lib.NumpyVersion(np.__version__) < "2.0.0"


def is_vlen_operand(value) -> bool:
    """True for a vlen carray, or a numpy ``StringDType`` array."""
    if getattr(value, "vlen", None) is not None:
        return True
    return isinstance(value, np.ndarray) and value.dtype.kind == "T"


def as_operand(block: np.ndarray) -> np.ndarray:
    """A block of a vlen column as the expression sees it: missing items as
    NaN-like nulls (StringDType), or an object array whose comparisons are
    false at missing items (:class:`NullableItems`: bytes items, and str
    items on numpy 1.x)."""
    if block.dtype.kind == "T" and hasattr(block.dtype, "na_object"):
        return block.astype(NAN_STRING).view(TextItems)
    if block.dtype.kind == "O":
        return block.view(NullableItems)
    return block


def fixed_bytes_operand(values):
    """``values`` as conditions compare them: on NumPy 1.x a plain or masked
    array of fixed bytes (``S``) becomes one of :class:`FixedBytesItems`,
    whose order is unsigned as on NumPy 2; anything else is returned as it is."""
    if not SIGNED_BYTES or getattr(getattr(values, "dtype", None), "kind", None) != "S":
        return values
    if type(values) is np.ndarray:
        return values.view(FixedBytesItems)
    if type(values) is np.ma.MaskedArray:         # a nullable column's block: its mask kept
        return np.ma.masked_array(values.data.view(FixedBytesItems), mask=values.mask)
    return values


def _plain(value):
    if isinstance(value, (NullableItems, TextItems, FixedBytesItems)):
        return value.view(np.ndarray)
    return value


class _ComparedItems(np.ndarray):
    """An array whose six comparisons go through its ``_compare(other, ufunc)``."""

    def __eq__(self, other):
        return self._compare(other, np.equal)

    def __ne__(self, other):
        return self._compare(other, np.not_equal)

    def __lt__(self, other):
        return self._compare(other, np.less)

    def __le__(self, other):
        return self._compare(other, np.less_equal)

    def __gt__(self, other):
        return self._compare(other, np.greater)

    def __ge__(self, other):
        return self._compare(other, np.greater_equal)

    __hash__ = None


class TextItems(_ComparedItems):
    """A ``StringDType`` array whose comparisons with a str keep its every
    character: numpy converts a str operand through a fixed-width dtype,
    which strips trailing NULs (``'a' == 'a\\x00'`` would hold)."""

    def _compare(self, other, ufunc):
        items = self.view(np.ndarray)
        if isinstance(other, str):
            other = np.array(other, dtype=items.dtype)
        return ufunc(items, _plain(other))


class FixedBytesItems(_ComparedItems):
    """A fixed bytes (``S``) array compared as NumPy 2 compares one: items
    and bytes constants with their trailing NULs stripped, ordered as
    unsigned bytes (Python's ``bytes`` order; NumPy 1.x used signed chars)."""

    def _compare(self, other, ufunc):
        items = self.view(np.ndarray).astype(object)        # bytes, trailing NULs stripped
        other = _plain(other)
        if isinstance(other, (bytes, np.bytes_)):
            other = bytes(other).rstrip(b"\x00")
        elif isinstance(other, np.ndarray) and other.dtype.kind == "S":
            other = other.astype(object)
        return np.asarray(ufunc(items, other), dtype=bool)


class NullableItems(_ComparedItems):
    """An object array of str or bytes items (None for a missing one) whose
    comparisons (``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``) are false
    wherever either side is missing, as StringDType's NaN-like nulls are;
    Python's would find ``None != 'a'`` true and refuse ``None < 'a'``."""

    def _compare(self, other, op):
        items = self.view(np.ndarray)
        other = _plain(other)
        missing = _missing(items)
        if isinstance(other, np.ndarray) and other.ndim:
            other = np.broadcast_to(other, items.shape)
            if other.dtype.kind in "TO":
                missing = missing | _missing(other)
            pick = lambda values: values[~missing]     # noqa: E731
            right = pick(other)
        elif other is None:
            return np.zeros(items.shape, dtype=bool)
        elif isinstance(other, (bytes, str)):
            right = np.array(other, dtype=object)   # (numpy would strip trailing NULs)
        else:
            right = other
        out = np.zeros(items.shape, dtype=bool)
        present = items[~missing]
        if present.size:
            out[~missing] = np.asarray(op(present, right), dtype=bool)
        return out


def _missing(x: np.ndarray) -> np.ndarray:
    """Mask of the missing items of ``x`` (StringDType or object, any shape)."""
    mask = missing_mask(x.reshape(-1))
    return np.zeros(x.shape, dtype=bool) if mask is None else mask.reshape(x.shape)


def _each(x: np.ndarray, test) -> np.ndarray:
    """``test(item)`` for every present item of an object array (False for None)."""
    return np.fromiter((v is not None and test(v) for v in x.ravel().tolist()), dtype=bool,
                       count=x.size).reshape(x.shape)


def _filled(x: np.ndarray):
    """``(x with missing items as '', mask of the missing ones)`` for StringDType."""
    if not hasattr(x.dtype, "na_object"):
        return x, np.zeros(x.shape, dtype=bool)
    plain = x.astype(NAN_STRING)
    missing = np.isnan(plain)
    if not missing.any():
        return x, missing
    plain[missing] = ""
    return plain.astype(np.dtypes.StringDType()), missing


def _test(x, on_strings, on_item):
    """A bool array: ``on_strings`` of a ``StringDType`` array (missing items
    as '', then False), ``on_item`` of each present item otherwise."""
    if x.dtype.kind == "T":
        filled, missing = _filled(x)
        return on_strings(filled) & ~missing
    return _each(x, on_item)


def _masked(func):
    """``func`` of a nullable column's items: null where the item is (a null
    satisfies no test, nor its negation, as comparisons with it)."""
    def on_items(x, *args):
        if isinstance(x, np.ma.MaskedArray):
            return np.ma.masked_array(on_items(x.data, *args), mask=isnull(x))
        return func(x, *args)
    on_items.__name__, on_items.__doc__ = func.__name__, func.__doc__
    return on_items


@_masked
def startswith(x, prefix):
    """Whether each item starts with ``prefix`` (False for a missing item)."""
    return _test(np.asarray(x), lambda s: np.strings.startswith(s, prefix),
                 lambda v: v.startswith(prefix))


@_masked
def endswith(x, suffix):
    """Whether each item ends with ``suffix`` (False for a missing item)."""
    return _test(np.asarray(x), lambda s: np.strings.endswith(s, suffix),
                 lambda v: v.endswith(suffix))


@_masked
def contains(x, sub):
    """Whether each item contains ``sub`` (False for a missing item)."""
    x = np.asarray(x)
    if x.dtype.kind in "SU":
        return np.char.find(x, sub) >= 0
    return _test(x, lambda s: np.strings.find(s, sub) >= 0, lambda v: sub in v)


def isnull(x):
    """Whether each item is missing (None; a null of a nullable column)."""
    if isinstance(x, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(x)
        return mask.reshape(len(x), -1).any(axis=1) if mask.ndim > 1 else mask.copy()
    x = np.asarray(x)
    if x.dtype.kind in "TO":
        return _missing(x)
    return np.zeros(x.shape, dtype=bool)


def notnull(x):
    """Whether each item is present."""
    return ~isnull(x)


def _equal(x: np.ndarray, value) -> np.ndarray:
    """``x == value`` as numpy compares a fixed dtype's items (all False for a
    value they do not compare with: a str for numbers, bytes for str...)."""
    kind = x.dtype.kind
    if (kind == "S") != isinstance(value, (bytes, np.bytes_)) or \
            (kind == "U") != isinstance(value, (str, np.str_)) or value is None:
        return np.zeros(x.shape, dtype=bool)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = x == value
    except (TypeError, ValueError, OverflowError):
        return np.zeros(x.shape, dtype=bool)
    if not isinstance(found, np.ndarray) or found.shape != x.shape:
        return np.zeros(x.shape, dtype=bool)
    return found.astype(bool, copy=False)


@_masked
def isin(x, values):
    """Whether each item is one of ``values`` (False for a missing item): as
    ``==`` finds it for items of a fixed dtype (numpy's comparison: NaN and
    NaT equal nothing, ``S`` items and constants without trailing NULs)."""
    x = np.asarray(x)
    if x.dtype.kind == "T":     # (np.isin finds 'a' in ['a\x00']: Python's str equality)
        filled, missing = _filled(x)
        wanted = set(np.asarray(list(values), dtype=np.dtypes.StringDType()).tolist())
        found = np.fromiter((s in wanted for s in filled.tolist()), dtype=bool,
                            count=filled.size).reshape(filled.shape)
        return found & ~missing
    if x.dtype.kind == "O":
        wanted = set(values)
        return _each(x, wanted.__contains__)
    out = np.zeros(x.shape, dtype=bool)
    for value in values:
        out |= _equal(x, value)
    return out


STRING_FUNCTIONS = {
    "startswith": startswith, "endswith": endswith, "contains": contains,
    "isnull": isnull, "notnull": notnull, "isin": isin,
}
