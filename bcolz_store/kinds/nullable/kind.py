"""The nullable kind: fixed numeric, bool and temporal values plus a validity.

A nullable carray (:mod:`bcolz_store.kinds.nullable.types`, layout
:mod:`bcolz_store.kinds.nullable.meta`) stores its values as a plain bcolz
carray and which of them are present as a carray of bool in ``valid/``:
Arrow's layout but for the bitmap, so rows go between Arrow and the chunks
by their buffers (:mod:`.codec`), a null slot holding the fill of the dtype
(NaN, NaT or zeros).

Arrow types (numpy dtype of the carray):

==========================  ==============================
bool                        bool
int8..uint64                int8..uint64
halffloat, float, double    float16, float32, float64
timestamp[unit, tz]         datetime64[unit] (zone: attr)
date32                      datetime64[D]
date64                      datetime64[ms]
duration[unit]              timedelta64[unit]
time32/time64[unit]         timedelta64[unit] (since midnight)
==========================  ==============================

A carray is written as its dtype's own type (the first of each row); the
field a column was read from is written again by the Arrow reader
(:mod:`bcolz_store.interop.arrow_fields`).  Columns of other fixed dtypes
(strings, bytes, structured or multidimensional items, other units) keep the
numpy path; the class holds every nullable carray of a fixed dtype (those of
``V{n}`` atoms too) for the carray's hooks (:meth:`NullableKind.holds`).
"""

from __future__ import annotations

import numpy as np

from ...format.meta import storage_kind
from .meta import nullable_layout
from ...indexing import is_carray
from .types import as_masked, new_nullable, nullable_request
from . import files  # noqa: F401  (registers how its carrays are read and written)
from ..base import ColumnKind, register
from ..buffers import ArrowBuffers
from .engine import NullableEngine
from .types import is_null_item, pandas_masked
from .codec import accepted, arrow_of_dtype, decode_rows, dtype_of_arrow, encode_rows

__all__ = ["NullableKind"]


def _has_nulls(value, none_is_nat: bool) -> bool:
    """Whether ``value`` holds a null item a carray that is not nullable refuses
    (``none_is_nat``: None in a list is NaT, as numpy converts it)."""
    if isinstance(value, np.ma.MaskedArray):
        return bool(np.ma.getmaskarray(value).any())
    if isinstance(value, (list, tuple)):
        if none_is_nat:
            return any(v is not None and is_null_item(v) for v in value)
        return any(is_null_item(v) for v in value)
    found = pandas_masked(value)
    return is_null_item(value) or (found is not None and bool(found[1].any()))


@register
class NullableKind(ColumnKind):
    """A nullable carray of a fixed numeric, bool or temporal dtype.

    Parameters
    ----------
    dtype : numpy.dtype
        The values' dtype (native byte order, no sub-array shape).
    """

    key = "nullable"
    nullable_carray = True
    masked_items = True
    direct_appends = False

    new_rank = 60           # last: any fixed dtype with nulls asked for

    @classmethod
    def new_request(cls, array, dtype, nullable):
        """True for ``nullable=True``, or data with nulls (a masked array, a
        pandas masked array, a list holding None with a fixed ``dtype``)."""
        return True if nullable_request(array, dtype, nullable) else None

    @classmethod
    def new_meta(cls, request, making):
        """Fixed-size atoms (:meth:`Making.fixed`) plus a validity.

        Raises
        ------
        ValueError
            For an object dtype (its items may be None already).
        """
        array, dtype = making.array, making.dtype
        if not is_carray(array):
            array = as_masked(array, None if dtype is None else np.dtype(dtype).base,
                              "new carray")
        meta, data = making.fixed(array, dtype, lambda v, d: v if d is None else v.astype(d))
        if storage_kind(meta.atom) == "pickle":
            raise ValueError("an object carray cannot be nullable (its items may be None)")
        new_nullable(meta, making.dflt)
        return meta, data

    def __init__(self, dtype):
        self.dtype_ = np.dtype(dtype)

    @classmethod
    def of_meta(cls, meta):
        if nullable_layout(meta) is None:
            return None
        if arrow_of_dtype(meta.atom) is None:
            return None
        return cls(meta.atom)

    @classmethod
    def holds(cls, meta) -> bool:
        """A nullable carray of any fixed dtype (one without an Arrow type as well)."""
        return nullable_layout(meta) is not None

    @classmethod
    def may_hold_nulls(cls, meta) -> bool:
        return True

    @classmethod
    def grows_null(cls, meta) -> bool:
        return meta.kind.nullable.grow == "null"

    @classmethod
    def isnull(cls, engine, meta, length: int, items) -> np.ndarray:
        if isinstance(engine, NullableEngine):
            return ~engine.valid_range(0, length)
        return np.zeros(length, dtype=bool)

    @classmethod
    def filler(cls, meta, fill, n: int):
        """Masked atoms when growing adds nulls, else atoms holding ``fill``."""
        out = super().filler(meta, fill, n)
        return np.ma.MaskedArray(out, mask=True) if cls.grows_null(meta) else out

    @classmethod
    def refuse_plain(cls, value, meta, where: str) -> None:
        """Null items (None, masked, NA) written to a carray that is not nullable.

        Raises
        ------
        ValueError
            ``value`` holds one (but a carray of objects takes them).
        """
        if meta.atom.kind != "O" and _has_nulls(value, meta.atom.kind in "Mm"):
            raise ValueError(f"{where}: this carray is not nullable, and the values hold null "
                             f"items (None, masked, NA); write a nullable copy first "
                             f"(carray(c, nullable=True), or ctable.addcol of one)")

    @classmethod
    def to_items(cls, value, dtype, meta, arrlen, where) -> np.ma.MaskedArray:
        """``value`` as a masked array of the atom's dtype (``dtype`` when given).

        Raises
        ------
        ValueError
            Values not converted, or not broadcast to ``arrlen``.
        """
        atom = meta.atom
        items = as_masked(value, atom.base if dtype is None else dtype, where)
        if atom.shape and items.shape == atom.shape:
            items = items.reshape((1,) + atom.shape)
        if arrlen is not None and len(items) != arrlen:
            if len(items) != 1:
                raise ValueError(f"{where}: cannot assign {len(items)} items to {arrlen} "
                                 f"positions")
            items = np.ma.MaskedArray(np.repeat(items.data, arrlen, axis=0),
                                      mask=np.repeat(np.ma.getmaskarray(items), arrlen, axis=0))
        return items

    indexable = False           # (its statistics describe no index's items)

    @classmethod
    def of_arrow(cls, pa, typ):
        dtype = dtype_of_arrow(pa, typ)
        return None if dtype is None else cls(dtype)

    def arrow_type(self, pa):
        return arrow_of_dtype(self.dtype_)(pa)

    def dtype(self):
        return self.dtype_

    def accepts(self, pa, typ) -> bool:
        return accepted(pa, typ, self.dtype_)

    def encode(self, engine, buffers: ArrowBuffers) -> None:
        values, valid = encode_rows(buffers, self.dtype_)
        if len(values):
            engine.append((values, valid))

    def decode(self, engine, start: int, stop: int) -> ArrowBuffers:
        return decode_rows(engine, start, stop, self.dtype_)

    def to_python(self, buffers: ArrowBuffers) -> np.ma.MaskedArray:
        values = np.asarray(buffers.values)
        if self.dtype_.kind in "Mm" and values.dtype != self.dtype_:
            values = values.astype(np.int64).view(self.dtype_)
        mask = buffers.missing()
        return np.ma.MaskedArray(values, mask=mask)
