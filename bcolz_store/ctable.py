"""ctable: a compressed table stored column by column, one carray per column.

On disk: ``ROOT/__rootdirs__`` (``{"names": [...]}``, the column order),
``ROOT/__attrs__`` (the user attributes) and a carray rootdir per column,
``ROOT/<name>/`` (bcolz format v1.0, seeds/001 and FORMAT-NOTES.md).

The class is bcolz's API over explicit parts: its columns (``cols``, a
:class:`~bcolz_store.columns.cols`), its dataset (``dataset``, a
:class:`~bcolz_store.storage.dataset.DatasetStore`; None in memory), its open
options (an :class:`~bcolz_store.options.OpenOptions`), and the functions
that take them as arguments: opening and reading in
:mod:`bcolz_store.ctable_ops`, changes in :mod:`bcolz_store.ctable_edit`,
queries in :mod:`bcolz_store.ctable_query`, conversions in
:mod:`bcolz_store.interop`.
"""

from __future__ import annotations

import sys
from collections import namedtuple

import numpy as np

from . import attrs as _attrs
from . import ctable_edit as _edit
from . import ctable_ops as _ops
from . import ctable_query as _query
from . import handles as _handles
from .columns import cols, row_dtype
from .apidoc import documented
from .apidoc.ctable import CTABLE_DOCS
from .apidoc.ctable_interop import CTABLE_INTEROP_DOCS
from .apidoc.indexes import INDEX_DOCS
from .apidoc.ctable_query import QUERY_DOCS
from .cparams import cparams as cparams_cls
from .errors import FormatError
from .format.layout import ROOTDIRS_FILE as ROOTDIRS
from .interop import arrow_stream as _arrow
from .interop import fixed_width as _fixed_width, hdf5 as _hdf5, pandas as _pandas
from .interop.kerchunk import ctable_refs
from .options import OpenOptions
from .printing import format_ctable_repr, format_ctable_str
from .storage import locking as _locking
from .storage.dataset import DatasetOwner, DatasetStore
from .storage.urls import describe_rootdir

__all__ = ["ROOTDIRS", "cols", "ctable"]


