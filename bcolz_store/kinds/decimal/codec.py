"""Rows of a decimal carray between Arrow buffers and its engine
(:class:`~bcolz_store.kinds.decimal.engine.DecimalEngine`).

Arrow's ``decimal128``/``decimal256`` values buffer holds the unscaled
integers little-endian in 16 or 32 bytes, the stored items' layout: the
items are copied as ``V16``/``V32``, checked against the precision
(:func:`~bcolz_store.kinds.decimal.meta.too_wide`), a null row's slot
written as zeros.
"""

from __future__ import annotations

import numpy as np

from ...errors import FormatError
from .meta import DecimalMeta, too_wide
from ..buffers import ArrowBuffers

__all__ = ["decode_rows", "encode_rows"]


def _nullable(engine) -> bool:
    return bool(getattr(getattr(engine, "values", None), "nullable", False))


def encode_rows(buffers: ArrowBuffers, meta: DecimalMeta, engine) -> tuple:
    """``(items, valid)`` to append to a decimal carray's values engine: the rows
    of ``buffers`` as ``V16``/``V32`` items, null slots zeros, and the
    validity (None when the carray is not nullable).

    Raises
    ------
    ValueError
        Items of another width, an item of more digits than the precision,
        or a null row for a carray that holds no missing items (naming the
        row), before anything is written.
    """
    where = getattr(engine, "where", "decimal carray")
    n = buffers.length
    values = buffers.values
    if values is None or len(values) != n or values.dtype.itemsize != meta.itemsize:
        raise ValueError(f"{where}: Arrow rows of {buffers.type} are not {meta.itemsize}-byte "
                         f"decimal items of decimal({meta.precision}, {meta.scale})")
    items = np.ascontiguousarray(values).view(meta.storage)
    valid = buffers.validity
    if valid is not None and valid.all():
        valid = None
    if valid is not None:
        if not _nullable(engine):
            pos = int(np.flatnonzero(~valid)[0])
            raise ValueError(f"{where}: item {pos} is None, and this decimal carray "
                             f"holds no missing items")
        items = items.copy()
        items[~valid] = np.zeros((), dtype=meta.storage)
    bad = too_wide(items, meta)
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{where}: item {pos} does not fit decimal({meta.precision}, "
                         f"{meta.scale}) ({meta.precision} digits, {meta.scale} after the "
                         f"point)")
    if _nullable(engine):
        return items, np.ones(n, dtype=bool) if valid is None else valid
    return items, None


def decode_rows(engine, start: int, stop: int, meta: DecimalMeta) -> ArrowBuffers:
    """Rows ``[start, stop)`` of a decimal carray's ``engine`` as Arrow buffers of
    ``decimal128``/``decimal256`` (the stored items, with their validity).

    Raises
    ------
    FormatError
        A present item of more digits than the precision (a damaged file).
    """
    store = engine.values
    valid = None
    if hasattr(store, "valid_range"):
        items = store.values.read_range(start, stop)
        valid = store.valid_range(start, stop)
    else:
        raw = store.read_range(start, stop)
        if isinstance(raw, np.ma.MaskedArray):
            valid = ~np.ma.getmaskarray(raw)
        items = np.ma.getdata(raw)
    bad = too_wide(items, meta)
    if valid is not None:
        bad &= valid
        if valid.all():
            valid = None
    if bad.any():
        raise FormatError(f"{getattr(engine, 'where', 'decimal carray')}: item "
                          f"{start + int(np.flatnonzero(bad)[0])} holds more digits than "
                          f"decimal({meta.precision}, {meta.scale})")
    return ArrowBuffers(stop - start, valid, None, items)
