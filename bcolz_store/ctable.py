"""ctable: a compressed table stored column by column, one carray per column.

An on-disk ctable is a directory::

    ROOT/__rootdirs__      {"names": ["a", "b", ...]}\\n      column order
    ROOT/__attrs__         {"key": value, ...}\\n              user attributes
    ROOT/a/                a carray rootdir (meta/, data/, __attrs__)
    ROOT/b/                ...

Both JSON files are ``json.dumps(obj, ensure_ascii=True)`` plus a newline,
written by :mod:`bcolz_store.format.meta` and :mod:`bcolz_store.attrs`; the
column bytes are the carrays'.  Source: bcolz format v1.0 (seeds/001) and
FORMAT-NOTES.md; checked by tests/test_ctable.py against what bcolz 1.13
writes and against the fixtures.

Row queries (``iter``, ``where``, ``whereblocks``, ``fetchwhere``) live in
:mod:`bcolz_store.query.tablequery`; pandas and HDF5 conversions in
:mod:`bcolz_store.interop`.
"""

from __future__ import annotations

import contextlib
import keyword
import os
import re
import shutil
import sys
from collections import namedtuple

import numpy as np

from . import attrs as _attrs
from .carray import carray
from .chunks.cparams import cparams as cparams_cls
from .errors import (BcolzStoreError, DatasetExistsError, DatasetNotFoundError, FormatError,
                     QueryError, ReadOnlyError)
from .format.layout import check_column_name
from .format.meta import dump_rootdirs, load_rootdirs
from .storage import locking as _locking
from .storage.journal import read_consistently
from .storage.dataset import DatasetStore
from .storage.urls import describe_rootdir, is_url, open_store

__all__ = ["ROOTDIRS", "cols", "ctable"]

ROOTDIRS = "__rootdirs__"

_IDENTIFIER = re.compile(r"^[^\d\W]\w*$", re.UNICODE)
_NAME_SPLIT = re.compile(r"^\s+|\s*,\s*|\s+$")


class _TableNotFoundError(DatasetNotFoundError, KeyError):
    """No ctable at a rootdir opened with mode 'r'.

    Compatibility: bcolz raised ``KeyError`` here; this is also a
    ``DatasetNotFoundError`` (a ``FileNotFoundError``).
    """

    __str__ = DatasetNotFoundError.__str__


def validate_names(names, keyword_name="names") -> list:
    """Check that every name is a Python identifier, not a keyword, and not a
    name the library uses itself (``__attrs__``, ``__rootdirs__``).

    Returns
    -------
    list of str

    Raises
    ------
    ValueError
        On a name that is not a string, not an identifier, a keyword, or reserved.
    """
    out = []
    for name in names:
        if not isinstance(name, str) or not _IDENTIFIER.match(name) or keyword.iskeyword(name):
            raise ValueError(f"column {keyword_name} must be valid Python identifiers that are "
                             f"not keywords; found {name!r}")
        if keyword_name == "names":
            check_column_name(name)
        out.append(str(name))
    return out


def split_names(text: str) -> list:
    """Split ``'a, b c'`` into ``['a', 'b', 'c']`` (namedtuple's rule)."""
    return [part for part in _NAME_SPLIT.split(str(text)) if part]


def _is_dataframe(obj) -> bool:
    return type(obj).__module__.startswith("pandas") and hasattr(obj, "columns")


