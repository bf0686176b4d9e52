"""Decimal carrays: what ``meta/storage`` says about them, and their items as bytes.

A decimal carray stores each item as its *unscaled* integer (the value times
``10**scale``) in 16 bytes (precision 1..38, Arrow's decimal128) or 32 bytes
(precision 39..76, decimal256), little-endian two's complement: Arrow's
layout, so that a column goes to and from Arrow by its buffer.  In bcolz's
folder layout, as a carray of ``V16`` (or ``V32``) items::

    ROOT/meta/storage   {"dtype": "decimal128-p12-s2: column 'NAME' holds ...",
                         "cparams": {...}, "chunklen": L, "expectedlen": E,
                         "dflt": "0.00",
                         "decimal": {"precision": 12, "scale": 2, "bits": 128}}
    ROOT/meta/sizes     {"shape": [n], "nbytes": 16 n, "cbytes": C}
    ROOT/data/__N.blp   Blosc chunks of the 16-byte items

The ``dtype`` text makes the real bcolz refuse the carray (``numpy.dtype()``
does not understand it), naming the column; it holds no comma, which numpy
would read as a list of fields.  ``dflt`` is the text of the item ``resize``
fills with.

Source: this library's own format (docs/format.md, "Decimal columns"),
inside bcolz format v1.0's folder layout (seeds/001); the item layout is
Arrow's (the Arrow columnar format, "Decimal").

Pure functions: nothing here opens a file.
"""

from __future__ import annotations

import decimal as _dec
import itertools
import re
from dataclasses import dataclass

import numpy as np

from ...errors import FormatError, LimitError

__all__ = ["DECIMAL_KEY", "DecimalLayout", "DecimalMeta", "MAX_DECIMAL_TEXT", "MAX_PRECISION",
           "check_decimal", "decimal_bits", "decimal_dtype_text", "decimal_meta",
           "decimal_of_text", "decode_decimals", "dump_decimal", "encode_decimals",
           "load_decimal", "to_decimal", "too_wide"]

DECIMAL_KEY = "decimal"
MAX_PRECISION = 76
#: Characters a decimal item given as text may have (76 digits with a sign,
#: a point, an exponent and plenty of zeros fit many times over).
MAX_DECIMAL_TEXT = 4096
_TEXT = re.compile(r"decimal(128|256)-p(\d{1,2})-s(-?\d{1,3})(?::|$)")
# Enough digits for any 256-bit integer and any scale, so nothing rounds.
_CONTEXT = _dec.Context(prec=200, Emax=_dec.MAX_EMAX, Emin=_dec.MIN_EMIN,
                        traps=[_dec.InvalidOperation, _dec.Inexact, _dec.Overflow])


@dataclass(frozen=True)
class DecimalMeta:
    """The ``decimal`` entry of ``meta/storage``.

    Attributes
    ----------
    precision : int
        Significant digits, 1..76.
    scale : int
        Digits after the point, -76..precision (negative: the item counts
        ``10**-scale`` units).
    bits : int
        128 (precision up to 38) or 256.
    nullable : bool
        Whether items may be missing: then a bool validity carray sits in
        the folder ``valid`` (as a nullable carray's, kinds/nullable/meta.py).
    grow : str
        What ``resize`` of a nullable one adds: ``'null'`` (no ``dflt`` was
        given; the entry has no ``grow`` key) or ``'dflt'`` (the carray's
        ``dflt``).  A carray that is not nullable always adds ``dflt``.
    """

    precision: int
    scale: int
    bits: int
    nullable: bool = False      # items may be missing (a validity in ``valid/``)
    grow: str = "null"

    @property
    def itemsize(self) -> int:
        """Bytes per item: 16 or 32."""
        return self.bits // 8

    @property
    def storage(self) -> np.dtype:
        """The dtype of the stored items: ``V16`` or ``V32``."""
        return np.dtype(f"V{self.itemsize}")


def decimal_bits(precision: int) -> int:
    """128 for precision 1..38, 256 for 39..76."""
    return 128 if precision <= 38 else 256


