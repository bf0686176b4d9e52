"""Changing a carray: converting what ``append`` and ``x[key] = value`` take,
and finding what an assignment key addresses.

Plain functions over the carray's metadata and chunk engine; the carray
(:mod:`bcolz_store.carray`) runs each write inside its dataset's write
context, so a failure returns it to its last committed state.

Source: bcolz 1.x carray methods (conversions and errors).
"""

from __future__ import annotations

import numpy as np

from . import threads
from .indexing import is_carray
from .kinds.category.engine import CategoryEngine, PreparedCodes
from .kinds.vlen.chunk_items import as_items
from .errors import FormatError, KindMismatchError
from .items import composite_items, masked_to_objects
from .indexing import is_int, position, positions
from .kinds.base import kind_of
from .kinds.buffers import ArrowBuffers
from .kinds.nullable.types import as_masked, is_null_item, pandas_masked
from .kinds.list.types import as_list_items

__all__ = ["AppendBlocks", "append_blocks", "assign", "assignment_target",
           "filler_blocks", "prepare_append", "to_ndarray"]


def to_ndarray(value, dtype, meta=None, categorical=False, arrlen=None, where="carray"):
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
    if meta is not None and meta.composite is not None:    # decimal or struct items
        return composite_items(value, arrlen, where)
    if meta is not None and meta.listtype is not None:     # lists: one item or several
        return as_list_items(value, meta.listtype, arrlen, where)
    if meta is not None and meta.nullable is not None:
        return _masked_items(value, dtype, meta, arrlen, where)
    if meta is not None and meta.vlen is None and meta.atom.kind != "O" and \
            _has_nulls(value, meta.atom.kind in "Mm"):
        raise ValueError(f"{where}: this carray is not nullable, and the values hold null "
                         f"items (None, masked, NA); write a nullable copy first "
                         f"(carray(c, nullable=True), or ctable.addcol of one)")
    vlen = meta.vlen if meta is not None else None
    if vlen is not None:        # items of any length: one strict conversion
        return as_items(value, vlen.kind, meta.atom, vlen.nullable, arrlen, where)
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


def _masked_items(value, dtype, meta, arrlen, where) -> np.ma.MaskedArray:
    """``value`` as a masked array for a nullable carray (:func:`to_ndarray`)."""
    atom = meta.atom
    items = as_masked(value, atom.base if dtype is None else dtype, where)
    if atom.shape and items.shape == atom.shape:
        items = items.reshape((1,) + atom.shape)
    if arrlen is not None and len(items) != arrlen:
        if len(items) != 1:
            raise ValueError(f"{where}: cannot assign {len(items)} items to {arrlen} positions")
        items = np.ma.MaskedArray(np.repeat(items.data, arrlen, axis=0),
                                  mask=np.repeat(np.ma.getmaskarray(items), arrlen, axis=0))
    return items


def prepare_append(meta, engine, safe, array, convert):
    """``array`` made ready for the engine's ``append``, changing nothing: a
    carray is kept as it is (appended block by block; for a vlen or
    categorical carray, checked first: :func:`prepare_carray`), anything else
    converted (``convert(value, dtype)``: the carray's :func:`to_ndarray`).

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
    if meta.composite is not None:      # decimal or struct items: checked before any write
        return engine.prepare(convert(array[:] if is_carray(array) else array, atom))
    if meta.variable:
        if is_carray(array) and meta.vlen is not None:
            return prepare_carray(meta, engine, array, convert)
        return engine.prepare(convert(array, atom))
    if is_carray(array):
        if array.dtype.kind == "O" or atom.kind == "O":
            return array[:] if atom.kind == "O" else \
                prepare_append(meta, engine, safe, array[:], convert)
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


class AppendBlocks:
    """The blocks that appending a carray writes, checked before anything
    changes: iterating gives them ready for the engine's ``append``.

    Parameters
    ----------
    make : callable
        ``make()``: an iterable of the blocks, made when the append runs.
    """

    __slots__ = ("_make",)

    def __init__(self, make):
        self._make = make

    def __iter__(self):
        return iter(self._make())


def append_blocks(prepared, dtype, convert):
    """What the engine's ``append`` takes, in order, for ``prepared`` (what
    :func:`prepare_append` gave): its blocks, the blocks of a carray (each
    converted by ``convert(block, dtype)``), or ``prepared`` itself."""
    if isinstance(prepared, AppendBlocks):
        return prepared
    if is_carray(prepared):
        return (convert(block, dtype) for _, block in _item_blocks(prepared))
    return (prepared,)


def _block_len(source) -> int:
    """Items a block of ``source`` holds (as many chunks as the thread pool
    decodes at once)."""
    return max(int(source.chunklen), 1) * threads.chunks_per_block()


def _item_blocks(source):
    """``(start, items)`` of each block of the carray ``source``."""
    n, blen = len(source), _block_len(source)
    for start in range(0, n, blen):
        yield start, source[start:min(start + blen, n)]


def _kind_of(source):
    """The kind of items of the carray ``source``: 'str' or 'bytes'; None
    when its items tell (an object carray, a categorical one with no
    categories, which holds only missing items); else its dtype's name."""
    cat = source.category
    if cat is not None:
        return cat.kind
    if source.vlen is not None:
        return source.vlen.kind
    return {"U": "str", "S": "bytes", "O": None}.get(source.dtype.kind, str(source.dtype))


