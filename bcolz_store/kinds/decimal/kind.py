"""The decimal kind: exact fixed-point numbers, Arrow's ``decimal128``/``decimal256``.

A decimal carray (:mod:`bcolz_store.kinds.decimal.types`, layout
:mod:`bcolz_store.kinds.decimal.meta`) stores each item as its unscaled
integer in 16 or 32 little-endian bytes: Arrow's own values buffer, so rows
go between Arrow and the chunks by copying those items (:mod:`.codec`), with
the validity of a nullable one in ``valid/``.  The precision is checked on
the integers, vectorised; no ``decimal.Decimal`` is made but when a caller
asks for items (:meth:`DecimalKind.to_python`, ``c[:]``).
"""

from __future__ import annotations

import numpy as np

from ..nullable.engine import NullableEngine
from .meta import DecimalMeta, check_decimal, decimal_meta, decode_decimals
from .types import decimal, decimal_of, decimal_request, new_decimal_meta
from . import files  # noqa: F401  (registers how its carrays are read and written)
from ..base import register
from ..composite import CompositeKind
from ..buffers import ArrowBuffers
from .codec import decode_rows, encode_rows

__all__ = ["DecimalKind"]


@register
class DecimalKind(CompositeKind):
    """A decimal carray of ``precision`` digits, ``scale`` after the point.

    Parameters
    ----------
    precision : int
        1..76 (up to 38: 16-byte items, ``decimal128``; else 32, ``decimal256``).
    scale : int
        -76..precision.

    Raises
    ------
    TypeError, ValueError
        As :func:`~bcolz_store.kinds.decimal.meta.check_decimal`.
    """

    key = "decimal"
    nullable_carray = True      # Arrow rows may hold nulls

    new_rank = 20

    @classmethod
    def new_request(cls, array, dtype, nullable):
        """A :class:`~.types.decimal` ``dtype``, or a decimal carray's own type."""
        return decimal_request(array, dtype)

    @classmethod
    def new_meta(cls, request, making):
        return new_decimal_meta(request, making.array, making.cparams, making.dflt,
                                making.expectedlen, making.chunklen, making.nullable)

    def __init__(self, precision, scale):
        meta = check_decimal(precision, scale)
        self.precision, self.scale = meta.precision, meta.scale

    @property
    def meta(self) -> DecimalMeta:
        """DecimalMeta: the stored items' precision, scale and width."""
        return check_decimal(self.precision, self.scale)

    @classmethod
    def of_meta(cls, meta):
        found = decimal_meta(meta)
        return cls(found.precision, found.scale) if found is not None else None

    @classmethod
    def composite(cls, meta) -> DecimalMeta:
        """The ``decimal`` entry (nullable or not, growing with nulls or ``dflt``)."""
        return meta.kind.decimal

    # ------------------------------------------------------------ its carrays

    @classmethod
    def column_type(cls, meta, engine):
        """The carray's :class:`~.types.decimal` type."""
        return decimal_of(meta)

    @classmethod
    def isnull(cls, engine, meta, length: int, items) -> np.ndarray:
        values = engine.values          # (a nullable one's values hold its validity)
        if isinstance(values, NullableEngine):
            return ~values.valid_range(0, length)
        return np.zeros(length, dtype=bool)

    indexable = False           # (its statistics describe no index's items)

    @classmethod
    def of_arrow(cls, pa, typ):
        if pa.types.is_decimal(typ) and typ.precision <= 76 and \
                -76 <= typ.scale <= typ.precision:
            return cls(typ.precision, typ.scale)
        return None

    def arrow_type(self, pa):
        if self.meta.bits == 128:
            return pa.decimal128(self.precision, self.scale)
        return pa.decimal256(self.precision, self.scale)

    def dtype(self):
        return decimal(self.precision, self.scale)

    def encode(self, engine, buffers: ArrowBuffers) -> None:
        values, valid = encode_rows(buffers, self.meta, engine)
        if len(values):
            engine.values.append(values if valid is None else (values, valid))

    def decode(self, engine, start: int, stop: int) -> ArrowBuffers:
        return decode_rows(engine, start, stop, self.meta)

    def to_python(self, buffers: ArrowBuffers) -> np.ndarray:
        return decode_decimals(np.asarray(buffers.values), self.meta,
                               None if buffers.validity is None else ~buffers.validity)
