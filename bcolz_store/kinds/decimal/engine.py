"""The engine of a decimal carray: 16- or 32-byte unscaled integers in a
values engine (a :class:`~.engine.ChunkEngine` of ``V16``/``V32`` items),
``decimal.Decimal`` items in between.

Reads decode the stored integers into an object array of Decimal (exact);
writes take Decimal, int or str items, checked against the precision and the
scale before anything changes (a value that would round or does not fit
raises ValueError naming the carray).  A values engine whose reads are
``numpy.ma.MaskedArray`` (nullable items) gives None for a masked item, and
None is written as a masked item; a values engine without a mask refuses
None.

Its one part (:mod:`bcolz_store.chunks.parts`) is the values engine, whose
length, chunks, sizes, cache and statistics are the carray's.

Layout: kinds/decimal/meta.py.
"""

from __future__ import annotations

import numpy as np

from .meta import DecimalMeta, decode_decimals, encode_decimals, too_wide
from ...items import masked_to_objects
from ...chunks.parts import Part, PartsEngine

__all__ = ["DecimalEngine", "PreparedDecimals"]


#: Items from which :func:`_arrow_raw` has pyarrow convert them (fewer: Python does).
ARROW_ITEMS = 2048


def _arrow_raw(items: np.ndarray, meta: DecimalMeta, nullable: bool):
    """The stored items of ``items`` (an object array of Decimal, int or None)
    converted by pyarrow (``pa.array`` of the decimal type checks each against
    the scale and the precision, in C++; it takes only Decimal and int items,
    refusing bool, float, str and numpy scalars), or None to convert them in
    Python: pyarrow missing, few items, a negative scale, a None with
    ``nullable`` False, or an item pyarrow refuses (then Python's conversion
    takes it or raises its own error)."""
    if len(items) < ARROW_ITEMS or meta.scale < 0:
        return None
    values = items.tolist()
    try:
        import pyarrow as pa
    except ImportError:
        return None
    typ = pa.decimal128(meta.precision, meta.scale) if meta.bits == 128 else \
        pa.decimal256(meta.precision, meta.scale)
    try:
        arr = pa.array(values, type=typ)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None
    if arr.null_count and not nullable:
        return None
    raw = np.frombuffer(arr.buffers()[1], dtype=meta.storage, count=len(arr)).copy()
    if arr.null_count:
        mask = arr.is_null().to_numpy(zero_copy_only=False)
        raw[mask] = np.zeros((), dtype=meta.storage)
    if too_wide(raw, meta).any():
        return None
    return np.ma.MaskedArray(raw, mask=mask) if arr.null_count else raw


class PreparedDecimals:
    """Items already encoded by :meth:`DecimalEngine.prepare` (and their mask)."""

    __slots__ = ("raw",)

    def __init__(self, raw):
        self.raw = raw

    def __len__(self) -> int:
        return len(self.raw)


class DecimalEngine(PartsEngine):
    """The stored integers of one decimal carray, read and written as Decimal.

    Parameters
    ----------
    values : ChunkEngine
        The engine of the ``V16``/``V32`` items (or a nullable one whose
        reads are masked arrays).
    meta : DecimalMeta
        Precision, scale and width.
    where : str
        What errors name (the carray's folder, or its column).
    """

    values = Part()

    def __init__(self, values, meta: DecimalMeta, where: str = "decimal carray"):
        self._init_parts({"values": values})
        self.atom = values.atom
        self.decimal = meta
        self.where = where

    # ------------------------------------------------------------ conversions

    def items_of(self, raw) -> np.ndarray:
        """Stored items (a masked array: masked items are None) as Decimals."""
        mask = np.ma.getmask(raw) if isinstance(raw, np.ma.MaskedArray) else None
        data = np.ma.getdata(raw) if mask is not None else raw
        if mask is np.ma.nomask:
            mask = None
        return decode_decimals(np.asarray(data), self.decimal, mask)

    def raw_of(self, items):
        """Items (Decimal, int, str; None for a missing item) as stored items.

        Raises
        ------
        TypeError, ValueError
            An item that is not a decimal number or does not fit (naming
            the carray); None when the values engine has no mask.
        """
        if isinstance(items, PreparedDecimals):
            return items.raw
        if isinstance(items, np.ma.MaskedArray):
            items = masked_to_objects(items)
        items = np.asarray(items, dtype=object).reshape(-1) if not isinstance(
            items, np.ndarray) or items.dtype != object else items.reshape(-1)
        fast = _arrow_raw(items, self.decimal, getattr(self.values, "nullable", False))
        if fast is not None:
            return fast
        missing = np.fromiter((v is None for v in items.tolist()), dtype=bool,
                              count=len(items))
        if not missing.any():
            return encode_decimals(items.tolist(), self.decimal, self.where)
        if not getattr(self.values, "nullable", False):
            pos = int(np.flatnonzero(missing)[0])
            raise ValueError(f"{self.where}: item {pos} is None, and this decimal carray "
                             f"holds no missing items")
        filled = [0 if m else v for v, m in zip(items.tolist(), missing.tolist())]
        return np.ma.MaskedArray(encode_decimals(filled, self.decimal, self.where),
                                 mask=missing)

    # ------------------------------------------------------------ engine protocol

    def chunk_array(self, nchunk: int) -> np.ndarray:
        return self.items_of(self.values.chunk_array(nchunk))

    def point(self, nchunk: int, pos: int):
        item = self.values.point(nchunk, pos)
        if item is np.ma.masked:
            return None
        return self.items_of(np.asarray(item).reshape(1))[0]

    def read_range(self, start: int, stop: int) -> np.ndarray:
        return self.items_of(self.values.read_range(start, stop))

    def gather(self, idx: np.ndarray) -> np.ndarray:
        return self.items_of(self.values.gather(idx))

    def prepare(self, items) -> PreparedDecimals:
        """``items`` encoded, checked before anything changes."""
        return PreparedDecimals(self.raw_of(items))

    def append(self, items) -> None:
        self.values.append(self.raw_of(items))

    def set_slice(self, start: int, stop: int, step: int, items) -> None:
        self.values.set_slice(start, stop, step, self.raw_of(items))

    def set_positions(self, idx: np.ndarray, items) -> None:
        self.values.set_positions(idx, self.raw_of(items))