def _described(source, kind) -> str:
    if source.category is not None:
        return f"a categorical carray of {kind}"
    if source.vlen is not None:
        return f"a vlen carray of {kind}"
    return f"a carray of {source.dtype}"


def prepare_carray(meta, engine, source, convert) -> AppendBlocks:
    """The carray ``source`` made ready to append to a vlen or categorical
    carray: every refusal is raised now, before anything changes.

    A categorical carray's codes are translated into the codes of this
    one's categories (no item is decoded); the items of any other carray
    are turned into codes here (a categorical carray: the codes are held
    until the append) or checked here and converted again as they are
    appended (a vlen carray: only when an item may be refused: an object
    carray's, a ``U`` carray's (a lone surrogate), a missing item where none
    is allowed).

    Parameters
    ----------
    meta, engine
        The metadata and chunk engine of the carray appended to.
    source : carray
    convert : callable
        ``convert(value, dtype)``: the carray's :func:`to_ndarray`.

    Returns
    -------
    AppendBlocks

    Raises
    ------
    KindMismatchError
        ``source`` holds items of the other kind (str for bytes, bytes for
        str), or of a dtype that is neither.
    ValueError
        An item that is not a category, or a missing item where none is
        allowed.
    FormatError
        ``source``'s codes outside its categories (a damaged file).
    """
    categorical = isinstance(engine, CategoryEngine)
    where = engine.store.root if engine.store is not None else "carray"
    kind, theirs = meta.vlen.kind, _kind_of(source)
    if theirs is not None and theirs != kind and not (categorical and not engine.index):
        raise KindMismatchError(
            f"{where}: {_described(source, theirs)} cannot be appended to this carray of {kind} "
            f"items; {'encode' if kind == 'bytes' else 'decode'} its items first")
    atom = meta.atom
    if categorical and source.category is not None:
        return _translated_codes(engine, source, where)
    if categorical:
        kept = [engine.prepare(convert(block, atom)) for _, block in _item_blocks(source)]
        return AppendBlocks(lambda: kept)
    missing = source.category is not None or (source.vlen is not None and
                                              source.vlen.nullable)
    # no categories: missing items only, read as str; as objects they fit either kind
    plain = source.category is not None and theirs is None

    def blocks():
        for _, block in _item_blocks(source):
            yield convert(block.astype(object) if plain else block, atom)

    if theirs is None or source.dtype.kind == "U" or (missing and not meta.vlen.nullable):
        for _ in blocks():
            pass
    return AppendBlocks(blocks)


def _translated_codes(engine, source, where: str) -> AppendBlocks:
    """The codes of the categorical carray ``source`` as codes of ``engine``'s
    categories (:func:`prepare_carray`)."""
    cats = source.category.categories
    index = engine.index
    table = np.array([index.get(c, -2) for c in cats] + [-1], dtype=np.int64)
    atom = engine.codes.atom
    n, blen = len(source), _block_len(source)

    def blocks():
        for start in range(0, n, blen):
            codes = source.codes[start:min(start + blen, n)]
            if codes.size and (int(codes.min()) < -1 or int(codes.max()) >= len(cats)):
                raise FormatError(f"{source.rootdir or 'appended carray'}: a code outside "
                                  f"-1..{len(cats) - 1} (there are {len(cats)} categories)")
            yield start, codes, table[codes]

    if (table >= -1).all():     # every category of source is one here: stream them
        return AppendBlocks(lambda: (PreparedCodes(mapped.astype(atom))
                                     for _, _, mapped in blocks()))
    kept = []
    for start, codes, mapped in blocks():
        bad = np.flatnonzero(mapped == -2)
        if bad.size:
            raise engine.refusal(cats[int(codes[bad[0]])],
                                 f"{where}: item {start + int(bad[0])} of the appended carray")
        kept.append(PreparedCodes(mapped.astype(atom)))
    return AppendBlocks(lambda: kept)


def filler_blocks(meta, fill, grow: int):
    """Blocks of ``grow`` atoms in all, each holding ``fill`` (what ``resize``
    appends), at most one chunk each."""
    atom = meta.atom
    block = max(meta.chunklen, 1)
    nulls = meta.nullable is not None and meta.nullable.grow == "null"
    if getattr(meta.composite, "nullable", False) and \
            getattr(meta.composite, "grow", "dflt") == "null":
        fill = None             # a nullable decimal's items: None is a null
    while grow:
        n = min(grow, block)
        filler = np.empty((n,) + atom.shape, dtype=atom.base)
        filler[...] = fill
        yield np.ma.MaskedArray(filler, mask=True) if nulls else filler
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
