"""What carray's iteration, ``where``, ``wheretrue``, ``reshape`` and ``sum``
compute, as plain functions over a read function, the chunk engine and the
metadata; the carray (:mod:`bcolz_store.carray`) calls them with its parts.

Source: bcolz 1.x's carray methods (signatures, defaults and behaviour).
"""

from __future__ import annotations

import numpy as np

from .indexing import PYTHON_SCALAR_KINDS, is_int, matching_positions

__all__ = ["adopt_chunks", "check_where", "chunk_stats", "copy_dflt", "copy_rows",
           "engine_sum", "isnull", "item_engine", "iter_items", "new_shape", "notnull",
           "recompute_stats", "reshaped_rows", "stage_chunk", "sum_dtype", "true_positions",
           "values_where"]


def item_engine(c):
    """The chunk engine of the items ``c`` stores, whose statistics and index
    it keeps: its kind's (a categorical carray's codes engine), else its engine."""
    return c._column.item_engine(c._engine)


def chunk_stats(c):
    """The chunk statistics of the carray ``c`` for planning a query
    (a :class:`~bcolz_store.chunks.stats.ColumnStats`: per chunk, the leftover
    last, its rows, min, max, missing items and whether they are known), or
    None for a carray in memory or of a kind without statistics.

    The leftover's statistics are known only to a reader (mode ``'r'``),
    whose leftover cannot change in memory; a writer's leftover and any chunk
    whose statistics are not known yet are marked unknown (to be read).
    """
    engine = item_engine(c)
    stats = getattr(engine, "stats", None)
    if stats is None:
        return None
    return stats.column_stats(engine, use_leftover=c._files.store.readonly)


def recompute_stats(c):
    """Recompute the chunk statistics of the stored carray ``c`` (opened for
    writing, nothing written since) from its items, reading every chunk; its
    next commit writes them where they changed.

    Returns
    -------
    tuple
        ``(kind, why)``: the statistics kind (None for a carray without
        statistics, ``why`` then None too) and why the committed statistics
        did not describe the items (``'no statistics'``, damaged, or a chunk
        whose statistics differ), None when they did.
    """
    engine = item_engine(c)
    stats = getattr(engine, "stats", None)
    if stats is None:
        return None, None
    return stats.kind, stats.recompute(engine)


def iter_items(read, atom, chunklen, start, stop, step, limit, skip):
    """Yield the items ``start:stop:step`` (``read(slice)`` reads them), skipping
    the first ``skip`` and yielding at most ``limit``; Python scalars for the
    kinds bcolz gives them (bool, int)."""
    if limit is not None and limit <= 0:
        return
    emitted = 0
    skipped = 0
    blen = max(chunklen, 1)
    pos = start
    while pos < stop:
        end = min(stop, pos + blen * step)
        block = read(slice(pos, end, step))
        if skipped < skip:
            drop = min(skip - skipped, len(block))
            skipped += drop
            block = block[drop:]
        items = block if atom.shape or atom.kind not in PYTHON_SCALAR_KINDS else block.tolist()
        if isinstance(block, np.ma.MaskedArray):     # a nullable carray: nulls as masked
            data = block.data if atom.shape or atom.kind not in PYTHON_SCALAR_KINDS \
                else block.data.tolist()
            items = [np.ma.masked if null else v for v, null in
                     zip(data, np.ma.getmaskarray(block).reshape(len(block), -1).any(1))]
        for item in items:
            yield item
            emitted += 1
            if limit is not None and emitted >= limit:
                return
        pos = end
        if (pos - start) % step:
            pos += step - (pos - start) % step


def true_positions(boolarr, limit, skip, chunklen):
    """Yield the positions where a boolean carray is true."""
    for found in matching_positions(boolarr, limit, skip, chunklen):
        yield from found.tolist()


def values_where(gather, boolarr, limit, skip, blen):
    """Yield the values (``gather(positions)``) where ``boolarr`` is true."""
    for found in matching_positions(boolarr, limit, skip, blen):
        yield from gather(found)