class cols:
    """The columns of a ctable: ``t.cols['x']``, ``t.cols.x``, ``t.cols.names``.

    Iteration yields the names in column order.  Assigning ``t.cols[name] =
    data`` replaces a column (keeping its dtype and cparams) or adds one at
    the end; on disk ``__rootdirs__`` is rewritten after each change.

    Parameters
    ----------
    rootdir : str or None
    mode : {'r', 'w', 'a'}

    Notes
    -----
    Compatibility: bcolz's ``cols`` accessor; attribute access
    (``t.cols.x``) is an addition.
    """

    def __init__(self, rootdir, mode, store=None):
        self.rootdir = rootdir
        self.mode = mode
        self.names = []
        self._cols = {}
        self._store = store
        self.allow_pickle = False

    # -- on-disk metadata
    def read_meta_and_open(self, reuse=None):
        """Read ``__rootdirs__`` and open every column.

        Parameters
        ----------
        reuse : dict, optional
            Open carrays by name; a column still listed is reloaded in place
            (callers may hold it) instead of opened anew.

        Raises
        ------
        DatasetNotFoundError
            When ``__rootdirs__`` or a column directory is missing.
        FormatError
            When ``__rootdirs__`` is malformed, names an unsafe column, or a
            column leads outside the rootdir (symlink).
        """
        store = self._store
        if not store.exists(ROOTDIRS):
            raise DatasetNotFoundError(
                f"{store.path(ROOTDIRS)}: missing, {self.rootdir} is not a ctable")
        names = load_rootdirs(store.get(ROOTDIRS), store.path(ROOTDIRS))
        reuse = reuse or {}
        self._cols = {}
        for name in names:
            path = store.path(name)
            store.check_column(name)
            old = reuse.get(name)
            if isinstance(old, carray) and old._store is not None and \
                    old._store.journal is store.journal and old._store.prefix == name + "/":
                old._read_meta()
                self._cols[name] = old
            else:
                # mode 'w' empties a carray on open: the table is already made
                column = carray(rootdir=path, mode="a" if self.mode == "w" else self.mode,
                                _store=store.sub(name), allow_pickle=self.allow_pickle)
                column.mode = self.mode
                self._cols[name] = column
        self.names = list(names)

    def column_store(self, name):
        """The store of column ``name`` (None in memory): it shares the table's journal."""
        return self._store.sub(name) if self._store is not None else None

    def column_rootdir(self, name):
        """Where column ``name`` is stored (None in memory)."""
        return self._store.path(name) if self._store is not None else None

    def update_meta(self):
        """Stage ``__rootdirs__`` and commit (on-disk tables only)."""
        if self.rootdir:
            self._store.set(ROOTDIRS, dump_rootdirs(self.names))
            self._store.commit()

    # -- mapping interface
    def __getitem__(self, name):
        try:
            return self._cols[name]
        except KeyError:
            raise KeyError(f"no column named {name!r}; columns are {self.names}") from None

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self.__dict__["_cols"][name]
        except KeyError:
            raise AttributeError(f"no column named {name!r}") from None

    def __contains__(self, name):
        return name in self._cols

    def __setitem__(self, name, value):
        if self.mode == "r":
            raise ReadOnlyError(f"{self.rootdir}: cannot set column {name!r} in mode 'r'")
        if self.names and len(value) != len(self._cols[self.names[0]]):
            raise ValueError(f"new column {name!r} has length {len(value)}, the ctable "
                             f"has {len(self._cols[self.names[0]])} rows")
        rootdir = self.column_rootdir(check_column_name(name)) if self.rootdir else None
        old = self._cols.get(name)
        if isinstance(value, carray):
            if rootdir and value.rootdir != rootdir:
                with self._writing():
                    value = value.copy(rootdir=rootdir, mode="w", cparams=value.cparams,
                                       _store=self.column_store(name))
        else:
            dtype = None if old is None else np.dtype((old.dtype, old.shape[1:]))
            try:
                values = np.asarray(value, dtype=dtype)
            except (TypeError, ValueError) as err:
                raise ValueError(f"`{value!r}` cannot be converted into a column of "
                                 f"dtype {dtype}") from err
            if values.ndim == 0 or values.dtype.kind == "V" and values.dtype.names:
                raise ValueError(f"`{value!r}` cannot be converted into a carray column")
            cparams = old.cparams if old is not None else None
            with self._writing():
                value = carray(values, cparams=cparams, rootdir=rootdir, mode="w",
                               _store=self.column_store(name))
        with self._writing():
            if name not in self._cols:
                self.names.append(name)
            self._cols[name] = value
            self.update_meta()

    def _writing(self):
        if self._store is None:
            return contextlib.nullcontext()
        return self._store.journal.operation()

    def __iter__(self):
        return iter(list(self.names))

    def __len__(self):
        return len(self.names)

    def insert(self, name, pos, column):
        """Put ``column`` (a carray) at position ``pos`` under ``name``."""
        self.names.insert(pos, name)
        self._cols[name] = column
        self.update_meta()

    def pop(self, name):
        """Remove the column ``name`` and return it."""
        self.names.remove(name)
        column = self._cols.pop(name)
        self.update_meta()
        return column

    def __str__(self):
        return "".join(f"{name} : {self._cols[name]}" for name in self.names)

    def __repr__(self):
        return "".join(f"{name} : {self._cols[name]!r}\n" for name in self.names)


