"""Changing a carray: converting what ``append`` and ``x[key] = value`` take,
and finding what an assignment key addresses.

Plain functions over the carray's metadata and chunk engine; the carray
(:mod:`bcolz_store.carray`) runs each write inside its dataset's write
context, so a failure returns it to its last committed state.

Source: bcolz 1.x carray methods (conversions and errors).
"""

from __future__ import annotations

import numpy as np

from .indexing import is_carray
from .indexing import is_int, position, positions
from .kinds.base import AppendBlocks, check_plain_items, column_kind, item_blocks, kind_of
from .kinds.buffers import ArrowBuffers

__all__ = ["AppendBlocks", "append_blocks", "assign", "assignment_target",
           "filler_blocks", "prepare_append", "to_ndarray"]


def to_ndarray(value, dtype, meta=None, categorical=False, arrlen=None, where="carray",
               column=None):
    """``value`` as a contiguous array of ``dtype``; scalars become length 1.

    Parameters
    ----------
    value : array_like
    dtype : numpy.dtype or None
        None: numpy's own choice.
    meta : CarrayMeta, optional
        The carray's metadata (None while it is being created).
    categorical : bool
        Whether the carray is categorical: lists become object arrays of
        references to their items (each becomes a code; no copies).
    arrlen : int, optional
        The number of items wanted (a value is broadcast to it).
    where : str
        What to name in errors.
    column : type, optional
        The ColumnKind class holding the carray (``column_kind(meta)``: found
        when not given), which converts items of its kind.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    ValueError
        Values that cannot be converted, or not broadcast to ``arrlen``.
    """
    if categorical and isinstance(value, (list, tuple)):
        items = np.fromiter(value, dtype=object, count=len(value))
        if arrlen is not None and len(items) != arrlen:
            if len(items) != 1:
                raise ValueError(f"{where}: cannot assign {len(items)} items to "
                                 f"{arrlen} positions")
            items = np.full(arrlen, items[0], dtype=object)
        return items
    if meta is not None:
        if column is None:
            column = column_kind(meta)
        items = column.to_items(value, dtype, meta, arrlen, where)   # a kind's items
        if items is not None:
            return items
        check_plain_items(value, meta, where)      # (what only a kind's carrays hold)
    if dtype is None:
        array = np.asarray(value)
    else:
        try:
            if dtype.kind == "O":
                if isinstance(value, np.ndarray) and value.dtype.kind == "O":
                    array = value
                else:
                    array = np.empty(len(value), dtype=object)
                    array[:] = list(value)
            else:
                array = np.asarray(value, dtype=dtype)
        except (TypeError, ValueError) as err:
            raise ValueError(f"cannot convert to an ndarray of dtype {dtype}: {err}") from err
    array = np.ascontiguousarray(array)
    if array.ndim == 0:
        array = array.reshape(1)
    if arrlen is not None and array.shape != (arrlen,) + meta.atom.shape:
        atom = meta.atom
        full = np.empty((arrlen,) + atom.shape, dtype=atom.base)
        try:
            full[...] = array.reshape(full.shape) if array.size == full.size else array
        except ValueError as err:
            raise ValueError(f"cannot assign values of shape {array.shape} to "
                             f"{arrlen} items of shape {atom.shape}") from err
        array = full
    return array


def prepare_append(meta, engine, safe, array, convert, column=None):
    """``array`` made ready for the engine's ``append``, changing nothing: a
    carray is kept as it is (appended block by block; for a vlen or
    categorical carray, checked first: the kind's ``prepare_carray``), anything
    else converted (``convert(value, dtype)``: the carray's :func:`to_ndarray`);
    ``column`` the ColumnKind class holding the carray (found when not given).

    Raises
    ------
    ValueError
        Data that cannot be converted, or whose trailing dimensions differ
        from the atom's.
    KindMismatchError
        str items for a carray of bytes, or bytes for one of str.
    """
    atom = meta.atom
    if isinstance(array, ArrowBuffers):     # encoded by the carray's column kind
        kind = kind_of(meta)                # (checked first where the kind can)
        check = getattr(kind, "prepare", None)
        return array if check is None else check(engine, array)
    if column is None:
        column = column_kind(meta)
    if column.python_items:             # decimal or struct items: checked before any write
        return engine.prepare(convert(array[:] if is_carray(array) else array, atom))
    if column.variable_items:
        prepared = column.prepare_carray(meta, engine, array, convert) \
            if is_carray(array) else None
        return engine.prepare(convert(array, atom)) if prepared is None else prepared
    if is_carray(array):
        if array.dtype.kind == "O" or atom.kind == "O":
            return array[:] if atom.kind == "O" else \
                prepare_append(meta, engine, safe, array[:], convert, column)
        if array.shape[1:] != atom.shape:
            raise ValueError("array trailing dimensions do not match with self")
        return array
    if atom.kind == "O":
        return convert(array, atom)
    arr = convert(array, atom.base) if safe else array
    if arr.shape == atom.shape or (atom.shape and arr.shape == (1,) and atom.shape != (1,)):
        arr = arr.reshape((1,) + atom.shape) if arr.size == int(np.prod(atom.shape)) else arr
    if arr.shape == (0,) and atom.shape:      # an empty list: nothing to append
        arr = arr.reshape((0,) + atom.shape)
    if arr.shape[1:] != atom.shape:
        raise ValueError("array trailing dimensions do not match with self")
    return arr


