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

This module holds the class, its creation and opening, and what concerns
the whole table (properties, flush, copy, purge); the ``cols`` accessor is in
:mod:`bcolz_store.columns`, the changes (``append``, ``addcol``...) in
:mod:`bcolz_store.ctable_edit`, reading and queries in
:mod:`bcolz_store.ctable_ops` (rows, ``where``..., pandas and HDF5).
"""

from __future__ import annotations

import contextlib
import os

import numpy as np

from . import attrs as _attrs
from . import handles as _handles
from .carray import carray
from .category_type import category_request
from .cparams import cparams as cparams_cls
from .columns import column_sources, cols
from .ctable_edit import CtableEdits
from .ctable_ops import CtableOps
from .errors import (BcolzStoreError, DatasetExistsError, DatasetNotFoundError, FormatError,
                     ReadOnlyError)
from .format.layout import ROOTDIRS_FILE as ROOTDIRS
from .options import OpenOptions
from .storage import locking as _locking
from .storage.dataset import DatasetOwner, DatasetStore
from .storage.urls import describe_rootdir, is_url, open_store
from .vlen_type import column_dtypes, field_dtype, vlen_request

__all__ = ["ROOTDIRS", "cols", "ctable"]


class _TableNotFoundError(DatasetNotFoundError, KeyError):
    """No ctable at a rootdir opened with mode 'r'.

    Compatibility: bcolz raised ``KeyError`` here; this is also a
    ``DatasetNotFoundError`` (a ``FileNotFoundError``).
    """

    __str__ = DatasetNotFoundError.__str__


class ctable(CtableEdits, CtableOps):
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
    dtype : numpy dtype, str, vlen or dict, optional
        The dtype of every new column, or a dict of column name -> dtype
        (columns it does not name keep their own); a :class:`~bcolz_store.vlen`
        (or ``'vlen-str'``/``'vlen-bytes'``) makes columns of items of any length.
    dflt, expectedlen, chunklen, safe : optional
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

    def __init__(self, columns=None, names=None, *, verify=False, allow_pickle=False, lock=False,
                 storage_options=None, consolidated=None, options=None, _dataset=None,
                 _lock=None, **kwargs):
        if options is None:
            options = OpenOptions(verify=verify, allow_pickle=allow_pickle, lock=lock,
                                  storage_options=storage_options, consolidated=consolidated)
        self._options = options
        storage_options, consolidated = options.storage_options, options.consolidated
        root_arg = kwargs.pop("rootdir", None)
        dataset = _dataset                       # a store view open() prepared
        rootdir = describe_rootdir(root_arg) if root_arg is not None else None
        auto_flush = kwargs.pop("auto_flush", True)
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
        if store is not None and store.readonly and exists and mode == "a" and columns is None:
            mode = kwargs["mode"] = "r"        # a pack: read-only, and says so
        if mode not in ("r", "w", "a"):
            raise ValueError(f"mode must be 'r', 'w' or 'a', not {mode!r}")
        if columns is not None and exists and mode != "w":
            raise ValueError(f"You cannot pass a `columns` param in '{mode}' mode: "
                             f"{rootdir} exists already (use mode 'w' to overwrite it)")
        if columns is not None and rootdir is not None and mode == "r":
            raise ValueError(f"{rootdir}: cannot create a ctable in mode 'r'")
        self.mode = mode
        verify, allow_pickle = options.verify, options.allow_pickle
        self._lock = _locking.acquire(store if store is not None else root_arg,
                                      _lock if _lock is not None else options.lock)
        # (the writer lock is taken before the committed state is loaded)
        self._store = dataset if dataset is not None else (
            DatasetStore(store, readonly=mode == "r", verify=verify, consolidated=consolidated,
                         locked=self._lock)
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
            self._open(just_loaded=dataset is not None)   # open() loaded the state
            new = False
        else:
            self._create_or_clean_up(columns, names, kwargs)
            new = True
        if self._cparams is None:
            self._cparams = (self.cols[self.names[0]].cparams if self.names and not new
                             else cparams_cls())
        if self._store is not None:
            # A failed write returns the table to its last committed state;
            # an append another writer's commit overtook is appended again.
            self._store.attach(DatasetOwner(reload=self._reload_committed,
                                            stage_pending=self._stage_pending,
                                            capture_appends=self._capture_appends,
                                            committed=self._note_committed))
            self._committed_len = self.len

    # ------------------------------------------------------------------ setup

    def _create_or_clean_up(self, columns, names, kwargs):
        """Create the table: on disk one commit, which also removes what was at
        the rootdir before (mode 'w'); on failure nothing new stays on disk."""
        rootdir = self.rootdir
        existed = self._root_state
        try:
            with self._batch():
                if self._store is not None and rootdir is not None:
                    self._store.note("create")
                self._create(columns, names, kwargs)
                self.attrs = _attrs.attrs(rootdir, self.mode, _new=True, _store=self._store)
                if rootdir is not None:
                    self.flush()
        except BaseException:
            if self._store is not None:
                self._store.discard()
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
        self.cols.read_meta_and_open(reuse=self.cols.as_dict())
        self.attrs.reload()
        self._check_lengths()

    def _note_committed(self):
        self._committed_len = self.len

    def _capture_appends(self):
        """The rows appended since the last commit, read now, as a function
        that appends them again (run once the newer committed state is
        loaded)."""
        start, stop = self._committed_len, self.len
        rows = {name: self.cols[name]._pending_rows(start) for name in self.names}

        def replay():
            for name, values in rows.items():
                col = self.cols[name]
                col._append_prepared(col._prepare_append(values))
        return replay

    def _check_lengths(self):
        lengths = {name: len(self.cols[name]) for name in self.names}
        if len(set(lengths.values())) > 1:
            raise FormatError(f"{self.rootdir}: columns have different lengths {lengths}")
        self._len = next(iter(lengths.values()), 0)
        self._committed_len = self._len

    def _open(self, just_loaded=False):
        """Load the committed state (``just_loaded``: ``open()`` has loaded it,
        read it as it is)."""
        root = self.rootdir
        if self._root_state != "folder":
            if self.mode == "r":
                raise _TableNotFoundError(
                    "Disk-based ctable opened with `r`ead mode yet "
                    f"`rootdir='{root}'` does not exist")
            raise DatasetNotFoundError(f"{root}: no ctable here (directory does not exist)")
        # One committed state, even while a writer commits: a writer too reads
        # again when a commit began meanwhile, rather than take the files of
        # two states for damage.
        self._store.read_consistently(self._load_columns, just_loaded)
        self._store.warn_if_unverifiable()

    def _load_columns(self):
        allow_pickle = self.cols.allow_pickle
        self.cols = cols(self.rootdir, self.mode, self._store)
        self.cols.allow_pickle = allow_pickle
        self.cols.read_meta_and_open()
        self.attrs = _attrs.attrs(self.rootdir, self.mode, _new=False, _store=self._store)
        self._check_lengths()

    def _create(self, columns, names, kwargs):
        sources, names = column_sources(columns, names)
        dtypes = column_dtypes(kwargs.get("dtype"), names)
        prepared = []
        for name, src in zip(names, sources):
            dtype = dtypes[name]
            special = dtype is not None and (vlen_request(None, dtype) is not None
                                             or category_request(None, dtype) is not None)
            if not isinstance(src, (carray, np.ndarray)) and not special:
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
                    store.recover()   # finish a commit left by a killed writer
                    store.remove_all()        # replaced in the creation's one commit
                else:
                    store.store.remove_root()  # a file, or a broken link: not a dataset
            store.makedirs()
        ckwargs = dict(kwargs)
        ckwargs["mode"] = "w" if self.rootdir is not None else ckwargs.get("mode", "w")
        for name, src in zip(names, prepared):
            ckwargs.pop("dtype", None)
            if dtypes[name] is not None:
                ckwargs["dtype"] = dtypes[name]
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
        """Structured dtype of one row; multidimensional columns keep their atom
        shape, columns of variable-length items are ``object`` fields."""
        fields = []
        for name in self.names:
            col = self.cols[name]
            fields.append((name, field_dtype(col)) if col.ndim == 1 else
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

    @property
    def dataset(self):
        """The :class:`~bcolz_store.storage.dataset.DatasetStore` a stored table
        (all its columns) reads and commits through; None in memory."""
        return self._store

    def _batch(self):
        """Group the changes of one table operation into one commit (on disk)."""
        if self._store is None or self.mode == "r":
            return contextlib.nullcontext()
        return self._store.batch()

    @contextlib.contextmanager
    def _writing(self, op=None):
        """One table operation (``op``: what it does, for the commit record):
        one commit, and on any failure the whole table returns to its last
        committed state (see
        :meth:`bcolz_store.storage.dataset.DatasetStore.operation`)."""
        if self._store is None or self.mode == "r":
            yield
            return
        with self._store.operation(op), self._store.batch():
            yield

    def _stage_pending(self):
        """Stage the appends no column has staged yet (see carray._stage_pending)."""
        for name in self.names:
            self.cols[name]._stage_pending()

    def _flush_columns(self):
        for name in self.names:
            self.cols[name].flush()

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
        if self._store.broken:    # a failed write: back to the committed state
            self._store.reload()
            return
        self.flush()
        self._root_state = self._store.store.root_state()   # (it may have been created here)
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
            self._store.forget_all()
            self._store.store.remove_root()

    def free_cachemem(self):
        """Drop the decompressed chunks cached by the columns."""
        for name in self.names:
            self.cols[name].free_cachemem()

    # ---------------------------------------------------------------- misc

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()

    def __reduce__(self):
        # Stored: its rootdir, reopened in mode 'r'; in memory: its columns.
        return _handles.reduce_ctable(self)

    def __dask_tokenize__(self):
        return _handles.dask_token(self)


def _same_root(a, b) -> bool:
    a, b = describe_rootdir(a), describe_rootdir(b)
    if is_url(a) or is_url(b):
        return a.rstrip("/") == b.rstrip("/")
    return os.path.abspath(a) == os.path.abspath(b)


def _reopen(rootdir, mode):               # pickles of earlier versions: a reader, never 'w'
    if mode not in ("r", "a"):
        raise FormatError(f"not a bcolz_store handle: mode {mode!r:.20} (a pickled ctable is "
                          f"reopened for reading)")
    return _handles.open_stored(ctable, rootdir, None, False, False, None)


def _rebuild(columns, names, cparams):
    return ctable(columns, names, cparams=cparams)


_handles.TABLE_CLASS[:] = [ctable]