def decimal_dtype_text(meta: DecimalMeta, name: str) -> str:
    """The ``dtype`` text of ``meta/storage`` for a decimal carray called ``name``."""
    shown = "".join(c if c.isprintable() and c != "," else "?" for c in str(name))[:200]
    return (f"decimal{meta.bits}-p{meta.precision}-s{meta.scale}: column '{shown}' holds "
            f"decimal items that bcolz cannot read; bcolz-store can convert them to float")


def decimal_of_text(text) -> tuple | None:
    """``(bits, precision, scale)`` when ``text`` is a decimal carray's dtype text, else None."""
    if not isinstance(text, str):
        return None
    found = _TEXT.match(text)
    if found is None:
        return None
    return int(found.group(1)), int(found.group(2)), int(found.group(3))


@dataclass
class DecimalLayout:
    """What a decimal carray's metadata (a ``CarrayMeta`` of object atoms, its
    ``dflt`` a Decimal) keeps in its ``kind`` slot.

    Attributes
    ----------
    decimal : DecimalMeta
        The ``decimal`` entry.
    nulls : NullableLayout or None
        A stored nullable decimal's integers as a nullable carray's
        (:class:`~bcolz_store.kinds.nullable.meta.NullableLayout`: its
        validity's metadata); None for one that is not nullable, or new.
    """

    decimal: DecimalMeta
    nulls: object = None


def decimal_meta(meta) -> DecimalMeta | None:
    """The ``decimal`` entry of a carray's metadata (a ``CarrayMeta``), or None
    when it is not a decimal carray."""
    slot = getattr(meta, "kind", None)
    return slot.decimal if isinstance(slot, DecimalLayout) else None


def dump_decimal(meta: DecimalMeta) -> dict:
    """The JSON value of the ``decimal`` key."""
    out = {"precision": meta.precision, "scale": meta.scale, "bits": meta.bits}
    if meta.nullable:
        out["nullable"] = True
        if meta.grow == "dflt":
            out["grow"] = "dflt"
    return out


def check_decimal(precision, scale) -> DecimalMeta:
    """The :class:`DecimalMeta` of ``precision`` and ``scale``.

    Raises
    ------
    ValueError
        A precision outside 1..76 or a scale above it (or below -76).
    TypeError
        Non-integers.
    """
    for what, value in (("precision", precision), ("scale", scale)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"decimal {what} must be an int, not {type(value).__name__}")
    precision, scale = int(precision), int(scale)
    if not 1 <= precision <= MAX_PRECISION:
        raise ValueError(f"decimal precision {precision} is outside 1..{MAX_PRECISION}")
    if not -MAX_PRECISION <= scale <= precision:
        raise ValueError(f"decimal scale {scale} is outside -{MAX_PRECISION}..{precision} "
                         f"(the precision)")
    return DecimalMeta(precision, scale, decimal_bits(precision))


def load_decimal(obj, text, where: str = "meta/storage") -> DecimalMeta:
    """Parse the ``decimal`` key of ``meta/storage`` (``text``: the dtype text).

    Raises
    ------
    FormatError
        A missing or malformed entry, or one that disagrees with the dtype text.
    """
    found = decimal_of_text(text)
    if not isinstance(obj, dict) or found is None:
        raise FormatError(f"{where}: the dtype names a decimal carray but the 'decimal' "
                          f"entry is {'missing' if obj is None else 'malformed'}")
    try:
        meta = check_decimal(obj.get("precision"), obj.get("scale"))
    except (TypeError, ValueError) as err:
        raise FormatError(f"{where}: {err}") from None
    if (obj.get("bits"), meta.precision, meta.scale) != found or meta.bits != found[0]:
        raise FormatError(f"{where}: the 'decimal' entry {obj!r:.80} disagrees with the "
                          f"dtype text")
    nullable = obj.get("nullable", False)
    if not isinstance(nullable, bool):
        raise FormatError(f"{where}: the 'decimal' entry's 'nullable' must be true or false")
    grow = obj.get("grow", "null")
    if grow not in ("null", "dflt"):
        raise FormatError(f"{where}: the 'decimal' entry's 'grow' must be 'null' or 'dflt', "
                          f"not {grow!r:.40}")
    return DecimalMeta(meta.precision, meta.scale, meta.bits, nullable, grow)