def append_blocks(prepared, dtype, convert):
    """What the engine's ``append`` takes, in order, for ``prepared`` (what
    :func:`prepare_append` gave): its blocks, the blocks of a carray (each
    converted by ``convert(block, dtype)``), or ``prepared`` itself."""
    if isinstance(prepared, AppendBlocks):
        return prepared
    if is_carray(prepared):
        return (convert(block, dtype) for _, block in item_blocks(prepared))
    return (prepared,)


def filler_blocks(meta, fill, grow: int, column=None):
    """Blocks of ``grow`` atoms in all, each holding ``fill`` as the kind
    (``column``: found when not given) fills them (what ``resize`` appends),
    at most one chunk each."""
    if column is None:
        column = column_kind(meta)
    block = max(meta.chunklen, 1)
    while grow:
        n = min(grow, block)
        yield column.filler(meta, fill, n)
        grow -= n


def assignment_target(key, length: int):
    """What ``x[key] = value`` addresses, for keys other than tuples and
    expression strings.

    Returns
    -------
    tuple
        ``("slice", start, stop, step, reversed)`` with a positive step
        (``reversed``: the values go in reverse order, a negative step), or
        ``("positions", idx)`` with int64 positions in range.

    Raises
    ------
    IndexError
        Out-of-range ints, keys that are no indices.
    ValueError
        A boolean mask of the wrong length.
    """
    if is_int(key):
        i = position(key, length)
        return ("slice", i, i + 1, 1, False)
    if isinstance(key, slice):
        start, stop, step = key.indices(length)
        if step < 0:
            n = len(range(start, stop, step))
            return ("slice", start + (n - 1) * step, start + 1, -step, True) if n else \
                ("positions", np.zeros(0, dtype=np.int64))
        return ("slice", start, stop, step, False)
    if is_carray(key):
        key = key[:]
    try:
        idx = np.asarray(key)
    except (TypeError, ValueError) as err:
        raise IndexError("key cannot be converted to an array of indices") from err
    if idx.dtype == np.bool_:
        if len(idx) != length:
            raise ValueError("boolean array length must match len(self)")
        return ("positions", np.flatnonzero(idx))
    if idx.size == 0:
        return ("positions", np.zeros(0, dtype=np.int64))
    if idx.dtype.kind not in "iu":
        raise IndexError("arrays used as indices must be of integer (or boolean) type")
    return ("positions", positions(idx, length).ravel())


def assign(engine, meta, key, value, length: int, convert, writing) -> None:
    """``x[key] = value`` for keys other than tuples and expression strings.

    Parameters
    ----------
    engine, meta
        The carray's chunk engine and metadata.
    key, value
        As ``__setitem__`` takes them.
    length : int
    convert : callable
        ``convert(value, dtype, arrlen=n)``: the carray's :func:`to_ndarray`.
    writing : callable
        ``writing(op)``: the carray's write context.

    Raises
    ------
    IndexError, ValueError
        As :func:`assignment_target`; values that cannot broadcast.
    """
    target = assignment_target(key, length)
    atom = meta.atom
    if target[0] == "slice":
        _, start, stop, step, backwards = target
        n = len(range(start, stop, step))
        if n:
            vals = convert(value, atom.base, arrlen=n).reshape((n,) + atom.shape)
            vals = engine.prepare(vals[::-1] if backwards else vals)   # refused: no change
            with writing("setitem"):
                engine.set_slice(start, stop, step, vals)
        return
    idx = target[1]
    if idx.size:
        vals = convert(value, atom.base, arrlen=len(idx))
        if len(vals) != len(idx):
            raise ValueError(f"cannot assign {len(vals)} values to {len(idx)} positions")
        vals = engine.prepare(vals)
        with writing("setitem"):
            engine.set_positions(idx, vals)


def append_block(kind, engine, block, where) -> None:
    """Append a block of rows to a carray's ``engine``: numpy rows as the engine
    takes them, Arrow buffers (:class:`~bcolz_store.kinds.buffers.ArrowBuffers`)
    encoded by the carray's column kind ``kind`` (``where``: its rootdir, for
    messages).

    Raises
    ------
    TypeError
        Arrow buffers for a carray of a fixed dtype (``kind`` None).
    ValueError
        As :meth:`~bcolz_store.kinds.base.ColumnKind.encode`.
    """
    if not isinstance(block, ArrowBuffers):
        engine.append(block)
    elif kind is None:
        raise TypeError(f"{where or 'carray'}: Arrow buffers are appended to a carray of a "
                        f"column kind; this one is of a fixed dtype")
    else:
        kind.encode(engine, block)