class ctable:
    """ctable(columns=None, names=None, **kwargs)

    A compressed table: one carray per column, in memory or on disk.

    Parameters
    ----------
    columns : sequence of column data, structured ndarray, or ctable, optional
        A list or tuple of carrays, ndarrays or sequences (all of one
        length), or a structured numpy array of one dimension.  Required
        unless opening an existing ``rootdir``.  Carrays are used as they are
        for in-memory tables and copied into the rootdir for on-disk ones.
    names : list or tuple of str, optional
        Column names (Python identifiers, not keywords); default the fields
        of a structured array, else ``f0``, ``f1``...
    cparams : cparams or dict, optional
        Compression parameters for new columns (default
        ``bcolz_store.defaults.cparams``).
    dtype, dflt, expectedlen, chunklen, safe : optional
        Passed on to every new :class:`carray` column.
    rootdir : str, optional
        Directory of an on-disk table; None keeps it in memory.
    mode : {'r', 'w', 'a'}, optional
        'r' opens read-only; 'a' opens for appending (the default when
        ``rootdir`` exists) or creates when it does not; 'w' creates anew,
        removing what is at ``rootdir`` (the default otherwise).
    auto_flush : bool, default True
        For on-disk tables: flush after creation, ``append``, ``addcol`` and
        ``delcol``.  Always False in memory.

    Raises
    ------
    ValueError
        Neither ``columns`` nor ``rootdir``; ``columns`` with mode 'a' or 'r'
        on an existing rootdir; mode 'w' without ``columns``; bad names,
        unsupported column data, or columns of different lengths.
    DatasetNotFoundError
        Opening a rootdir that holds no ctable (with mode 'r' it is also a
        ``KeyError``, as in bcolz).
    FormatError
        A malformed ``__rootdirs__``, unsafe column names, a column leading
        outside the rootdir, or columns of different lengths on disk.

    Notes
    -----
    Compatibility: bcolz 1.x's constructor, attributes and methods, writing
    the same files and bytes.  Differences on purpose: a structured array
    with ``names`` is taken by position; mode 'a' on a missing rootdir
    creates the table; in expressions, ``user_dict`` wins over columns and
    columns over the caller's variables (bcolz let the caller's variables
    shadow columns).

    Examples
    --------
    >>> import numpy as np
    >>> import bcolz_store as bcolz
    >>> t = bcolz.ctable([np.arange(3), np.array([1.5, 2.5, 3.5])], names=['i', 'x'])
    >>> t[1]
    np.void((1, 2.5), dtype=[('i', '<i8'), ('x', '<f8')])
    >>> t.names
    ['i', 'x']
    """

    def __init__(self, columns=None, names=None, **kwargs):
        root_arg = kwargs.pop("rootdir", None)
        dataset = kwargs.pop("_dataset", None)   # a store view open() prepared
        rootdir = describe_rootdir(root_arg) if root_arg is not None else None
        auto_flush = kwargs.pop("auto_flush", True)
        storage_options = kwargs.pop("storage_options", None)
        consolidated = kwargs.pop("consolidated", None)
        self.rootdir = rootdir
        self.auto_flush = bool(auto_flush) if rootdir is not None else False
        if rootdir is None and columns is None:
            raise ValueError("You should pass either a `columns` or a `rootdir` param"
                             " at very least")
        mode = kwargs.get("mode")
        if mode is not None and mode not in ("r", "w", "a"):
            raise ValueError(f"mode must be 'r', 'w' or 'a', not {mode!r}")
        store = None
        if dataset is not None:
            store = dataset.store
            self._root_state = "folder"
        elif root_arg is not None:
            store = open_store(root_arg, mode == "r", storage_options)
            self._root_state = store.root_state()
        else:
            self._root_state = "missing"
        exists = self._root_state != "missing"
        mode = kwargs.setdefault("mode", "a" if exists else "w")
        if mode not in ("r", "w", "a"):
            raise ValueError(f"mode must be 'r', 'w' or 'a', not {mode!r}")
        if columns is not None and exists and mode != "w":
            raise ValueError(f"You cannot pass a `columns` param in '{mode}' mode: "
                             f"{rootdir} exists already (use mode 'w' to overwrite it)")
        if columns is not None and rootdir is not None and mode == "r":
            raise ValueError(f"{rootdir}: cannot create a ctable in mode 'r'")
        self.mode = mode
        verify = kwargs.pop("verify", False)
        allow_pickle = kwargs.pop("allow_pickle", False)
        self._lock = _locking.acquire(root_arg, kwargs.pop("lock", False))
        self._store = dataset if dataset is not None else (
            DatasetStore(store, readonly=mode == "r", verify=verify, consolidated=consolidated)
            if store is not None else None)
        self.cols = cols(rootdir, mode, self._store)
        self.cols.allow_pickle = allow_pickle
        self._len = 0
        given = kwargs.get("cparams")
        self._cparams = cparams_cls.from_any(given) if given is not None else None
        if columns is None:
            if mode == "w":
                raise ValueError("You cannot open a ctable in 'w'rite mode"
                                 " without a `columns` param")
            self._open()
            new = False
        else:
            self._create_or_clean_up(columns, names, kwargs)
            new = True
        if self._cparams is None:
            self._cparams = (self.cols[self.names[0]].cparams if self.names and not new
                             else cparams_cls())
        if self._store is not None:
            # A failed write returns the table to its last committed state.
            self._store.journal.owner_reload = self._reload_committed
            self._store.journal.locked = self._lock is not None

    # ------------------------------------------------------------------ setup

    def _create_or_clean_up(self, columns, names, kwargs):
        """Create the table: on disk one commit, which also removes what was at
        the rootdir before (mode 'w'); on failure nothing new stays on disk."""
        rootdir = self.rootdir
        existed = self._root_state
        try:
            with self._batch():
                self._create(columns, names, kwargs)
                self.attrs = _attrs.attrs(rootdir, self.mode, _new=True, _store=self._store)
                if rootdir is not None:
                    self.flush()
        except BaseException:
            if self._store is not None:
                self._store.journal.discard()
                if existed == "missing":
                    with contextlib.suppress(OSError, BcolzStoreError):
                        self._store.store.remove_root()
            raise
        if self._store is not None and existed == "folder":
            keep = set()
            for name in self.names:
                keep.update((name, f"{name}/data", f"{name}/meta"))
            self._store.store.prune_empty_folders(keep)

    def _reload_committed(self):
        """Load the committed state into this table and its column objects, in place."""
        self.cols.read_meta_and_open(reuse=dict(self.cols._cols))
        self.attrs.reload()
        self._check_lengths()

    def _check_lengths(self):
        lengths = {name: len(self.cols[name]) for name in self.names}
        if len(set(lengths.values())) > 1:
            raise FormatError(f"{self.rootdir}: columns have different lengths {lengths}")
        self._len = next(iter(lengths.values()), 0)

    def _open(self):
        root = self.rootdir
        if self._root_state != "folder":
            if self.mode == "r":
                raise _TableNotFoundError(
                    "Disk-based ctable opened with `r`ead mode yet "
                    f"`rootdir='{root}'` does not exist")
            raise DatasetNotFoundError(f"{root}: no ctable here (directory does not exist)")
        journal = self._store.journal
        if self.mode == "r":  # one committed state, even while a writer commits
            read_consistently(journal, self._load_columns)
        else:
            if not journal.fresh:
                journal.recover()
            journal.fresh = False
            self._load_columns()
        self._store.warn_if_unverifiable()

    def _load_columns(self):
        allow_pickle = self.cols.allow_pickle
        self.cols = cols(self.rootdir, self.mode, self._store)
        self.cols.allow_pickle = allow_pickle
        self.cols.read_meta_and_open()
        self.attrs = _attrs.attrs(self.rootdir, self.mode, _new=False, _store=self._store)
        self._check_lengths()

    def _column_sources(self, columns, names):
        """Pair the input columns with validated names."""
        if isinstance(columns, ctable):
            sources = [columns.cols[n] for n in columns.names]
            default = columns.names
        elif isinstance(columns, np.ndarray):
            if columns.dtype.names is None:
                raise ValueError("a numpy array as `columns` must be a structured array")
            if columns.ndim != 1:
                raise ValueError("only unidimensional shapes supported")
            sources = [columns[field] for field in columns.dtype.names]
            default = list(columns.dtype.names)
        elif isinstance(columns, (list, tuple)):
            sources = list(columns)
            default = [f"f{i}" for i in range(len(sources))]
        else:
            raise ValueError(f"`columns` input is not supported: {type(columns).__name__}")
        if names is None:
            names = default
        else:
            if isinstance(names, tuple):
                names = list(names)
            if not isinstance(names, list):
                raise ValueError("`names` can only be a list or tuple")
            if len(names) != len(sources):
                raise ValueError(f"`columns` and `names` must have the same length "
                                 f"({len(sources)} columns, {len(names)} names)")
        names = validate_names(names)
        if len(set(names)) != len(names):
            raise ValueError(f"column names must be unique: {names}")
        return sources, names

    def _create(self, columns, names, kwargs):
        sources, names = self._column_sources(columns, names)
        dtype = kwargs.get("dtype")
        prepared = []
        for name, src in zip(names, sources):
            if not isinstance(src, (carray, np.ndarray)):
                try:
                    src = np.asarray(src, dtype=None if dtype is None else np.dtype(dtype).base)
                except (TypeError, ValueError) as err:
                    raise ValueError(f"column {name!r} cannot be converted into a carray: "
                                     f"{err}") from err
            if isinstance(src, np.ndarray):
                if src.ndim == 0:
                    raise ValueError(f"column {name!r} must have a length (got a scalar)")
                if src.dtype.kind == "V":
                    raise ValueError("`columns` elements cannot be of type void")
            prepared.append(src)
        lengths = {len(src) for src in prepared}
        if len(lengths) > 1:
            raise ValueError("all `columns` must have the same length")
        if self.rootdir is not None:
            store = self._store
            if self._root_state != "missing":
                if self.mode != "w":  # pragma: no cover - guarded in __init__
                    raise DatasetExistsError(f"specified rootdir path '{self.rootdir}' "
                                             f"already exists and creation mode is '{self.mode}'")
                if self._root_state == "folder":
                    store.journal.recover()   # finish a commit left by a killed writer
                    store.remove_all()        # replaced in the creation's one commit
                else:
                    store.store.remove_root()  # a file, or a broken link: not a dataset
            store.makedirs()
        ckwargs = dict(kwargs)
        ckwargs["mode"] = "w" if self.rootdir is not None else ckwargs.get("mode", "w")
        for name, src in zip(names, prepared):
            if self.rootdir is not None:
                ckwargs["rootdir"] = self.cols.column_rootdir(name)
                ckwargs["_store"] = self.cols.column_store(name)
            if isinstance(src, carray):
                column = src.copy(**ckwargs) if self.rootdir is not None else src
            else:
                column = carray(src, **ckwargs)
            self.cols.insert(name, len(self.cols), column)
        self._len = lengths.pop() if lengths else 0
        if self.rootdir is not None and not names:
            self.cols.update_meta()

    # ------------------------------------------------------------- properties

    @property
    def len(self) -> int:
        """Number of rows."""
        if self.cols.names:
            return len(self.cols[self.cols.names[0]])
        return self._len

    @property
    def names(self) -> list:
        """Column names, in order (the list itself: do not modify it)."""
        return self.cols.names

    @property
    def dtype(self) -> np.dtype:
        """Structured dtype of one row; multidimensional columns keep their atom shape."""
        fields = []
        for name in self.names:
            col = self.cols[name]
            fields.append((name, col.dtype) if col.ndim == 1 else
                          (name, (col.dtype, col.shape[1:])))
        return np.dtype(fields)

    @property
    def shape(self) -> tuple:
        """``(len,)``."""
        return (self.len,)

    @property
    def ndim(self) -> int:
        """Always 1."""
        return 1

    @property
    def size(self) -> int:
        """Number of rows (as ``numpy.prod(shape)``)."""
        return self.len

    @property
    def nbytes(self) -> int:
        """Uncompressed size of all columns, in bytes."""
        return sum(self.cols[n].nbytes for n in self.names)

    @property
    def cbytes(self) -> int:
        """Compressed size of all columns, in bytes (leftovers count as full chunks)."""
        return sum(self.cols[n].cbytes for n in self.names)

    @property
    def cratio(self) -> float:
        """``nbytes / cbytes`` (nan when there are no columns)."""
        cbytes = self.cbytes
        return self.nbytes / float(cbytes) if cbytes else float("nan")

    @property
    def cparams(self):
        """Compression parameters used for new columns (a :class:`cparams`)."""
        return self._cparams

    def _get_stats(self):
        nbytes, cbytes = self.nbytes, self.cbytes
        return nbytes, cbytes, (nbytes / float(cbytes) if cbytes else np.nan)

    def __len__(self):
        return self.len

    def __sizeof__(self):
        return self.cbytes

    # -------------------------------------------------------------- writing

    def _check_writable(self, what: str):
        if self.mode == "r":
            raise ReadOnlyError(f"{self.rootdir}: cannot {what} because mode is 'r'")

    def _batch(self):
        """Group the changes of one table operation into one commit (on disk)."""
        if self._store is None or self.mode == "r":
            return contextlib.nullcontext()
        return self._store.journal.batch()

    @contextlib.contextmanager
    def _writing(self):
        """One table operation: one commit, and on any failure the whole table
        returns to its last committed state (see
        :meth:`bcolz_store.storage.journal.Journal.operation`)."""
        if self._store is None or self.mode == "r":
            yield
            return
        journal = self._store.journal
        with journal.operation(), journal.batch():
            yield

    def _flush_columns(self):
        for name in self.names:
            self.cols[name].flush()

    def _columns_of(self, data) -> list:
        """One value per column, in column order, for ``append``."""
        names = self.names
        if isinstance(data, ctable):
            source = data.names if all(n in data.cols for n in names) else None
            if source is None and len(data.names) != len(names):
                raise ValueError(f"cannot append a ctable with columns {data.names} "
                                 f"to one with {names}")
            return [data.cols[n] for n in (names if source else data.names)]
        if _is_dataframe(data):
            from .interop.pandas import dataframe_columns
            return dataframe_columns(data, names)
        if isinstance(data, np.void) or (isinstance(data, np.ndarray) and data.dtype.names):
            arr = np.asarray(data).reshape(-1)
            fields = arr.dtype.names
            if not all(n in fields for n in names):
                if len(fields) != len(names):
                    raise ValueError(f"cannot append fields {list(fields)} to columns {names}")
                return [arr[f] for f in fields]
            return [arr[n] for n in names]
        if isinstance(data, list) and data and all(isinstance(r, (tuple, np.void)) for r in data):
            try:
                rows = np.array([tuple(r) for r in data], dtype=self.dtype)
            except (TypeError, ValueError) as err:
                raise ValueError(f"rows cannot be converted to {self.dtype}: {err}") from err
            return [rows[n] for n in names]
        if isinstance(data, (list, tuple)):
            if len(data) != len(names):
                raise ValueError(f"expected {len(names)} column values, got {len(data)}")
            out = []
            for name, value in zip(names, data):
                col = self.cols[name]
                if isinstance(value, carray):
                    out.append(value)
                    continue
                if isinstance(value, np.ndarray) and value.dtype.kind == "V" and \
                        value.dtype.names:
                    raise ValueError("`cols` elements cannot be of type void")
                atom = np.dtype((col.dtype, col.shape[1:]))
                try:
                    arr = np.asarray(value, dtype=atom.base) if col.dtype.kind != "O" else \
                        _object_array(value)
                except (TypeError, ValueError) as err:
                    raise ValueError(f"value for column {name!r} cannot be converted to "
                                     f"{atom}: {err}") from err
                if arr.shape == atom.shape:
                    arr = arr.reshape((1,) + atom.shape)
                out.append(arr)
            return out
        raise ValueError(f"`cols` input is not supported: {type(data).__name__}")

    def append(self, cols):
        """Append rows.

        Parameters
        ----------
        cols : tuple, list, numpy record/structured array, ctable or DataFrame
            One row as a tuple of scalars; columns as a tuple or list of
            arrays, carrays or lists (one per column, all of one length);
            rows as a list of tuples or a structured array (matched by field
            name, else by position); another ctable (by column name); or a
            pandas DataFrame (by column name).

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        ValueError
            Unsupported input, a wrong number of columns, values that do not
            convert, or columns of different lengths.  Nothing is appended
            then.

        Notes
        -----
        Compatibility: bcolz's inputs; a list of tuples, read here as rows,
        was read by bcolz as columns.
        """
        self._check_writable("append")
        values = self._columns_of(cols)
        lengths = {len(v) for v in values}
        if len(lengths) > 1:
            raise ValueError("all cols in `cols` must have the same length")
        prepared = [self.cols[name]._prepare_append(value)
                    for name, value in zip(self.names, values)]
        with self._writing():
            for name, value in zip(self.names, prepared):
                self.cols[name]._append_prepared(value)
            if self.auto_flush:
                self.flush()

    def trim(self, nitems):
        """Remove the last ``nitems`` rows.

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        ValueError
            If ``nitems`` exceeds the length.
        """
        self._check_writable("trim")
        if nitems > self.len:
            raise ValueError(f"cannot trim {nitems} rows from a ctable of {self.len}")
        with self._writing():
            for name in self.names:
                self.cols[name].trim(nitems)
        self._len -= nitems

    def resize(self, nitems):
        """Make the table ``nitems`` rows long, filling new rows with each column's dflt.

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        """
        self._check_writable("resize")
        with self._writing():
            for name in self.names:
                self.cols[name].resize(nitems)
        self._len = nitems

    def addcol(self, newcol, name=None, pos=None, move=False, **kwargs):
        """Add a column.

        Parameters
        ----------
        newcol : carray, ndarray, list or tuple
            The values, one per row.
        name : str, optional
            Default ``'f<pos>'``.
        pos : int, optional
            Position among the columns (default: last).
        move : bool, default False
            For an on-disk carray added to an on-disk table: move its
            directory into the table instead of copying it.
        kwargs
            carray constructor parameters for the new column (default
            cparams: the table's).

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        ValueError
            A bad ``pos`` or ``name``, an existing name, a length other than
            the table's, or an unsupported type.
        """
        self._check_writable("add a column")
        if pos is None:
            pos = len(self.names)
        elif not isinstance(pos, (int, np.integer)) or isinstance(pos, bool) \
                or not 0 <= pos <= len(self.names):
            raise ValueError(f"`pos` must be an int in 0..{len(self.names)}, not {pos!r}")
        pos = int(pos)
        name = f"f{pos}" if name is None else check_column_name(name)
        if name in self.names:
            raise ValueError(f"'{name}' column already exists")
        if not isinstance(newcol, (carray, np.ndarray, list, tuple)):
            raise ValueError(f"`newcol` type not supported: {type(newcol).__name__}")
        if len(newcol) != self.len:
            raise ValueError(f"`newcol` has length {len(newcol)}, the ctable {self.len}")
        col_rootdir = None
        if self.rootdir is not None:
            col_rootdir = self.cols.column_rootdir(name)
            kwargs.setdefault("rootdir", col_rootdir)
            kwargs.setdefault("mode", "w")
        kwargs.setdefault("cparams", self.cparams)
        store = self.cols.column_store(name)
        if store is not None and kwargs.get("rootdir") == col_rootdir:
            kwargs["_store"] = store
        with self._writing():
            if isinstance(newcol, carray) and col_rootdir and newcol.rootdir is not None:
                if move and newcol._store.local_root and self._store.local_root:
                    if newcol.mode != "r":
                        newcol.flush()
                    shutil.move(newcol.rootdir, col_rootdir)
                    self._store.journal.adopt(name + "/")
                    newcol = carray(rootdir=col_rootdir, mode="a", _store=store)
                else:
                    newcol = newcol.copy(rootdir=col_rootdir, mode="w", _store=store)
            else:
                newcol = carray(newcol, **kwargs)
            self.cols.insert(name, pos, newcol)
            if self.auto_flush:
                self.flush()

    def delcol(self, name=None, pos=None, keep=False):
        """Remove a column, by ``name`` or by ``pos`` (not both).

        Parameters
        ----------
        name : str, optional
        pos : int, optional
        keep : bool, default False
            For on-disk tables: leave the column's directory on disk.

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        ValueError
            Neither or both of ``name`` and ``pos``, an unknown name, or a
            position out of range.
        """
        self._check_writable("remove a column")
        if name is None and pos is None:
            raise ValueError("specify either a `name` or a `pos`")
        if name is not None and pos is not None:
            raise ValueError("you cannot specify both a `name` and a `pos`")
        if name is not None:
            if not isinstance(name, str):
                raise ValueError("`name` must be a string")
            if name not in self.names:
                raise ValueError(f"`name` {name!r} not found in columns {self.names}")
        else:
            if not isinstance(pos, (int, np.integer)) or isinstance(pos, bool) \
                    or not 0 <= pos < len(self.names):
                raise ValueError(f"`pos` must be an int in 0..{len(self.names) - 1}, "
                                 f"not {pos!r}")
            name = self.names[int(pos)]
        self._len = self.len
        with self._writing():  # the column's files and __rootdirs__: one commit
            col = self.cols.pop(name)
            if self._store is None:
                pass
            elif keep:
                self._store.journal.forget(name + "/")
            else:
                col.purge()
            if self.auto_flush:
                self.flush()
        if self._store is not None and not keep:
            self._store.store.delete_prefix(name + "/")

    def copy(self, **kwargs):
        """Return a copy, with other constructor parameters if given.

        Parameters
        ----------
        kwargs
            Any ctable constructor parameter (``rootdir``, ``mode``,
            ``cparams``, ``names``, ``expectedlen``, ``chunklen``...).

        Returns
        -------
        ctable

        Raises
        ------
        DatasetExistsError
            When ``rootdir`` is this table's own rootdir (an OSError).
        """
        rootdir = kwargs.get("rootdir")
        if rootdir and self.rootdir and _same_root(rootdir, self.rootdir):
            raise DatasetExistsError(f"rootdir cannot be the same during copies: {rootdir}")
        names = kwargs.pop("names", self.names)
        if rootdir:
            columns = [self.cols[n] for n in self.names]
        else:
            ckwargs = {k: v for k, v in kwargs.items() if k not in ("rootdir", "mode")}
            columns = [self.cols[n].copy(**ckwargs) for n in self.names]
        return ctable(columns, names, **kwargs)

    def flush(self):
        """Commit buffered rows of every column, as one commit (no-op in memory or mode 'r')."""
        if self.mode == "r":
            return
        with self._writing():
            self._flush_columns()

    def refresh(self):
        """Re-read the committed state from disk, to see other writers' commits.

        In modes 'a'/'w' pending rows are committed first (``flush``).

        Raises
        ------
        FormatError, DatasetNotFoundError
            If the table on disk has become unreadable.
        """
        if self._store is None:
            return
        journal = self._store.journal
        if journal.broken is not None:    # a failed write: back to the committed state
            journal.reload_committed()
            return
        self.flush()
        self._open()

    def close(self):
        """Flush (unless read-only) and release the writer lock, if held."""
        try:
            self.flush()
        finally:
            _locking.release(self._lock)
            self._lock = None

    def purge(self):
        """Remove the whole on-disk table (no-op in memory).

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        """
        if self.rootdir:
            self._check_writable("purge")
            with self._writing():
                self._store.remove_all()
                self._store.commit()
            self._store.journal.reset()
            self._store.store.remove_root()

    def free_cachemem(self):
        """Drop the decompressed chunks cached by the columns."""
        for name in self.names:
            self.cols[name].free_cachemem()

    # -------------------------------------------------------------- reading

    def _empty_check(self, what):
        if not self.names:
            raise KeyError(f"cannot {what} a ctable with no columns")

    def _rows(self, columns, n) -> np.ndarray:
        """A structured array of this table's dtype from per-column arrays."""
        out = np.empty(n, dtype=self.dtype)
        for name, values in zip(self.names, columns):
            out[name] = values
        return out

    def __getitem__(self, key):
        """t[key]: a column, rows, or rows where an expression holds.

        Parameters
        ----------
        key : str, int, slice, list, ndarray or carray
            A column name gives the carray; a list of names a new in-memory
            ctable of those columns; another string is a boolean expression
            over the columns.  An int gives one row (a ``numpy.void``);
            slices, integer lists/arrays and boolean arrays give a structured
            ndarray of this table's dtype.

        Raises
        ------
        KeyError
            When the table has no columns.
        IndexError
            Out-of-range rows, a boolean array of the wrong length, a
            non-integer array, an expression that is not boolean, or a
            multidimensional key.
        NotImplementedError
            Other key types.

        Notes
        -----
        Opened in mode 'r', a table serves reads from the committed state it
        opened (or last refreshed to); when a writer has since replaced files a
        read needs, the read raises ``DatasetChangedError`` rather than mix two
        states, and ``refresh()`` moves to the new state.
        """
        if isinstance(key, str) and key in self.cols:
            return self.cols[key]
        if isinstance(key, str):
            key = self._eval_where(key, {}, None, sys._getframe(1), error=IndexError)
        return self._getitem(key)

    def _getitem(self, key):
        self._empty_check("retrieve data from")
        if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)):
            row = np.empty(1, dtype=self.dtype)
            row[0] = tuple(self.cols[name][key] for name in self.names)
            return row[0]
        if isinstance(key, slice):
            start, stop, step = key.indices(self.len)
            n = len(range(start, stop, step))
            return self._rows([self.cols[name][key] for name in self.names], n)
        if isinstance(key, tuple):
            if len(key) != 1:
                raise IndexError("multidimensional keys are not supported")
            return self[key[0]]
        if isinstance(key, list):
            if not key:
                return np.empty(0, dtype=self.dtype)
            if all(isinstance(k, str) for k in key):
                return ctable([self.cols[name] for name in key], list(key))
            try:
                key = np.array(key, dtype=np.int64)
            except (TypeError, ValueError) as err:
                raise IndexError("key cannot be converted to an array of indices") from err
        if hasattr(key, "dtype"):
            if key.dtype.type == np.bool_:
                return self._take_mask(key)
            if key.dtype.kind in "iu":
                idx = np.asarray(key[:] if isinstance(key, carray) else key)
                return self._rows([self.cols[name][idx] for name in self.names], idx.shape)
            raise IndexError("arrays used as indices must be integer (or boolean)")
        raise NotImplementedError(f"key not supported: {key!r}")

    def _take_mask(self, mask) -> np.ndarray:
        if len(mask) != self.len:
            raise IndexError(f"boolean array has length {len(mask)}, the ctable {self.len}")
        if isinstance(mask, carray):
            mask = mask[:]
        mask = np.asarray(mask)
        columns = [self.cols[name][mask] for name in self.names]
        return self._rows(columns, int(np.count_nonzero(mask)))

    def _as_rows(self, value) -> np.ndarray:
        """``value`` as a structured array (or 0-d record) of this table's dtype."""
        dtype = self.dtype
        if isinstance(value, (np.ndarray, np.void)) and value.dtype.names:
            value = np.asarray(value)
            out = np.empty(value.shape, dtype=dtype)
            out[...] = value
            return out
        try:
            if isinstance(value, list):
                value = [tuple(v) if isinstance(v, (list, np.void)) else v for v in value]
            return np.array(value, dtype=dtype)
        except (TypeError, ValueError) as err:
            raise ValueError(f"cannot convert {value!r} to rows of {dtype}: {err}") from err

    def __setitem__(self, key, value):
        """t[key] = value: replace a column, or set rows.

        Parameters
        ----------
        key : str, int, slice, list, ndarray or carray
            A column name replaces that column (same length required).  A
            boolean expression string, int, slice, integer list/array or
            boolean array selects rows.
        value
            For rows: one row (tuple) broadcast to all selected rows, or as
            many rows as selected (list of tuples or structured array).

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        KeyError
            When the table has no columns.
        ValueError
            Values that do not convert or do not match the selection.
        """
        self._check_writable("modify data")
        if isinstance(key, str) and key in self.cols:
            with self._writing():
                self.cols[key] = value
            return
        self._empty_check("assign to")
        rows = self._as_rows(value)
        if isinstance(key, str):
            mask = self._eval_where(key, {}, None, sys._getframe(1))
            key = np.flatnonzero(mask[:] if isinstance(mask, carray) else mask)
        elif isinstance(key, list):
            key = np.asarray(key)
        with self._writing():
            for name in self.names:
                self.cols[name][key] = rows[name]

    def __iter__(self):
        return self.iter(0, self.len, 1)

    # -------------------------------------------------------------- queries

    def _eval_where(self, expression, user_dict, vm, frame, error=QueryError):
        from .query.tablequery import condition
        return condition(self, expression, user_dict, vm, frame, error)

    def eval(self, expression, **kwargs):
        """Evaluate ``expression`` over the columns; return its result.

        Parameters
        ----------
        expression : str
            E.g. ``'2*a + b'``: column names, the caller's variables (scalars,
            ndarrays, carrays) and the functions of the chosen engine.
        kwargs
            As the top-level :func:`bcolz_store.eval`: ``user_dict``, ``vm``,
            ``out_flavor``, ``blen`` and carray parameters.

        Returns
        -------
        carray, ndarray or scalar

        Raises
        ------
        NameError
            An unknown variable.
        QueryError, ValueError
            As :func:`bcolz_store.eval`.
        """
        from .query.tablequery import evaluate
        user_dict = kwargs.pop("user_dict", None)
        return evaluate(self, expression, user_dict, sys._getframe(1), **kwargs)

    def iter(self, start=0, stop=None, step=1, outcols=None, limit=None, skip=0,
             out_flavor=namedtuple):
        """Iterate over rows ``start:stop:step``.

        Parameters
        ----------
        start, stop, step : int
            As a slice; ``step`` must be positive.
        outcols : str or sequence of str, optional
            Columns to return (``'a, b'`` or ``['a', 'b']``); the name
            ``nrow__`` adds the row number.  Default all.
        limit : int, optional
            Return at most this many rows.
        skip : int, default 0
            Skip this many rows first.
        out_flavor : namedtuple, tuple or numpy.ndarray
            Row type: namedtuples (default), tuples, or length-1 structured
            arrays.

        Returns
        -------
        iterator

        Raises
        ------
        NotImplementedError
            A step <= 0.
        ValueError
            Unknown or invalid ``outcols``.
        """
        from .query.tablequery import iter_rows
        return iter_rows(self, start, stop, step, outcols, limit, skip, out_flavor)

    def where(self, expression, outcols=None, limit=None, skip=0, out_flavor=namedtuple,
              user_dict=None, vm=None):
        """Iterate over the rows where ``expression`` is true.

        Parameters
        ----------
        expression : str, carray or ndarray
            A boolean expression over the columns (evaluated now, with the
            caller's variables) or a boolean array of the table's length.
        outcols, limit, skip, out_flavor
            As :meth:`iter`.
        user_dict : dict, optional
            Extra variables for the expression.
        vm : {'numexpr', 'python', 'dask'}, optional
            The engine (default ``bcolz_store.defaults.vm``).

        Returns
        -------
        iterator

        Raises
        ------
        ValueError
            A non-boolean condition, or bad ``outcols``.
        NameError
            An unknown variable in the expression.
        """
        from .query.tablequery import where_rows
        mask = self._eval_where(expression, user_dict, vm, sys._getframe(1))
        return where_rows(self, mask, outcols, limit, skip, out_flavor)

    def whereblocks(self, expression, blen=None, outcols=None, limit=None, skip=0,
                    user_dict=None, vm=None):
        """Iterate over the rows where ``expression`` is true, in structured arrays.

        Parameters
        ----------
        expression, outcols, limit, skip, user_dict, vm
            As :meth:`where`.
        blen : int, optional
            Rows per block (the last one may be shorter); default the
            smallest chunklen of the columns.

        Returns
        -------
        iterator of numpy.ndarray
            Structured arrays with the ``outcols`` fields.

        Raises
        ------
        As :meth:`where`.
        """
        from .query.tablequery import where_blocks
        mask = self._eval_where(expression, user_dict, vm, sys._getframe(1))
        return where_blocks(self, mask, blen, outcols, limit, skip)

    def fetchwhere(self, expression, outcols=None, limit=None, skip=0, out_flavor=None,
                   user_dict=None, vm=None, **kwargs):
        """Return the rows where ``expression`` is true, all at once.

        Parameters
        ----------
        expression, outcols, limit, skip, user_dict, vm
            As :meth:`where`.
        out_flavor : {'bcolz', 'carray', 'numpy'}, optional
            A new ctable ('bcolz'/'carray') or a structured ndarray
            ('numpy'); default ``bcolz_store.defaults.out_flavor``.
        kwargs
            ctable constructor parameters for the result.

        Returns
        -------
        ctable or numpy.ndarray

        Raises
        ------
        ValueError
            An unknown ``out_flavor``, and as :meth:`where`.
        """
        from .query.tablequery import fetch_where
        mask = self._eval_where(expression, user_dict, vm, sys._getframe(1))
        return fetch_where(self, mask, outcols, limit, skip, out_flavor, kwargs)

    # --------------------------------------------------------------- interop

    @staticmethod
    def fromdataframe(df, **kwargs):
        """A ctable from a pandas DataFrame, column by column.

        Object columns of strings become fixed-width unicode ('U') columns,
        of bytes fixed-width 'S' columns.  See
        :func:`bcolz_store.interop.pandas.fromdataframe`.

        Raises
        ------
        ImportError
            When pandas is not installed.
        """
        from .interop.pandas import fromdataframe
        return fromdataframe(df, **kwargs)

    def todataframe(self, columns=None, orient="columns"):
        """This table as a pandas DataFrame.

        See :func:`bcolz_store.interop.pandas.todataframe`.

        Raises
        ------
        ImportError
            When pandas is not installed.
        """
        from .interop.pandas import todataframe
        return todataframe(self, columns=columns, orient=orient)

    @staticmethod
    def fromhdf5(filepath, nodepath="/ctable", **kwargs):
        """A ctable from a PyTables Table node.

        See :func:`bcolz_store.interop.hdf5.fromhdf5`.

        Raises
        ------
        ImportError
            When PyTables is not installed (extra ``bcolz_store[hdf5]``).
        """
        from .interop.hdf5 import fromhdf5
        return fromhdf5(filepath, nodepath, **kwargs)

    def tohdf5(self, filepath, nodepath="/ctable", mode="w", cparams=None, cname=None):
        """Write this table as a PyTables Table node.

        See :func:`bcolz_store.interop.hdf5.tohdf5`.

        Raises
        ------
        ImportError
            When PyTables is not installed (extra ``bcolz_store[hdf5]``).
        """
        from .interop.hdf5 import tohdf5
        return tohdf5(self, filepath, nodepath, mode=mode, cparams=cparams, cname=cname)

    # ---------------------------------------------------------------- misc

    def __str__(self):
        from .printing import format_ctable_str
        return format_ctable_str(self)

    def __repr__(self):
        from .printing import format_ctable_repr
        return format_ctable_repr(self)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()

    def __reduce__(self):
        if self.rootdir:
            return (_reopen, (self.rootdir, "r" if self.mode == "r" else "a"))
        return (_rebuild, ([self.cols[n] for n in self.names], list(self.names),
                           self._cparams.to_dict()))


def _object_array(value) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value.astype(object)
    if isinstance(value, (list, tuple)):
        out = np.empty(len(value), dtype=object)
        out[:] = list(value)
        return out
    out = np.empty(1, dtype=object)
    out[0] = value
    return out


def _same_root(a, b) -> bool:
    a, b = describe_rootdir(a), describe_rootdir(b)
    if is_url(a) or is_url(b):
        return a.rstrip("/") == b.rstrip("/")
    return os.path.abspath(a) == os.path.abspath(b)


def _reopen(rootdir, mode):
    return ctable(rootdir=rootdir, mode=mode)


def _rebuild(columns, names, cparams):
    return ctable(columns, names, cparams=cparams)
