"""Reading a carray: what ``x[key]`` returns for ints, slices of any step,
tuples, integer and boolean arrays, boolean carrays and expressions.

Plain functions over the carray's chunk engine and metadata; the carray
(:mod:`bcolz_store.carray`) calls them with its parts.  ``guard`` is the
carray's check that pickles may be read (object carrays from a store need
``allow_pickle``).

Source: bcolz 1.x ``carray.__getitem__`` (results and errors), with negative
slice steps and integer arrays of any integer dtype added.
"""

from __future__ import annotations

import numpy as np

from .kinds.base import ColumnKind, column_kind, kind_of
from .indexing import PYTHON_SCALAR_KINDS, is_int, position, positions, within_rows, is_carray
from .query.eval import evaluate

__all__ = ["eval_key", "gather", "pickled", "read_key", "read_mask", "read_range"]


def pickled(meta, column=None) -> bool:
    """Whether items are Python objects stored as pickles (bcolz's object
    carrays); ``column``: the ColumnKind class holding the carray (found from
    ``meta`` when not given), as every function here takes it."""
    return meta.atom.kind == "O" and (column or column_kind(meta)) is ColumnKind


def read_range(engine, meta, guard, start: int, stop: int, column=None) -> np.ndarray:
    """Atoms ``start:stop`` (0 <= start <= stop <= len) as a new array."""
    if meta.atom.kind == "O":
        column = column or column_kind(meta)
        if column is ColumnKind:
            guard()
        elif column.python_items and (kind := kind_of(meta)) is not None:
            # (a kind that reads Python items itself)
            found = kind.read_python(engine, start, stop)
            if found is not None:
                return found
    return engine.read_range(start, stop)


def gather(engine, meta, guard, idx: np.ndarray, column=None) -> np.ndarray:
    """Atoms at positions ``idx`` (int64, in range; any order, repeats allowed)."""
    if pickled(meta, column) and idx.size:
        guard()
    return engine.gather(idx)


def read_mask(engine, meta, guard, mask, length: int, column=None) -> np.ndarray:
    """Values where a boolean mask (ndarray or carray) is true.

    Raises
    ------
    IndexError
        A mask whose length is not ``length``.
    """
    if len(mask) != length:
        raise IndexError("boolean array length must match len(self)")
    if is_carray(mask):
        parts = []
        start = 0
        for block in mask._iterblocks(meta.chunklen):
            hits = np.flatnonzero(block)
            if hits.size:
                parts.append(gather(engine, meta, guard, hits + start, column))
            start += len(block)
        if parts:
            return np.concatenate(parts, dtype=parts[0].dtype)
        return np.empty((0,) + meta.atom.shape, dtype=meta.atom.base)
    return gather(engine, meta, guard, np.flatnonzero(np.asarray(mask)), column)


def read_key(engine, meta, guard, key, length: int, read, column=None):
    """``x[key]`` for every key but an expression string.

    Parameters
    ----------
    engine : ChunkEngine or another engine
    meta : CarrayMeta
    guard : callable
        Raises ``UnsafeDataError`` when pickles may not be read.
    key : int, slice, tuple, array_like or carray
    length : int
        The carray's length.
    read : callable
        ``read(key)``: the carray's own ``__getitem__`` (tuples read their
        rows through it).
    column : type, optional
        The ColumnKind class holding the carray (``column_kind(meta)``: found
        when not given).

    Returns
    -------
    scalar or numpy.ndarray

    Raises
    ------
    IndexError
        Out-of-range ints, a mask of the wrong length, non-integer arrays,
        unsupported keys.
    ValueError
        An empty tuple, or a zero slice step.
    """
    atom = meta.atom
    if is_int(key):
        i = position(key, length)
        if pickled(meta, column):
            guard()
            return engine.item(i)
        nchunk, pos = divmod(i, meta.chunklen)
        value = engine.point(nchunk, pos)
        if isinstance(value, np.ndarray):
            return value.copy()
        return value.item() if atom.kind in PYTHON_SCALAR_KINDS else value
    if isinstance(key, slice):
        start, stop, step = key.indices(length)
        if step == 1:
            return read_range(engine, meta, guard, start, max(start, stop), column)
        if step > 1:
            n = len(range(start, stop, step))
            if n == 0:
                return np.empty((0,) + atom.shape, dtype=atom.base)
            last = start + (n - 1) * step
            if n * 8 >= (last - start) and atom.kind != "O":   # dense: read the span once
                return read_range(engine, meta, guard, start, last + 1, column)[::step].copy()
            return gather(engine, meta, guard, np.arange(start, last + 1, step, dtype=np.int64),
                          column)
        return gather(engine, meta, guard, np.arange(start, stop, step, dtype=np.int64), column)
    if isinstance(key, tuple):
        if len(key) == 0:
            raise ValueError("empty tuple not supported")
        if len(key) == 1:
            return read(key[0])
        arr = read(key[0])
        arr = arr[within_rows(key, key[0][:] if is_carray(key[0]) else None)]
        return np.ascontiguousarray(arr) if isinstance(arr, np.ndarray) else arr
    if is_carray(key):
        if key.dtype != np.bool_:
            key = key[:]
        else:
            return read_mask(engine, meta, guard, key, length, column)
    if isinstance(key, (list, range)) or hasattr(key, "dtype") or hasattr(key, "__array__"):
        try:
            idx = np.asarray(key)
            if isinstance(key, list) and idx.dtype.kind == "f":
                idx = idx.astype(np.int64)  # bcolz truncates float lists
        except (TypeError, ValueError) as err:
            raise IndexError("key cannot be converted to an array of indices") from err
        if idx.dtype == np.bool_:
            return read_mask(engine, meta, guard, idx, length, column)
        if idx.size == 0:
            idx = idx.astype(np.int64)
        if idx.dtype.kind not in "iu":
            raise IndexError("arrays used as indices must be integer (or boolean)")
        return gather(engine, meta, guard, positions(idx, length), column)
    raise IndexError(f"key not supported: {key!r}")


def eval_key(expression: str, frame, make_result, length: int):
    """The boolean carray an expression key evaluates to, with the variables
    of the caller's ``frame``.

    Raises
    ------
    IndexError
        A result that is not boolean, or not of ``length``.
    QueryError
        An expression that cannot be evaluated.
    """
    user_dict = dict(frame.f_globals)
    user_dict.update(frame.f_locals)
    result = evaluate(expression, user_dict, make_result=make_result)
    if result.dtype.type != np.bool_:
        raise IndexError("only boolean expressions supported")
    if len(result) != length:
        raise IndexError("boolean expression outcome must match len(self)")
    return result


def kind_buffers(kind, engine, length: int, start, stop):
    """Rows ``[start, stop)`` of a carray of the column kind ``kind`` (None: of
    bcolz's fixed dtypes) and ``length`` rows in ``engine``, as Arrow buffers
    (:meth:`ColumnKind.decode <bcolz_store.kinds.base.ColumnKind.decode>`);
    ``start``/``stop`` as a slice's, without a step.

    Raises
    ------
    TypeError
        The carray is of bcolz's own fixed dtypes (no column kind).
    """
    if kind is None:
        raise TypeError("this carray is of a fixed dtype, with no column kind: read it "
                        "with c[start:stop]")
    start, stop, _ = slice(start, stop).indices(length)
    return kind.decode(engine, start, max(start, stop))