def new_shape(newshape, size: int, one_dimensional: bool) -> tuple:
    """``newshape`` with its -1 resolved, checked against ``size`` items.

    Raises
    ------
    ValueError
        Sizes that differ, more than one -1, or more than one dimension for
        a carray of objects or vlen items (``one_dimensional``).
    """
    if is_int(newshape):
        newshape = (int(newshape),)
    newshape = tuple(int(n) for n in newshape)
    if newshape.count(-1) > 1:
        raise ValueError("only one shape dimension can be -1")
    if -1 in newshape:
        pos = newshape.index(-1)
        other = int(np.prod(newshape[:pos] + newshape[pos + 1:]))
        newshape = newshape[:pos] + ((size // other) if other else 0,) + newshape[pos + 1:]
    if int(np.prod(newshape)) != size:
        raise ValueError("`newshape` is not compatible with the current one")
    if one_dimensional and len(newshape) > 1:
        raise ValueError("object carrays and vlen carrays are one-dimensional")
    return newshape


def reshaped_rows(blocks, base, newshape: tuple):
    """Yield the data of ``blocks`` (arrays of ``base`` dtype, any shape) as
    rows of ``newshape[1:]``."""
    rowsize = int(np.prod(newshape[1:])) if len(newshape) > 1 else 1
    buf = np.empty(0, dtype=base)
    for block in blocks:
        buf = np.concatenate((buf, block.ravel()))
        nrows = len(buf) // rowsize
        if nrows:
            yield buf[:nrows * rowsize].reshape((nrows,) + newshape[1:])
            buf = buf[nrows * rowsize:]


def sum_dtype(base: np.dtype, dtype, vlen: bool) -> np.dtype:
    """The accumulator dtype of ``sum`` (numpy's rules).

    Raises
    ------
    TypeError
        For string dtypes and vlen carrays.
    """
    if dtype is None:
        dtype = base
        if dtype.kind in "bi" and dtype.itemsize < np.dtype(np.int_).itemsize:
            dtype = np.dtype(np.int_)
        elif dtype.kind == "u" and dtype.itemsize < np.dtype(np.uint).itemsize:
            dtype = np.dtype(np.uint)
    else:
        dtype = np.dtype(dtype)
    if dtype.kind in "SUVT" or vlen:
        raise TypeError("cannot perform reduce with flexible type")
    return dtype


def engine_sum(engine, dtype: np.dtype):
    """The sum of every item: each chunk summed where it is decoded (on the
    thread pool), the partial sums added in chunk order, so the result is the
    same for every number of threads."""
    result = np.zeros((), dtype=dtype)[()]
    for partial in engine.reduce_chunks(lambda block: block.sum(dtype=dtype)):
        result += partial
    return result


def check_where(boolarr, length: int, ndim: int) -> None:
    """The checks of ``carray.where``.

    Raises
    ------
    NotImplementedError
        A multidimensional carray.
    ValueError
        ``boolarr`` not a boolean array of ``length``.
    """
    if ndim > 1:
        raise NotImplementedError("`self` is not unidimensional")
    if not hasattr(boolarr, "dtype"):
        raise ValueError("`boolarr` is not an array")
    if boolarr.dtype.type != np.bool_:
        raise ValueError("`boolarr` is not an array of booleans")
    if len(boolarr) != length:
        raise ValueError("`boolarr` must be of the same length than ``self``")


def copy_rows(engine, meta, guard, length: int, blocks, out_engine, rows=None) -> None:
    """Append every row (``blocks``: the source's blocks; ``rows(blocks)``:
    them reshaped) to ``out_engine``; pickles after ``guard()``."""
    if meta.atom.kind == "O":
        if length:
            guard()
        out_engine.append(engine.read_range(0, length))
        return
    for block in blocks if rows is None else rows(blocks):
        out_engine.append(block)


def copy_dflt(c):
    """The ``dflt`` a copy of ``c`` is made with: None for a nullable carray
    that grows with nulls (its copy does too), else ``c.dflt``."""
    return None if c._column.grows_null(c._meta) else c.dflt


# carray.isnull and carray.notnull themselves

def isnull(self) -> np.ndarray:
    # Whether each item of the carray ``self`` is null: a bool array of its length.
    """Which items are null (a nullable carray's nulls; None items of a vlen or
    categorical carray).

    Returns
    -------
    numpy.ndarray of bool, shape (len,)

    Raises
    ------
    FormatError
        A damaged validity.
    """
    c = self
    return c._column.isnull(c._engine, c._meta, c.len, lambda: c[:])


def notnull(self) -> np.ndarray:
    """Which items are present: ``~isnull()``.

    Returns
    -------
    numpy.ndarray of bool, shape (len,)

    Raises
    ------
    FormatError
        A damaged validity.
    """
    return ~isnull(self)


def stage_chunk(c, nchunk: int, rows) -> int:
    """Compress ``rows`` as full chunk ``nchunk`` of the stored carray ``c``
    and stage its file; with :func:`adopt_chunks`, how
    :func:`bcolz_store.from_dask` completes a carray whose other chunk files
    dask's tasks wrote.

    Parameters
    ----------
    c : carray
        A stored carray being written.
    nchunk : int
        The chunk's number (its file ``data/__<nchunk>.blp``).
    rows : numpy.ndarray
        ``chunklen`` atoms of the carray's dtype.

    Returns
    -------
    int
        The chunk's compressed size in bytes.

    Raises
    ------
    ReadOnlyError
        On a read-only dataset.
    """
    return c._engine.stage_chunk(nchunk, rows)


def adopt_chunks(c, nchunks: int, cbytes: int, leftover, stats=()) -> None:
    """Count chunk files staged by others as the carray ``c``'s full chunks.

    Parameters
    ----------
    c : carray
        A stored carray being written.
    nchunks : int
        Full chunk files in all.
    cbytes : int
        Compressed bytes of those not staged through :func:`stage_chunk`.
    leftover : numpy.ndarray
        Rows appended after them (the atom's dtype and shape); no append is
        noted for the commit record.
    stats : iterable of (int, tuple), optional
        ``(nchunk, statistics)`` of chunk files whose writers computed their
        chunk statistics (``bcolz_store.chunks.stats.stored_stats``); those
        of the others are computed from their files before the commit.
    """
    c._engine.adopt_chunks(nchunks, cbytes, stats)
    if len(leftover):
        c._engine.append(leftover)


def field_carray(self, name):
    """Field ``name`` of this carray of rows with named fields (a struct
    carray), as a read-only carray sharing its engine (rows appended but not
    yet flushed included).

    Parameters
    ----------
    name : str
        The field's name, as the struct type gives it.

    Returns
    -------
    carray
        Of the field's kind and the struct's length; mode ``'r'`` (write
        through the struct carray: a field alone cannot change length).

    Raises
    ------
    TypeError
        When this carray's rows have no fields (not a struct carray).
    KeyError
        When it has no such field.
    """
    engine, meta = self._column.field_of(self._meta, self._engine, name)
    out = self.view()
    out._engine, out._meta, out._mode = engine, meta, "r"
    return out