@documented({**CTABLE_DOCS, **CTABLE_INTEROP_DOCS, **INDEX_DOCS, **QUERY_DOCS})
class ctable:
    # The reference docs (constructor and methods): bcolz_store/apidoc/ctable.py.

    _handle_kind = "ctable"        # what a rebuilt handle's class must say (handles.py)

    def __init__(self, columns=None, names=None, *, verify=False, allow_pickle=False, lock=False,
                 storage_options=None, consolidated=None, options=None, _dataset=None,
                 _lock=None, **kwargs):
        if options is None:
            options = OpenOptions(verify=verify, allow_pickle=allow_pickle, lock=lock,
                                  storage_options=storage_options, consolidated=consolidated)
        root_arg = kwargs.pop("rootdir", None)
        rootdir = describe_rootdir(root_arg) if root_arg is not None else None
        auto_flush = kwargs.pop("auto_flush", True)
        self._options = options
        self.rootdir = rootdir
        self.auto_flush = bool(auto_flush) if rootdir is not None else False
        self.mode = kwargs.get("mode")
        self._root_state = "missing"
        self._store = self._lock = self.stored_cparams = self.attrs = None
        self._len = self._committed_len = 0
        self.cols = cols(rootdir, self.mode, None, options)
        # (every attribute is set: from here on anything may fail)
        if "mode" in kwargs:
            _ops.check_mode(self.mode)
        store, self._root_state, self.mode = _ops.resolve(
            root_arg, rootdir, _dataset, columns, self.mode, options.storage_options)
        kwargs["mode"] = mode = self.mode   # (the lock is taken before the state is loaded)
        self._lock = _locking.acquire(store if store is not None else root_arg,
                                      _lock if _lock is not None else options.lock)
        self._store = _dataset if _dataset is not None else (
            DatasetStore(store, readonly=mode == "r", verify=options.verify,
                         consolidated=options.consolidated, locked=self._lock)
            if store is not None else None)
        self.cols = cols(rootdir, mode, self._store, options)
        if kwargs.get("cparams") is not None:
            self.stored_cparams = cparams_cls.from_any(kwargs["cparams"])
        if columns is None:
            self._open(just_loaded=_dataset is not None)   # open() loaded the state
        else:
            columns, names, kwargs, arrow = _arrow.table_source(columns, names, kwargs)
            self._len, self.attrs = _edit.create(self.cols, self._commits(), self.flush, columns,
                                                 names, kwargs, self._root_state, arrow)
        if self.stored_cparams is None:
            self.stored_cparams = (self.cols[self.names[0]].cparams if self.names and columns is None
                             else cparams_cls())
        if self._store is not None:
            # A failed write returns the table to its last committed state;
            # an append another writer's commit overtook is appended again.
            self._store.attach(DatasetOwner(reload=self._reload_committed,
                                            stage_pending=self._stage_pending,
                                            capture_appends=self._capture_appends,
                                            committed=self._note_committed))
            self._committed_len = self.len

    # ---------------------------------------------------- the parts, together

    def _commits(self):
        return _edit.Commits(self._store, self.mode, self.rootdir)

    def _then_flush(self):
        return self.flush if self.auto_flush else None

    def _open(self, just_loaded=False):
        _ops.check_found(self.rootdir, self.mode, self._root_state)
        # one committed state, even while a writer commits (read again if it began meanwhile)
        self._store.read_consistently(self._load_columns, just_loaded)
        self._store.warn_if_unverifiable()

    def _load_columns(self):
        self.cols = cols(self.rootdir, self.mode, self._store, self._options)
        self.cols.read_meta_and_open()
        self.attrs = _attrs.attrs(self.rootdir, self.mode, _new=False, _store=self._store)
        self._len = self._committed_len = self.cols.common_length()

    def _reload_committed(self):
        """Load the committed state into this table and its column objects, in place."""
        self.cols.read_meta_and_open(reuse=self.cols.as_dict())
        self.attrs.reload()
        self._len = self._committed_len = self.cols.common_length()

    def _note_committed(self):
        self._committed_len = self.len

    def _capture_appends(self):
        return _edit.capture_appends(self.cols, self._committed_len)

    def _stage_pending(self):
        _edit.stage_pending(self.cols)

    def _get_stats(self):
        nbytes, cbytes = self.nbytes, self.cbytes
        return nbytes, cbytes, (nbytes / float(cbytes) if cbytes else np.nan)

    # ------------------------------------------------------------- properties

    @property
    def len(self) -> int:
        """int: The number of rows."""
        return len(self.cols[self.cols.names[0]]) if self.cols.names else self._len

    @property
    def names(self) -> list:
        """list of str: The column names, in order (the list itself: do not modify it)."""
        return self.cols.names

    @property
    def dtype(self) -> np.dtype:
        """numpy.dtype: The structured dtype of a row (multidimensional columns keep
        their atom's shape; columns of variable-length items are object fields)."""
        return row_dtype(self.cols)

    @property
    def shape(self) -> tuple:
        """tuple: ``(len,)``."""
        return (self.len,)

    @property
    def ndim(self) -> int:
        """int: Always 1."""
        return 1

    @property
    def size(self) -> int:
        """int: The number of rows (as ``numpy.prod(shape)``)."""
        return self.len

    @property
    def nbytes(self) -> int:
        """int: The uncompressed size of all columns, in bytes."""
        return sum(self.cols[n].nbytes for n in self.names)

    @property
    def cbytes(self) -> int:
        """int: The compressed size of all columns, in bytes (leftovers count as
        full chunks)."""
        return sum(self.cols[n].cbytes for n in self.names)

    @property
    def cratio(self) -> float:
        """float: ``nbytes / cbytes`` (nan when there are no columns)."""
        cbytes = self.cbytes
        return self.nbytes / float(cbytes) if cbytes else float("nan")

    @property
    def cparams(self):
        """cparams: The compression parameters of new columns."""
        return self.stored_cparams

    @property
    def dataset(self):
        """DatasetStore or None: The dataset a stored table (all its columns)
        reads and commits through; None in memory."""
        return self._store

    def __len__(self):
        """int: The number of rows."""
        return self.len

    def __sizeof__(self):
        """int: The compressed size, in bytes."""
        return self.cbytes

    # ----------------------------------------------------------------- reading

    def __getitem__(self, key):
        return _ops.get_item(self.cols, self.len, sys._getframe(1), type(self), key,
                             self._query_indexes())

    def __iter__(self):
        """Iterate over the rows, as namedtuples (see :meth:`iter`)."""
        return self.iter(0, self.len, 1)

    def iter(self, start=0, stop=None, step=1, outcols=None, limit=None, skip=0,
             out_flavor=namedtuple):
        return _query.iter_rows(self.cols, self.len, start, stop, step, outcols, limit, skip,
                                out_flavor)

    def eval(self, expression, **kwargs):
        return _query.table_eval(self.cols, sys._getframe(1), expression,
                                 indexes=self._query_indexes(), **kwargs)

    def where(self, expression, outcols=None, limit=None, skip=0, out_flavor=namedtuple,
              user_dict=None, vm=None):
        return _query.where(self.cols, self.len, sys._getframe(1), expression, outcols, limit,
                            skip, out_flavor, user_dict, vm, self._query_indexes())

    def whereblocks(self, expression, blen=None, outcols=None, limit=None, skip=0,
                    user_dict=None, vm=None):
        return _query.whereblocks(self.cols, self.len, sys._getframe(1), expression, blen,
                                  outcols, limit, skip, user_dict, vm, self._query_indexes())

    def fetchwhere(self, expression, outcols=None, limit=None, skip=0, out_flavor=None,
                   user_dict=None, vm=None, **kwargs):
        return _query.fetchwhere(self.cols, self.len, sys._getframe(1), type(self), expression,
                                 outcols, limit, skip, out_flavor, user_dict, vm,
                                 self._query_indexes(), **kwargs)

    # ---------------------------------------------------------- query planning

    def explain(self, expression, user_dict=None, vm=None):
        return _query.explain(self.cols, self.len, sys._getframe(1), expression, user_dict, vm,
                              self._query_indexes())

    def _query_indexes(self):
        """The secondary indexes queries may use: ``{column name: index}``
        (:class:`bcolz_store.ctable_plan.ColumnIndex`), or None."""
        return _edit.query_indexes(self.cols)

    # ----------------------------------------------------------------- changes

    def append(self, cols):
        if _arrow.is_arrow_source(cols):        # a table of it, its columns by name
            cols = type(self)(cols)
        _edit.append(self.cols, self._commits(), self._then_flush(), cols)

    def trim(self, nitems):
        self._len = _edit.trim(self.cols, self._commits(), self.len, nitems)

    def resize(self, nitems):
        self._len = _edit.resize(self.cols, self._commits(), nitems)

    def addcol(self, newcol, name=None, pos=None, move=False, **kwargs):
        _edit.addcol(self.cols, self._commits(), self._then_flush(), self.len, self.cparams,
                     newcol, name, pos, move, **kwargs)

    def delcol(self, name=None, pos=None, keep=False):
        self._len = self.len
        _edit.delcol(self.cols, self._commits(), self._then_flush(), name, pos, keep)

    # ------------------------------------------------------------ indexes

    def create_index(self, col, kind="sorted"):
        _edit.create_index(self.cols, self._commits(), col, kind)

    def drop_index(self, col):
        _edit.drop_index(self.cols, self._commits(), col)

    @property
    def indexes(self) -> dict:
        return _edit.index_kinds(self.cols)

    def __setitem__(self, key, value):
        _edit.set_item(self.cols, self._commits(), self.len, sys._getframe(1), key, value)

    def flush(self):
        _edit.flush(self.cols, self._commits())

    def refresh(self):
        if self._store is None:
            return
        if self._store.broken:    # a failed write: back to the committed state
            self._store.reload()
            return
        self.flush()
        self._root_state = self._store.store.root_state()   # (it may have been created here)
        self._open()

    def close(self):
        try:
            self.flush()
        finally:
            _locking.release(self._lock)
            self._lock = None

    def purge(self):
        if self.rootdir:
            _edit.purge(self._commits())

    def free_cachemem(self):
        for name in self.names:
            self.cols[name].free_cachemem()

    def copy(self, **kwargs):
        return _ops.copy_table(self.cols, self.rootdir, type(self), **kwargs)

    # ----------------------------------------------------------------- interop

    @classmethod
    def fromdataframe(cls, df, **kwargs):
        return _pandas.fromdataframe(cls, df, **kwargs)

    def todataframe(self, columns=None, orient="columns", where=None, dtype_backend=None):
        rows = None if where is None else _query.matching_rows(
            self.cols, self.len, sys._getframe(1), where, self._query_indexes())
        return _pandas.todataframe(self, columns=columns, orient=orient, rows=rows,
                                   dtype_backend=dtype_backend)

    def tofixed(self, rootdir=None, mode="w", *, missing=None, **kwargs):
        return _fixed_width.tofixed(self, rootdir, mode, missing=missing, **kwargs)

    def to_dask(self, blen=None, columns=None, filters=None):
        from .interop.dask import ctable_to_dask
        select = None if filters is None else _query.table_filter(
            self, sys._getframe(1), filters, self._query_indexes())
        return ctable_to_dask(self, blen=blen, columns=columns, select=select)

    def to_kerchunk(self, url=None, *, inline_threshold=0, skip_unsupported=False):
        return ctable_refs(self, url, inline_threshold=inline_threshold,
                           skip_unsupported=skip_unsupported)

    @classmethod
    def fromhdf5(cls, filepath, nodepath="/ctable", **kwargs):
        return _hdf5.fromhdf5(cls, filepath, nodepath, **kwargs)

    def tohdf5(self, filepath, nodepath="/ctable", mode="w", cparams=None, cname=None):
        _hdf5.tohdf5(self, filepath, nodepath, mode=mode, cparams=cparams, cname=cname)

    # ------------------------------------------------------------------- misc

    def __str__(self):
        """str: The rows, abridged as numpy prints arrays."""
        return format_ctable_str(self)

    def __repr__(self):
        """str: The shape, dtype, sizes, cparams, rootdir and rows."""
        return format_ctable_repr(self)

    def __enter__(self):
        """ctable: This table (``with ctable(...) as t:`` closes it at the end)."""
        return self

    def __exit__(self, exc_type, exc, tb):
        """Close this table (:meth:`close`)."""
        self.close()

    def __reduce__(self):
        """A stored table pickles as its rootdir (reopened in mode 'r'), an
        in-memory one as its columns (see :mod:`bcolz_store.handles`)."""
        return _handles.reduce_ctable(self)

    __arrow_c_stream__, __arrow_c_schema__ = _arrow.table_stream, _arrow.table_schema

    def __dask_tokenize__(self):
        """tuple: What identifies this table's data in dask's names."""
        return _handles.dask_token(self)


def _reopen(rootdir, mode):               # pickles of earlier versions: a reader, never 'w'
    if mode not in ("r", "a"):
        raise FormatError(f"not a bcolz_store handle: mode {mode!r:.20} (a pickled ctable is "
                          f"reopened for reading)")
    return _handles.open_stored(ctable, rootdir, None, False, False, None)


def _rebuild(columns, names, cparams):
    return ctable(columns, names, cparams=cparams)


