"""The type of a decimal carray (or ctable column): exact fixed-point numbers.

A decimal carray reads ``decimal.Decimal`` items (an object array) and
stores each as its unscaled integer in 16 bytes (precision up to 38) or 32
(up to 76), Arrow's layout (:mod:`bcolz_store.kinds.decimal.meta`)::

    >>> import bcolz_store as bcolz
    >>> c = bcolz.carray(["1.50", 2, "-0.25"], dtype=bcolz.decimal(12, 2))
    >>> c[:].tolist()
    [Decimal('1.50'), Decimal('2.00'), Decimal('-0.25')]
    >>> c.append("1.005")
    Traceback (most recent call last):
    ...
    ValueError: decimal carray: '1.005' has more than 2 digits after the point (decimal(12, 2)); round it first

Writes take Decimal, int or str items; a float is refused (it would round),
and so is a value with more digits than the type holds.
"""

from __future__ import annotations

import numpy as np

from ...datasets.carray_files import CarrayMeta
from .files import decimal_carray_meta
from .meta import DecimalMeta, check_decimal, decimal_meta
from ...indexing import calc_chunklen, is_int, iterates_blocks

__all__ = ["decimal", "decimal_of", "decimal_request", "new_decimal_meta"]


class decimal:
    """decimal(precision, scale=0, nullable=None)

    The dtype of a decimal carray or ctable column (Arrow's ``decimal128``
    for precision 1..38, ``decimal256`` for 39..76).

    Parameters
    ----------
    precision : int
        Significant digits, 1..76.
    scale : int, default 0
        Digits after the point, -76..precision.
    nullable : bool, optional
        Whether items may be missing (None).  Default: a new carray is
        nullable when its initial items hold None, or they come from Arrow
        or pandas' Arrow-backed columns (which may hold nulls).

    Raises
    ------
    TypeError
        A precision or scale that is not an int.
    ValueError
        A precision outside 1..76 or a scale outside -76..precision.

    Notes
    -----
    Layout: this library's own format (docs/format.md, "Decimal columns"),
    inside bcolz format v1.0's folder layout (seeds/001); the real bcolz
    refuses such a column, naming it.
    """

    __slots__ = ("nullable", "precision", "scale")

    def __init__(self, precision, scale=0, nullable=None):
        meta = check_decimal(precision, scale)
        self.precision = meta.precision
        self.scale = meta.scale
        self.nullable = None if nullable is None else bool(nullable)

    @property
    def bits(self) -> int:
        """128 or 256: the width of an item in bits."""
        return self.meta.bits

    @property
    def meta(self) -> DecimalMeta:
        """The format's description of the type."""
        return check_decimal(self.precision, self.scale)

    def __repr__(self):
        return f"decimal({self.precision}, {self.scale})"

    def __eq__(self, other):
        return isinstance(other, decimal) and (self.precision, self.scale) == \
            (other.precision, other.scale)

    def __hash__(self):
        return hash(("decimal", self.precision, self.scale))


def decimal_of(meta) -> decimal | None:
    """The :class:`decimal` type of a carray's metadata (None unless a decimal carray)."""
    found = decimal_meta(meta)
    if found is not None:
        return decimal(found.precision, found.scale, found.nullable)
    return None


def decimal_request(array, dtype) -> decimal | None:
    """The :class:`decimal` a new carray of ``array`` and ``dtype`` asks for, or None:
    ``dtype`` a :class:`decimal`; or no ``dtype`` and ``array`` a decimal carray
    or a pandas Series of ``pd.ArrowDtype(pa.decimal128(p, s))``."""
    if isinstance(dtype, decimal):
        return dtype
    if dtype is not None:
        return None
    found = getattr(array, "column_type", None)
    if isinstance(found, decimal):
        return found
    arrow = getattr(getattr(array, "dtype", None), "pyarrow_dtype", None)
    if arrow is not None and str(arrow).startswith("decimal"):
        return decimal(arrow.precision, arrow.scale, nullable=True)
    return None


def new_decimal_meta(request: decimal, array, cparams, dflt, expectedlen, chunklen,
                     nullable=None):
    """The metadata of a new decimal carray, and its initial items (Decimals).

    ``nullable`` (the carray's argument) applies when ``request`` leaves it
    open.  A nullable one made without ``dflt`` grows by null items.

    Returns
    -------
    (CarrayMeta, numpy.ndarray)
        The items are an empty object array when ``array`` is a carray (the
        caller appends its blocks).

    Raises
    ------
    TypeError, ValueError
        A ``dflt`` that is not a decimal number of the type; a bad chunklen
        (the items are checked when the new carray writes them).
    """
    meta = request.meta
    source = iterates_blocks(array)
    if source:
        items = np.empty(0, dtype=object)
    else:
        if type(array).__name__ in ("Series", "Index") or hasattr(array, "to_pylist"):
            array = array.tolist() if hasattr(array, "tolist") else array.to_pylist()
        values = array if isinstance(array, list) else [array] \
            if isinstance(array, (str, bytes)) or np.ndim(array) == 0 \
            else list(np.asarray(array, dtype=object).reshape(-1)) \
            if isinstance(array, np.ndarray) else list(array)
        items = np.fromiter(values, dtype=object, count=len(values))
    expectedlen = int((len(array) if source else len(items)) if expectedlen is None
                      else expectedlen)
    if chunklen is None:
        chunklen = calc_chunklen(expectedlen, meta.itemsize)
    elif not is_int(chunklen) or chunklen < 1:
        raise ValueError("chunklen must be a positive integer")
    nullable = request.nullable if request.nullable is not None else nullable
    if nullable is None:        # as the source says, or the items
        found = getattr(getattr(array, "column_type", None), "nullable", None) if source \
            else any(v is None for v in items.tolist())
        nullable = bool(found)
    meta = DecimalMeta(meta.precision, meta.scale, meta.bits, nullable,
                       "null" if dflt is None else "dflt")
    out: CarrayMeta = decimal_carray_meta(meta, cparams, int(chunklen), expectedlen, dflt)
    return out, items