def _shown(value) -> str:
    """``value`` as an error message shows it, at most about 60 characters,
    without converting a huge int to text."""
    if isinstance(value, str):
        return repr(value[:60]) + ("..." if len(value) > 60 else "")
    if isinstance(value, int) and value.bit_length() > 192:
        return f"an int of {value.bit_length()} bits"
    return f"{value!r:.60}"


def to_decimal(value, meta: DecimalMeta, where: str = "decimal carray"):
    """``value`` (a Decimal, an int or a str) as the unscaled int stored.

    Items that cannot fit are refused by their size (text length, bits,
    exponent) before any work that grows with them.

    Raises
    ------
    TypeError
        A float (it would round), a bool or another type.
    ValueError
        Not a finite number, more digits after the point than ``scale``, or
        more than ``precision`` digits in all (naming ``where``).
    LimitError
        A str item longer than :data:`MAX_DECIMAL_TEXT` characters.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (_dec.Decimal, int, str, np.integer)):
        raise TypeError(f"{where}: {_shown(value)} ({type(value).__name__}) is not a decimal "
                        f"item; give Decimal, int or str values (a float would round)")
    if isinstance(value, np.integer):
        value = int(value)
    if isinstance(value, str) and len(value) > MAX_DECIMAL_TEXT:
        raise LimitError(f"{where}: the decimal item {_shown(value)} is {len(value)} "
                         f"characters long, over the {MAX_DECIMAL_TEXT} a decimal item's "
                         f"text may have")
    if isinstance(value, int) and value.bit_length() > 4 * (meta.precision - meta.scale) + 4:
        raise _too_big(value, meta, where)  # (10**digits < 2**(4 digits): not converted)
    try:
        number = _dec.Decimal(value.strip() if isinstance(value, str) else value)
    except _dec.InvalidOperation:
        raise ValueError(f"{where}: {_shown(value)} is not a decimal number") from None
    if not number.is_finite():
        raise ValueError(f"{where}: {_shown(value)} is not a finite decimal")
    if not number:
        return 0
    if number.adjusted() + meta.scale >= meta.precision:    # (its exponent alone says so)
        raise _too_big(value, meta, where)
    try:
        if number.adjusted() + meta.scale < 0:              # (below one unit of the scale)
            raise _dec.Inexact
        scaled = number.scaleb(meta.scale, _CONTEXT)
        unscaled = int(scaled.to_integral_exact(context=_CONTEXT))
    except (_dec.Inexact, _dec.InvalidOperation, _dec.Overflow):
        raise ValueError(f"{where}: {_shown(value)} has more than {meta.scale} digits after "
                         f"the point (decimal({meta.precision}, {meta.scale})); round it "
                         f"first") from None
    if abs(unscaled) >= 10 ** meta.precision:
        raise _too_big(value, meta, where)
    return unscaled


def _too_big(value, meta: DecimalMeta, where: str) -> ValueError:
    return ValueError(f"{where}: {_shown(value)} does not fit decimal({meta.precision}, "
                      f"{meta.scale}) ({meta.precision} digits, {meta.scale} after the point)")


def encode_decimals(values, meta: DecimalMeta, where: str = "decimal carray") -> np.ndarray:
    """``values`` (an iterable of Decimal, int or str) as an array of ``V16``/``V32``
    items (Arrow's bytes).

    Raises
    ------
    TypeError, ValueError
        As :func:`to_decimal`.
    """
    size = meta.itemsize
    raw = b"".join(to_decimal(v, meta, where).to_bytes(size, "little", signed=True)
                   for v in values)
    return np.frombuffer(raw, dtype=meta.storage).copy() if raw else \
        np.empty(0, dtype=meta.storage)


def decode_decimals(items: np.ndarray, meta: DecimalMeta, missing=None) -> np.ndarray:
    """``V16``/``V32`` items as an object array of ``decimal.Decimal`` (exact,
    with ``scale`` digits after the point); None where ``missing`` (a bool
    array of the items' shape, or None) is True.

    The unscaled integers come from the items' 64-bit limbs (one limb each
    when they all fit 64 bits) and the precision is checked on the limbs,
    vectorised; then one Decimal is made an item.

    Raises
    ------
    FormatError
        An item of more digits than the precision (a damaged file).
    """
    flat = np.ascontiguousarray(items).reshape(-1)
    if missing is not None and np.any(missing):
        present = ~np.asarray(missing, dtype=bool).reshape(-1)
        out = np.full(len(flat), None, dtype=object)
        out[present] = decode_decimals(flat[present], meta)
        return out.reshape(items.shape)
    n = len(flat)
    if not n:
        return np.empty(items.shape, dtype=object)
    bad = too_wide(flat, meta)
    if bad.any():
        unscaled = int.from_bytes(flat[int(np.flatnonzero(bad)[0])].tobytes(), "little",
                                  signed=True)
        raise FormatError(f"a decimal item of {len(str(abs(unscaled)))} digits in a "
                          f"decimal({meta.precision}, {meta.scale}) carray")
    make = _dec.Decimal
    values = map(make.scaleb, map(make, _python_ints(flat, meta)),
                 itertools.repeat(-meta.scale, n), itertools.repeat(_CONTEXT, n))
    return np.fromiter(values, dtype=object, count=n).reshape(items.shape)


def _python_ints(flat: np.ndarray, meta: DecimalMeta) -> list:
    """The unscaled integers of stored items, as a list of Python ints."""
    words = meta.itemsize // 8
    limbs = flat.view(np.uint64).reshape(-1, words)
    low = limbs[:, 0].view(np.int64)
    sign = (low >> 63).view(np.uint64)
    if all(np.array_equal(limbs[:, i], sign) for i in range(1, words)):
        return low.tolist()                 # (every item fits 64 bits)
    out = limbs[:, -1].view(np.int64).astype(object)
    for i in range(words - 2, -1, -1):
        out = (out << 64) + limbs[:, i].astype(object)
    return out.tolist()


def _limbs(value: int, words: int) -> list:
    """``value`` as ``words`` 64-bit limbs of its two's complement, lowest first."""
    value %= 1 << (64 * words)
    return [(value >> (64 * i)) & 0xFFFFFFFFFFFFFFFF for i in range(words)]


def _less(limbs: np.ndarray, bound: list) -> np.ndarray:
    """Whether each row of ``limbs`` (uint64, lowest first, the top one signed)
    is below the integer whose limbs are ``bound``: compared limb by limb,
    top first, vectorised."""
    n, words = limbs.shape
    less, equal = np.zeros(n, dtype=bool), np.ones(n, dtype=bool)
    for i in range(words - 1, -1, -1):
        col = limbs[:, i]
        if i == words - 1:
            col, b = col.view(np.int64), np.uint64(bound[i]).astype(np.int64)
        else:
            b = np.uint64(bound[i])
        less |= equal & (col < b)
        if i:
            equal &= col == b
    return less


def too_wide(items: np.ndarray, meta: DecimalMeta) -> np.ndarray:
    """Whether each stored item (``V16``/``V32``, Arrow's bytes) is an unscaled
    integer of more than ``precision`` digits (``|x| >= 10**precision``),
    vectorised over the items' 64-bit limbs (as int64 when every item fits
    one limb)."""
    words = meta.itemsize // 8
    limbs = np.ascontiguousarray(items).reshape(-1).view(np.uint64).reshape(-1, words)
    if not len(limbs):
        return np.zeros(0, dtype=bool)
    bound = 10 ** meta.precision
    low = limbs[:, 0].view(np.int64)
    sign = (low >> 63).view(np.uint64)
    if all(np.array_equal(limbs[:, i], sign) for i in range(1, words)):
        # every item fits 64 bits (the usual case): compared as int64
        if meta.precision >= 19:
            return np.zeros(len(low), dtype=bool)
        return (low >= bound) | (low <= -bound)
    below = _less(limbs, _limbs(bound, words))                       # x < 10**p
    above = ~_less(limbs, _limbs(-bound + 1, words))                 # x >= 1 - 10**p
    return ~(below & above)
