"""The changes of a ctable: creation, ``append``, ``trim``, ``resize``,
``addcol``, ``delcol``, row assignment, ``flush``.

Plain functions over the table's parts, given as their first arguments: its
columns (a :class:`~bcolz_store.columns.cols`), its :class:`Commits` (its
dataset and mode), ``then_flush`` (the table's ``flush`` method when it
flushes after each change, ``auto_flush``; else None), its length; then the
method's arguments.
A function that is the work of a ctable method says which; the method's
own docstring documents its arguments.  Each change is one table operation: on
disk its changes to every column and to ``__rootdirs__`` are one commit, and
when it fails the table returns to its last committed state
(:meth:`Commits.operation`).

Source: bcolz 1.x ``ctable`` (the methods' signatures and checks).
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil

import numpy as np

from . import attrs as _attrs
from . import carray_index as _index
from .carray import carray
from .columns import column_sources, columns_of, row_dtype
from .ctable_ops import as_rows, check_not_empty
from .ctable_query import condition
from .errors import BcolzStoreError, DatasetExistsError, ReadOnlyError
from .format.names import check_name
from .interop.arrow_stream import field_records, is_arrow_source
from .kinds.base import takes_items
from .kinds.buffers import ArrowBuffers

__all__ = ["Commits", "addcol", "append", "capture_appends", "create", "delcol", "flush", "purge",
           "resize", "set_item", "stage_pending", "trim"]


@dataclasses.dataclass(frozen=True)
class Commits:
    """How the changes of a table reach its dataset.

    Parameters
    ----------
    dataset : DatasetStore or None
        The table's dataset (None in memory).
    mode : {'r', 'w', 'a'}
        The table's mode.
    rootdir : str or None
        The table's rootdir, for messages.
    """

    dataset: object
    mode: str
    rootdir: object = None

    def check_writable(self, what: str) -> None:
        """Refuse (ReadOnlyError) to ``what`` in mode 'r'."""
        if self.mode == "r":
            raise ReadOnlyError(f"{self.rootdir}: cannot {what} because mode is 'r'")

    def batch(self):
        """Group the changes of one table operation into one commit (on disk)."""
        if self.dataset is None or self.mode == "r":
            return contextlib.nullcontext()
        return self.dataset.batch()

    @contextlib.contextmanager
    def operation(self, op=None):
        """One table operation (``op``: what it does, for the commit record):
        one commit, and on any failure the whole table returns to its last
        committed state (see
        :meth:`bcolz_store.storage.dataset.DatasetStore.operation`)."""
        if self.dataset is None or self.mode == "r":
            yield
            return
        with self.dataset.operation(op), self.dataset.batch():
            yield


# ------------------------------------------------------------------ creation

def create(cols, commits, flush_table, columns, names, kwargs, root_state, arrow=None) -> tuple:
    """Create the table's columns from ``columns`` and its attributes.

    On disk one commit, which also removes what was at the rootdir before
    (mode 'w'); on failure nothing new stays on disk.  Puts the columns'
    names and carrays in ``cols``.

    Parameters
    ----------
    cols : cols
        The table's (empty) columns.
    commits : Commits
    flush_table : callable
        The table's ``flush`` method, called on disk at the end.
    columns, names
        As the ctable constructor.
    kwargs : dict
        carray constructor parameters for every column (``dtype`` may be a
        dict of column name -> dtype).
    root_state : {'folder', 'other', 'missing'}
        What was at the rootdir.
    arrow : ArrowInput, optional
        When ``columns`` is the first block of an Arrow source
        (:func:`bcolz_store.interop.arrow_stream.table_source`): its following
        blocks are appended and its attrs set, in the same commit.

    Returns
    -------
    tuple
        The table's length and its :class:`~bcolz_store.attrs.attrs`.

    Raises
    ------
    ValueError
        Bad names, unsupported column data, or columns of different lengths.
    """
    dataset, rootdir = commits.dataset, cols.rootdir
    try:
        with commits.batch():
            if dataset is not None and rootdir is not None:
                dataset.note("create")
            length = _create_columns(cols, commits, columns, names, kwargs, root_state)
            attrs = _attrs.attrs(rootdir, commits.mode, _new=True, _store=dataset)
            if arrow is not None:
                length = _fill_from_arrow(cols, commits, attrs, arrow, length)
            if rootdir is not None:
                flush_table()
    except BaseException:
        if dataset is not None:
            dataset.discard()
            if root_state == "missing":
                with contextlib.suppress(OSError, BcolzStoreError):
                    dataset.store.remove_root()
        raise
    if dataset is not None and root_state == "folder":
        keep = set()
        for name in cols.names:
            keep.update((name, f"{name}/data", f"{name}/meta"))
        dataset.store.prune_empty_folders(keep)
    return length, attrs


def _fill_from_arrow(cols, commits, attrs, arrow, length: int) -> int:
    """Append the blocks after the first of an Arrow source, and set its attrs."""
    for blocks in arrow.rest:
        append(cols, commits, None, list(blocks))
        length += len(blocks[0])
    attrs.update(arrow.attrs)
    for name, values in arrow.col_attrs.items():
        cols[name].attrs.update(values)
    for name, values in field_records(arrow.fields, cols).items():
        cols[name].attrs.update(values)
    return length


def column_dtypes(dtype, names) -> dict:
    """``{name: dtype or None}`` for new ctable columns from the ``dtype`` argument:
    one dtype for every column, or a dict naming some of them.

    Raises
    ------
    ValueError
        A dict naming a column that is not among ``names``.
    """
    if not isinstance(dtype, dict):
        return {name: dtype for name in names}
    unknown = sorted(set(dtype) - set(names))
    if unknown:
        raise ValueError(f"dtype names columns {unknown} that are not among {list(names)}")
    return {name: dtype.get(name) for name in names}


def _create_columns(cols, commits, columns, names, kwargs, root_state) -> int:
    sources, names = column_sources(columns, names)
    dtypes = column_dtypes(kwargs.get("dtype"), names)
    prepared = []
    for name, src in zip(names, sources):
        dtype = dtypes[name]
        special = dtype is not None and takes_items(dtype)
        if not isinstance(src, (carray, np.ndarray, ArrowBuffers)) and not special:
            try:
                src = np.asarray(src, dtype=None if dtype is None else np.dtype(dtype).base)
            except (TypeError, ValueError) as err:
                raise ValueError(f"column {name!r} cannot be converted into a carray: "
                                 f"{err}") from err
        if isinstance(src, np.ndarray):
            if src.ndim == 0:
                raise ValueError(f"column {name!r} must have a length (got a scalar)")
            if src.dtype.kind == "V" and src.dtype.names:     # (raw V bytes are a column)
                raise ValueError("`columns` elements cannot be of type void")
        prepared.append(src)
    lengths = {len(src) for src in prepared}
    if len(lengths) > 1:
        raise ValueError("all `columns` must have the same length")
    rootdir, dataset = cols.rootdir, commits.dataset
    if rootdir is not None:
        if root_state != "missing":
            if commits.mode != "w":  # pragma: no cover - guarded in ctable.__init__
                raise DatasetExistsError(f"specified rootdir path '{rootdir}' "
                                         f"already exists and creation mode is '{commits.mode}'")
            if root_state == "folder":
                dataset.recover()   # finish a commit left by a killed writer
                dataset.remove_all()        # replaced in the creation's one commit
            else:
                dataset.store.remove_root()  # a file, or a broken link: not a dataset
        dataset.makedirs()
        if root_state != "folder":
            dataset.recover()   # the (empty) committed state, loaded before any blob is staged
    ckwargs = dict(kwargs, options=cols.options)
    ckwargs["mode"] = "w" if rootdir is not None else ckwargs.get("mode", "w")
    for name, src in zip(names, prepared):
        ckwargs.pop("dtype", None)
        if dtypes[name] is not None:
            ckwargs["dtype"] = dtypes[name]
        if rootdir is not None:
            ckwargs["rootdir"] = cols.column_rootdir(name)
            ckwargs["_store"] = cols.column_store(name)
        if isinstance(src, carray):
            column = src.copy(**ckwargs) if rootdir is not None else src
        else:
            column = carray(src, **ckwargs)
        cols.insert(name, len(cols), column)
    if rootdir is not None and not names:
        cols.update_meta()
    return lengths.pop() if lengths else 0


# ------------------------------------------------------------------ commits

def flush(cols, commits) -> None:
    """Commit the buffered rows of every column as one commit (no-op in memory or
    mode 'r').  The work of :meth:`bcolz_store.ctable.flush` over the table's parts;
    its docstring (on the method) gives the arguments after the
    parts, the result and the errors."""
    if commits.mode == "r":
        return
    with commits.operation():
        for name in cols.names:
            cols[name].flush()


def stage_pending(cols) -> None:
    """Stage the appends no column has staged yet (see carray._stage_pending)."""
    for name in cols.names:
        cols[name]._stage_pending()


def capture_appends(cols, start: int):
    """The rows appended since row ``start`` (the committed length), read now,
    as a function that appends them again (run once the newer committed state
    is loaded)."""
    rows = {name: cols[name]._pending_rows(start) for name in cols.names}

    def replay():
        for name, values in rows.items():
            col = cols[name]
            col._append_prepared(col._prepare_append(values))
    return replay


# ------------------------------------------------------------------ changes

def append(columns, commits, then_flush, cols) -> None:
    """Append rows; on disk one commit (with ``auto_flush``).  The work of
    :meth:`bcolz_store.ctable.append` over the table's parts; its docstring
    (on the method) gives the arguments after the parts, the
    result and the errors."""
    commits.check_writable("append")
    values = columns_of(columns, cols)     # (``cols``: the rows, bcolz's name)
    lengths = {len(v) for v in values}
    if len(lengths) > 1:
        raise ValueError("all cols in `cols` must have the same length")
    names = columns.names
    prepared = [columns[name]._prepare_append(value) for name, value in zip(names, values)]
    with commits.operation("append"):
        for name, value in zip(names, prepared):
            columns[name]._append_prepared(value)
        if then_flush is not None:
            then_flush()


def trim(cols, commits, length: int, nitems: int) -> int:
    """Remove the last ``nitems`` rows.  The work of :meth:`bcolz_store.ctable.trim`
    over the table's parts; its docstring (on the method) gives
    the arguments after the parts, the result and the errors."""
    commits.check_writable("trim")
    if nitems > length:
        raise ValueError(f"cannot trim {nitems} rows from a ctable of {length}")
    with commits.operation("trim"):
        for name in cols.names:
            cols[name].trim(nitems)
    return length - nitems


def resize(cols, commits, nitems: int) -> int:
    """Make the table ``nitems`` rows long; new rows hold each column's dflt.  The
    work of :meth:`bcolz_store.ctable.resize` over the table's parts; its docstring
    (on the method) gives the arguments after the parts, the
    result and the errors."""
    commits.check_writable("resize")
    with commits.operation("resize"):
        for name in cols.names:
            cols[name].resize(nitems)
    return nitems


def _position(pos, count: int, past_end: bool) -> int:
    """``pos`` checked as a column position among ``count`` (``past_end``:
    ``count`` itself allowed)."""
    top = count if past_end else count - 1
    if not isinstance(pos, (int, np.integer)) or isinstance(pos, bool) \
            or not 0 <= pos <= top:
        raise ValueError(f"`pos` must be an int in 0..{top}, not {pos!r}")
    return int(pos)


def addcol(cols, commits, then_flush, length: int, table_cparams, newcol, name=None,
           pos=None, move=False, **kwargs) -> None:
    """Add a column.  The work of :meth:`bcolz_store.ctable.addcol` over the table's
    parts; its docstring (on the method) gives the arguments
    after the parts, the result and the errors."""
    commits.check_writable("add a column")
    pos = len(cols.names) if pos is None else _position(pos, len(cols.names), True)
    name = f"f{pos}" if name is None else check_name(name)
    if name in cols.names:
        raise ValueError(f"{name!r} column already exists")
    if not (isinstance(newcol, (carray, np.ndarray, list, tuple)) or is_arrow_source(newcol)
            or type(newcol).__module__.startswith("pandas")):     # (as carray() takes them)
        raise ValueError(f"`newcol` type not supported: {type(newcol).__name__}")
    if len(newcol) != length:
        raise ValueError(f"`newcol` has length {len(newcol)}, the ctable {length}")
    col_rootdir = cols.column_rootdir(name) if cols.rootdir is not None else None
    if col_rootdir is not None:
        kwargs.setdefault("rootdir", col_rootdir)
        kwargs.setdefault("mode", "w")
    kwargs.setdefault("cparams", table_cparams)
    if not {"verify", "allow_pickle", "lock", "storage_options", "consolidated"} & set(kwargs):
        kwargs.setdefault("options", cols.options)
    store = cols.column_store(name)
    if store is not None and kwargs.get("rootdir") == col_rootdir:
        kwargs["_store"] = store
    dataset = commits.dataset
    with commits.operation("addcol"):
        if isinstance(newcol, carray) and col_rootdir and newcol.rootdir is not None:
            if move and newcol.dataset.local_root and dataset.local_root:
                if newcol.mode != "r":
                    newcol.flush()
                shutil.move(newcol.rootdir, col_rootdir)
                dataset.adopt(cols.folder(name) + "/")
                newcol = carray(rootdir=col_rootdir, mode="a", _store=store,
                                options=cols.options)
            else:
                newcol = newcol.copy(rootdir=col_rootdir, mode="w", _store=store,
                                     options=cols.options)
        else:
            newcol = carray(newcol, **kwargs)
        cols.insert(name, pos, newcol)
        if then_flush is not None:
            then_flush()


def delcol(cols, commits, then_flush, name=None, pos=None, keep=False) -> None:
    """Remove a column, by ``name`` or by ``pos`` (not both).  The work of
    :meth:`bcolz_store.ctable.delcol` over the table's parts; its docstring
    (on the method) gives the arguments after the parts, the
    result and the errors."""
    commits.check_writable("remove a column")
    if name is None and pos is None:
        raise ValueError("specify either a `name` or a `pos`")
    if name is not None and pos is not None:
        raise ValueError("you cannot specify both a `name` and a `pos`")
    if name is not None:
        if not isinstance(name, str):
            raise ValueError("`name` must be a string")
        if name not in cols.names:
            raise ValueError(f"`name` {name!r} not found in columns {cols.names}")
    else:
        name = cols.names[_position(pos, len(cols.names), False)]
    dataset = commits.dataset
    folder = cols.folder(name)
    with commits.operation("delcol"):  # the column's files and __rootdirs__: one commit
        col = cols.pop(name)
        if dataset is None:
            pass
        elif keep:
            dataset.forget(folder + "/")
        else:
            col.purge()
        if then_flush is not None:
            then_flush()
    if dataset is not None and not keep:
        dataset.store.delete_prefix(folder + "/")


def set_item(cols, commits, length: int, frame, key, value) -> None:
    """t[key] = value: replace a column, or set rows.  The work of
    :meth:`bcolz_store.ctable.__setitem__` over the table's parts; its docstring
    (on the method) gives the arguments after the parts, the
    result and the errors."""
    commits.check_writable("modify data")
    if isinstance(key, str) and key in cols:
        with commits.operation("setitem"):
            cols[key] = value
        return
    check_not_empty(cols.names, "assign to")
    rows = _nullable_rows(cols, value)
    rows = as_rows(row_dtype(cols), value) if rows is None else rows
    if isinstance(key, str):
        mask = condition(cols, length, key, {}, None, frame)
        key = np.flatnonzero(mask[:] if isinstance(mask, carray) else mask)
    elif isinstance(key, list):
        key = np.asarray(key)
    with commits.operation("setitem"):
        for name in cols.names:
            cols[name][key] = rows[name]


def _nullable_rows(cols, value):
    """``{name: values}`` of rows for a table with a nullable column, each
    column converting its own (None, masked: null); None where the rows are
    converted as a whole (no nullable column, or rows of another form)."""
    names = cols.names
    if not any(cols[n].nullable for n in names):
        return None
    if isinstance(value, np.ma.MaskedArray) and value.dtype.names:
        return {n: value[n] for n in names}
    rows = [value] if isinstance(value, tuple) else value
    if not isinstance(rows, list) or not all(isinstance(r, (tuple, list)) and
                                             len(r) == len(names) for r in rows):
        return None
    if isinstance(value, tuple):        # one row: one item per column
        return {n: value[i] for i, n in enumerate(names)}
    return {n: [r[i] for r in rows] for i, n in enumerate(names)}


def purge(commits) -> None:
    """Remove the whole on-disk table, as one commit (no-op in memory).  The work of
    :meth:`bcolz_store.ctable.purge` over the table's parts; its docstring
    (on the method) gives the arguments after the parts, the
    result and the errors."""
    commits.check_writable("purge")
    dataset = commits.dataset
    with commits.operation():
        dataset.remove_all()
        dataset.commit()
    dataset.forget_all()
    dataset.store.remove_root()


# ------------------------------------------------------------------ indexes

def _column(cols, name):
    if not isinstance(name, str) or name not in cols:
        raise KeyError(f"{name!r} is not a column of the ctable {cols.names}")
    return cols[name]


def create_index(cols, commits, name, kind="sorted") -> None:
    """Build an index of ``kind`` over column ``name`` and commit it.  The work of
    :meth:`bcolz_store.ctable.create_index` over the table's parts; its docstring
    (on the method) gives the arguments after the parts, the
    result and the errors."""
    commits.check_writable("create an index")
    column = _column(cols, name)
    if commits.dataset is None:
        raise ValueError("indexes are kept for ctables on disk (give a rootdir)")
    _index.check_create(column, kind)        # refused before the operation: nothing lost
    with commits.operation("create_index"):
        _index.create_index(column, kind)


def drop_index(cols, commits, name) -> None:
    """Remove the index of column ``name`` and commit.  The work of
    :meth:`bcolz_store.ctable.drop_index` over the table's parts."""
    commits.check_writable("drop an index")
    column = _column(cols, name)
    _index.check_drop(column)
    with commits.operation("drop_index"):
        _index.drop_index(column)


def index_kinds(cols) -> dict:
    """``{column name: index kind}`` of the indexed columns (see
    :attr:`bcolz_store.ctable.indexes`)."""
    kinds = {name: _index.index_kind(cols[name]) for name in cols.names}
    return {name: kind for name, kind in kinds.items() if kind is not None}


def query_indexes(cols):
    """``{column name: index}`` of the indexes a query may use now (those that
    describe their column's items exactly: see
    :func:`bcolz_store.carray_index.usable_index`), or None."""
    found = {name: _index.usable_index(cols[name]) for name in cols.names
             if _index.index_kind(cols[name]) is not None}
    return {name: index for name, index in found.items() if index is not None} or None
