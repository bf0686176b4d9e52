"""Rows of a fixed-size binary carray <-> Arrow buffers, vectorised.

The engine of such a carray is a :class:`~bcolz_store.chunks.engine.ChunkEngine`
of ``V{n}`` atoms, or a :class:`~bcolz_store.kinds.nullable.engine.NullableEngine`
(those values and a validity) for a nullable one.  A missing row's slot holds
``n`` zero bytes, as any nullable carray's (kinds/nullable/meta.py).
"""

from __future__ import annotations

import numpy as np

from ..nullable.engine import NullableEngine
from ..buffers import ArrowBuffers
from .meta import FIXED_BINARY_KEY, is_fixed_binary_atom

__all__ = ["FIXED_BINARY_KEY", "decode_rows", "encode_rows", "is_fixed_binary_atom"]


def _values(buffers: ArrowBuffers, width: int) -> np.ndarray:
    """The ``V{width}`` items of ``buffers`` (a view where they are already so).

    Raises
    ------
    ValueError
        Values of another width, or fewer than ``buffers.length`` of them.
    """
    dtype = np.dtype((np.void, width))
    n = buffers.length
    values = buffers.values
    if values is None:
        if n:
            raise ValueError(f"{n} fixed-size binary rows without values")
        return np.empty(0, dtype=dtype)
    values = np.asarray(values)
    if values.dtype != dtype:
        if values.dtype.itemsize * values.size != width * len(values) and \
                values.dtype != np.uint8:
            raise ValueError(f"items of {values.dtype} are not {width}-byte items")
        raw = np.ascontiguousarray(values).reshape(-1).view(np.uint8)
        if raw.size % width:
            raise ValueError(f"{raw.size} bytes are not whole {width}-byte items")
        values = raw.view(dtype)
    if len(values) < n:
        raise ValueError(f"{len(values)} items for {n} fixed-size binary rows")
    return values[:n]


def encode_rows(engine, buffers: ArrowBuffers, width: int) -> None:
    """Append ``buffers`` (rows of ``fixed_size_binary(width)``) to ``engine``.

    Raises
    ------
    ValueError
        Items of another width, or missing rows for an engine without a
        validity; nothing is written then.
    """
    values = _values(buffers, width)
    n = buffers.length
    if not n:
        return
    valid = buffers.validity
    if valid is not None and valid.all():
        valid = None
    if not isinstance(engine, NullableEngine):
        if valid is not None:
            first = int(np.flatnonzero(~valid)[0])
            raise ValueError(f"row {first} is missing, and this fixed-size binary carray "
                             f"is not nullable (make it with nullable=True)")
        engine.append(np.ascontiguousarray(values))
        return
    if valid is None:
        engine.append((values, np.ones(n, dtype=bool)))
        return
    valid = np.asarray(valid, dtype=bool)[:n]
    raw = values.view(np.uint8).reshape(n, width) if values.flags.c_contiguous else None
    if raw is not None and not raw[~valid].any():     # (missing rows' slots already zeros)
        engine.append((values, valid))
        return
    # a missing row's slot holds zeros: copied and cleared a chunk's rows at a time
    step = max(1, int(getattr(engine.values, "chunklen", n)))
    for start in range(0, n, step):
        stop = min(n, start + step)
        part, keep = np.array(values[start:stop], copy=True), valid[start:stop]
        part.view(np.uint8).reshape(stop - start, width)[~keep] = 0
        engine.append((part, keep))


def decode_rows(engine, start: int, stop: int, width: int) -> ArrowBuffers:
    """Rows ``[start, stop)`` of ``engine`` as Arrow buffers (``V{width}`` values,
    the validity where a row is missing)."""
    if isinstance(engine, NullableEngine):
        values = engine.values.read_range(start, stop)
        valid = engine.valid_range(start, stop)
        return ArrowBuffers(stop - start, None if valid.all() else valid, None, values)
    return ArrowBuffers(stop - start, None, None, engine.read_range(start, stop))
