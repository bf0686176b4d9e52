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
from .params import public_signature

__all__ = ["ROOTDIRS", "cols", "ctable"]


@public_signature
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
        Column names, any distinct str; default the fields of a structured
        array, else ``f0``, ``f1``...  A name that is not a plain
        identifier is stored in a made-up folder (docs/format.md, "Column
        names"), and an expression refers to its column through
        ``user_dict``.
    verify, allow_pickle, lock, storage_options, consolidated : optional
        The open options, keyword only (see :class:`~bcolz_store.options.OpenOptions`).
    options : OpenOptions, optional
        The open options as one value (the five keywords above are then not read).
    cparams : cparams or dict, optional
        Compression parameters of new columns (default ``defaults.cparams``).
    dtype : numpy dtype, str, vlen or dict, optional
        The dtype of every new column, or a dict of column name -> dtype
        (columns it does not name keep their own); a :class:`~bcolz_store.vlen`
        (or ``'vlen-str'``/``'vlen-bytes'``) makes columns of items of any length.
    dflt, expectedlen, chunklen, safe : optional
        Passed on to every new :class:`carray` column.
    rootdir : str, os.PathLike or Store, optional
        Where an on-disk table lives; None keeps it in memory.
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
        Neither ``columns`` nor ``rootdir``; a bad mode; ``columns`` with
        mode 'a' or 'r' on an existing rootdir; mode 'w' without ``columns``;
        bad names, unsupported column data, or columns of different lengths;
        ``lock`` in memory.
    TypeError
        Open options of the wrong types.
    DatasetNotFoundError
        Opening a rootdir that holds no ctable (with mode 'r' it is also a
        ``KeyError``, as in bcolz).
    FormatError
        A malformed ``__rootdirs__``, unsafe column folders, a column leading
        outside the rootdir, or columns of different lengths on disk.
    LockTimeoutError
        When ``lock`` waits past its timeout for another writer.

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
    >>> t.append((3, 4.5))
    >>> t['x > 2']['i'].tolist()
    [1, 2, 3]
    >>> [row.x for row in t.where('i >= 2', outcols='x')]
    [3.5, 4.5]
    >>> t.names
    ['i', 'x']
    """
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
        """t[key]: a column, rows, or the rows where an expression holds.

        Parameters
        ----------
        key : str, int, slice, list, tuple, ndarray or carray
            A column name gives the carray; a list of names a new in-memory
            ctable of those columns; another string is a boolean expression
            over the columns and the caller's variables.  An int gives one
            row; slices, integer lists/arrays and boolean arrays give rows; a
            tuple of one key is that key.

        Returns
        -------
        carray, ctable, numpy.void or numpy.ndarray
            Rows are of this table's ``dtype``.

        Raises
        ------
        KeyError
            When the table has no columns.
        ColumnNotFoundError
            A name (or a name in a list of names) that is neither a column nor
            a variable of the caller's; the message lists the columns.  It is a
            ``KeyError`` and, as bcolz raised, a ``NameError``.
        IndexError
            Out-of-range rows, a boolean array of the wrong length, a
            non-integer array, a non-boolean expression, a multidimensional key.
        NotImplementedError
            Other key types.
        DatasetChangedError
            In mode 'r', when a writer has replaced the files a read needs
            (``refresh()`` moves to the new state).
        """
        return _ops.get_item(self.cols, self.len, sys._getframe(1), type(self), key,
                             self._query_indexes())

    def __iter__(self):
        """Iterate over the rows, as namedtuples (see :meth:`iter`)."""
        return self.iter(0, self.len, 1)

    def iter(self, start=0, stop=None, step=1, outcols=None, limit=None, skip=0,
             out_flavor=namedtuple):
        """Iterate over the rows ``start:stop:step``.

        Parameters
        ----------
        start, stop, step : int
            As a slice; ``step`` must be positive.
        outcols : str or sequence of str, optional
            The columns to return (``'a, b'`` or ``['a', 'b']``); ``nrow__``
            is the row number.  Default all.
        limit : int, optional
            Return at most this many rows.
        skip : int, default 0
            Skip this many rows first.
        out_flavor : namedtuple, tuple or numpy.ndarray
            The rows as namedtuples, tuples or 1-row structured arrays.

        Returns
        -------
        iterator

        Raises
        ------
        NotImplementedError
            A step <= 0.
        ValueError
            Bad ``outcols`` or ``out_flavor``.
        """
        return _query.iter_rows(self.cols, self.len, start, stop, step, outcols, limit, skip,
                                out_flavor)

    def eval(self, expression, **kwargs):
        """Evaluate ``expression`` over the columns (and the caller's variables).

        Parameters
        ----------
        expression : str
            E.g. ``'2*a + b'``.
        **kwargs
            As :func:`bcolz_store.eval`: ``user_dict``, ``vm``,
            ``out_flavor``, ``blen`` and carray parameters.

        Returns
        -------
        carray, numpy.ndarray or scalar

        Raises
        ------
        NameError
            An unknown variable.
        QueryError, ValueError
            As :func:`bcolz_store.eval`.

        Notes
        -----
        A condition (comparisons, ``isin``, ``startswith``... joined by ``&``,
        ``|``, ``~``) given with no other argument than ``user_dict``, ``vm``
        and ``out_flavor`` is planned as :meth:`where` plans it: the rows of
        chunks the statistics decide are not read.  The result is the same.
        """
        return _query.table_eval(self.cols, sys._getframe(1), expression,
                                 indexes=self._query_indexes(), **kwargs)

    def where(self, expression, outcols=None, limit=None, skip=0, out_flavor=namedtuple,
              user_dict=None, vm=None):
        """Iterate over the rows where ``expression`` is true.

        Parameters
        ----------
        expression : str, carray or ndarray
            A boolean expression over the columns and the caller's variables
            (evaluated now), or a boolean array of the table's length.
        outcols, limit, skip, out_flavor
            As :meth:`iter`.
        user_dict : dict, optional
            More variables for the expression (they win over the columns).
        vm : {'numexpr', 'python', 'dask'}, optional
            The engine (default ``bcolz_store.defaults.vm``).

        Returns
        -------
        iterator

        Raises
        ------
        QueryError
            A non-boolean condition (a ValueError), or one of another length.
        ValueError
            Bad ``outcols`` or ``out_flavor``.
        NameError
            An unknown variable in the expression.

        Notes
        -----
        A condition string is planned first (see :meth:`explain` and
        ``bcolz_store.defaults.query_planning``): chunks whose statistics
        prove that no row matches are skipped, rows that all match are not
        tested, and the rest are evaluated as a scan evaluates them.  The rows,
        their order, ``skip`` and ``limit`` are those of a scan.  A null of a
        nullable column satisfies no comparison, nor its negation (docs/nulls.md);
        in the rows it is ``numpy.ma.masked`` (None in a column of objects:
        vlen, categorical, decimal, list, struct).
        """
        return _query.where(self.cols, self.len, sys._getframe(1), expression, outcols, limit,
                            skip, out_flavor, user_dict, vm, self._query_indexes())

    def whereblocks(self, expression, blen=None, outcols=None, limit=None, skip=0,
                    user_dict=None, vm=None):
        """Iterate over the rows where ``expression`` is true, in structured arrays.

        Parameters
        ----------
        expression, outcols, limit, skip, user_dict, vm
            As :meth:`where`.
        blen : int, optional
            Rows per array (the last may be shorter); default the smallest
            chunklen of the columns.

        Returns
        -------
        iterator of numpy.ndarray

        Raises
        ------
        QueryError, ValueError, NameError
            As :meth:`where`; ValueError also for a ``blen`` below 1.
        """
        return _query.whereblocks(self.cols, self.len, sys._getframe(1), expression, blen,
                                  outcols, limit, skip, user_dict, vm, self._query_indexes())

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
        **kwargs
            ctable constructor parameters of the new ctable.

        Returns
        -------
        ctable or numpy.ndarray

        Raises
        ------
        QueryError, ValueError, NameError
            As :meth:`where`; ValueError also for an unknown ``out_flavor``.
        """
        return _query.fetchwhere(self.cols, self.len, sys._getframe(1), type(self), expression,
                                 outcols, limit, skip, out_flavor, user_dict, vm,
                                 self._query_indexes(), **kwargs)

    # ---------------------------------------------------------- query planning

    def explain(self, expression, user_dict=None, vm=None):
        """How a condition would be evaluated: its query plan.

        Parameters
        ----------
        expression : str
            A condition over the columns and the caller's variables, as
            :meth:`where` takes it.
        user_dict : dict, optional
            More variables for the expression (they win over the columns).
        vm : {'numexpr', 'python', 'dask'}, optional
            The engine (default ``bcolz_store.defaults.vm``); conditions for
            'dask' are not planned.

        Returns
        -------
        QueryPlan
            A :class:`~bcolz_store.ctable_plan.QueryPlan`: its ``strategy``
            ('scan', 'statistics' or 'index') and ``reason``, the chunks and
            rows skipped (``chunks_skipped``, ``rows_skipped``), matching
            without a test (``chunks_all``, ``rows_all``) and to test
            (``chunks_to_test``, ``rows_to_test``), the ``index`` used and
            ``estimated_rows`` (at most that many rows match); ``str()`` shows
            them.

        Raises
        ------
        TypeError
            ``expression`` is not a string.

        Notes
        -----
        Only chunk statistics are read, no row.  A condition the planner
        cannot read, or that names an unknown variable, gives a 'scan' plan
        whose ``reason`` says why (the query itself then raises as always).
        A writer's unflushed rows and its last, partly filled chunk have no
        statistics: they are always tested.  The guide, with examples, is
        docs/query-planning.md.
        """
        return _query.explain(self.cols, self.len, sys._getframe(1), expression, user_dict, vm,
                              self._query_indexes())

    def _query_indexes(self):
        """The secondary indexes queries may use: ``{column name: index}``
        (:class:`bcolz_store.ctable_plan.ColumnIndex`), or None."""
        return _edit.query_indexes(self.cols)

    # ----------------------------------------------------------------- changes

    def append(self, cols):
        """Append rows; on disk one commit (with ``auto_flush``).

        Parameters
        ----------
        cols : tuple, list, structured array, ctable or DataFrame
            One row (a tuple of scalars); columns (a tuple or list of arrays,
            carrays or lists, one per column); rows (a list of tuples, or a
            structured array, matched by field name, else by position);
            another ctable or a pandas DataFrame (by column name).  bcolz read
            a list of tuples as columns.

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        ValueError
            Unsupported input, a wrong number of columns, values that do not
            convert, or columns of different lengths (nothing is appended).
        TypeError
            Items of a wrong type for a column of variable-length items.
        """
        if _arrow.is_arrow_source(cols):        # a table of it, its columns by name
            cols = type(self)(cols)
        _edit.append(self.cols, self._commits(), self._then_flush(), cols)

    def trim(self, nitems):
        """Remove the last ``nitems`` rows.

        Parameters
        ----------
        nitems : int

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        ValueError
            When ``nitems`` exceeds the length.
        """
        self._len = _edit.trim(self.cols, self._commits(), self.len, nitems)

    def resize(self, nitems):
        """Make the table ``nitems`` rows long; new rows hold each column's dflt.

        Parameters
        ----------
        nitems : int

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        """
        self._len = _edit.resize(self.cols, self._commits(), nitems)

    def addcol(self, newcol, name=None, pos=None, move=False, **kwargs):
        """Add a column.

        Parameters
        ----------
        newcol : carray, ndarray, list, tuple, Arrow or pandas column
            The values, one per row (as ``carray()`` reads them).  A carray gives
            its values and vlen or
            categorical type, not its dflt, chunklen or cparams (``kwargs``
            set those), as in bcolz; an on-disk carray moved or copied into
            an on-disk table keeps them.
        name : str, optional
            Default ``'f<pos>'``.
        pos : int, optional
            Its position among the columns (default last).
        move : bool, default False
            Move an on-disk carray's folder into an on-disk table (else copy).
        **kwargs
            carray parameters of the new column (default cparams: the table's).

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        ValueError
            A bad ``pos`` or ``name``, an existing name, a length other than
            the table's, or an unsupported type.
        """
        _edit.addcol(self.cols, self._commits(), self._then_flush(), self.len, self.cparams,
                     newcol, name, pos, move, **kwargs)

    def delcol(self, name=None, pos=None, keep=False):
        """Remove a column, by ``name`` or by ``pos`` (not both).

        Parameters
        ----------
        name : str, optional
        pos : int, optional
        keep : bool, default False
            Leave an on-disk column's folder on disk.

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        ValueError
            Neither or both of ``name`` and ``pos``, an unknown name, or a
            position out of range.
        """
        self._len = self.len
        _edit.delcol(self.cols, self._commits(), self._then_flush(), name, pos, keep)

    # ------------------------------------------------------------ indexes

    def create_index(self, col, kind="sorted"):
        """Build a secondary index over one column and commit it; queries (``where``,
        ``fetchwhere``, ``t[cond]``...) then find the rows of a point or range
        condition on that column without reading its chunks.  Every later write
        keeps the index current in the same commit (an append extends it).
        The files are ``COLUMN/index/meta`` and ``COLUMN/index/__N.idx``, which
        bcolz ignores (docs/queries.md).

        Parameters
        ----------
        col : str
            The column.
        kind : {'sorted', 'bitmap'}, default 'sorted'
            'sorted': values sorted in blocks with their row numbers, for point
            and range lookups over many distinct values; 'bitmap': each distinct
            value with its rows, for low-cardinality and categorical columns (up
            to 65,536 distinct values per segment of rows).

        Raises
        ------
        KeyError
            ``col`` is not a column.
        ValueError
            An unknown ``kind``, or a table in memory.
        TypeError
            A column of vlen items or objects (not indexable).
        ReadOnlyError
            In mode 'r'.
        """
        _edit.create_index(self.cols, self._commits(), col, kind)

    def drop_index(self, col):
        """Remove the index of a column and commit.

        Parameters
        ----------
        col : str
            The column.

        Raises
        ------
        KeyError
            ``col`` is not a column.
        IndexNotFoundError
            The column has no index (a ``KeyError``).
        ReadOnlyError
            In mode 'r'.
        """
        _edit.drop_index(self.cols, self._commits(), col)

    @property
    def indexes(self) -> dict:
        """``{column name: index kind}`` of the columns that have a secondary index
        (see :meth:`create_index`); empty for a table in memory.
        """
        return _edit.index_kinds(self.cols)

    def __setitem__(self, key, value):
        """t[key] = value: replace a column, or set rows.

        Parameters
        ----------
        key : str, int, slice, list, ndarray or carray
            A column name: that column's values are replaced (same length;
            its dtype, cparams and dflt are kept; a carray is taken as it
            is).  A boolean expression, int, slice, integer list/array or
            boolean array selects rows.
        value
            For rows: one row (a tuple) for every selected row, or as many
            rows as selected (a list of tuples or a structured array).

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        KeyError
            When the table has no columns.
        ValueError
            Values that do not convert or do not match the selection.
        """
        _edit.set_item(self.cols, self._commits(), self.len, sys._getframe(1), key, value)

    def flush(self):
        """Commit the buffered rows of every column as one commit (no-op in
        memory or mode 'r').

        Raises
        ------
        OSError
            When the medium refuses a write (the table returns to its last
            committed state).
        """
        _edit.flush(self.cols, self._commits())

    def refresh(self):
        """Re-read the committed state, to see other writers' commits (no-op
        in memory).  In modes 'a'/'w' pending rows are committed first; after
        a failed write the table returns to its last committed state.

        Raises
        ------
        FormatError, DatasetNotFoundError
            When the table on disk has become unreadable.
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
        """Flush (unless read-only) and release the writer lock, if held.

        Raises
        ------
        OSError
            As :meth:`flush` (the lock is released all the same).
        """
        try:
            self.flush()
        finally:
            _locking.release(self._lock)
            self._lock = None

    def purge(self):
        """Remove the whole on-disk table, as one commit (no-op in memory).

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        """
        if self.rootdir:
            _edit.purge(self._commits())

    def free_cachemem(self):
        """Drop the decompressed chunks the columns cache."""
        for name in self.names:
            self.cols[name].free_cachemem()

    def copy(self, **kwargs):
        """A copy of this table.

        Parameters
        ----------
        sortby : str, optional
            A column: the copy's rows are ordered by it (stably, missing items
            last), so that the chunk statistics of that column let queries skip
            chunks on data that arrived unordered.  Each column is read whole
            into memory in its turn.
        **kwargs
            ctable constructor parameters of the copy (``rootdir``, ``mode``,
            ``cparams``, ``names``, ``expectedlen``, ``chunklen``...).

        Returns
        -------
        ctable

        Raises
        ------
        DatasetExistsError
            When ``rootdir`` is this table's own (an OSError).
        KeyError
            ``sortby`` is not a column.
        TypeError
            ``sortby`` names a column of objects, complex or structured items.
        ValueError
            As the constructor.
        """
        return _ops.copy_table(self.cols, self.rootdir, type(self), **kwargs)

    # ----------------------------------------------------------------- interop

    @classmethod
    def fromdataframe(cls, df, **kwargs):
        """A ctable of the columns of a pandas DataFrame.

        Parameters
        ----------
        df : pandas.DataFrame
        **kwargs
            ``strings='vlen'`` (columns of str or bytes items of any length,
            which bcolz cannot read; default fixed-width 'U' or 'S'
            columns), and ctable constructor parameters.

        Returns
        -------
        ctable

        Raises
        ------
        ImportError
            When pandas is not installed.
        """
        return _pandas.fromdataframe(cls, df, **kwargs)

    def todataframe(self, columns=None, orient="columns", where=None, dtype_backend=None):
        """This table as a pandas DataFrame.

        Parameters
        ----------
        columns : sequence of str, optional
            The columns to take (default all).
        orient : str, default 'columns'
            As :func:`bcolz_store.interop.pandas.todataframe`.
        where : str, carray or ndarray, optional
            Only the rows where this condition holds (as :meth:`where` takes
            it, planned the same way); the DataFrame is then indexed by their
            row numbers.
        dtype_backend : {None, 'pyarrow'}, default None
            'pyarrow': every column an ``ArrowDtype`` column made from the
            columns' Arrow buffers (no Python object per item; needs pyarrow).

        Returns
        -------
        pandas.DataFrame

        Raises
        ------
        ImportError
            When pandas (or, for 'pyarrow', pyarrow) is not installed.
        ValueError
            ``where`` with ``orient='index'``; another ``dtype_backend``.
        QueryError, NameError
            As :meth:`where`, for ``where``.
        """
        rows = None if where is None else _query.matching_rows(
            self.cols, self.len, sys._getframe(1), where, self._query_indexes())
        return _pandas.todataframe(self, columns=columns, orient=orient, rows=rows,
                                   dtype_backend=dtype_backend)

    def tofixed(self, rootdir=None, mode="w", *, missing=None, **kwargs):
        """A copy bcolz reads: vlen columns become fixed-width ``U`` (str) or
        ``S`` (bytes), as wide as their longest item.

        Parameters
        ----------
        rootdir : str, optional
            Where to write the copy (default in memory).
        mode : {'w', 'a'}, default 'w'
        missing : str or bytes, optional
            Written for a missing item (default: missing items are refused).
        **kwargs
            Other ctable parameters (``cparams``, ``chunklen``...).

        Returns
        -------
        ctable

        Raises
        ------
        ValueError
            Missing items without ``missing``, or a str item ending in NUL.
        """
        return _fixed_width.tofixed(self, rootdir, mode, missing=missing, **kwargs)

    def to_dask(self, blen=None, columns=None, filters=None):
        """This table as a dask DataFrame, indexed by row number; each
        partition (whole chunks of rows) is read by its task.

        Parameters
        ----------
        blen : int, optional
            Rows per partition, a multiple of the largest chunklen (default
            about 64 MiB of rows).
        columns : sequence of str, optional
            The columns to take (default all).
        filters : str, optional
            A condition over the columns and the caller's scalars (as
            :meth:`where` takes it): each partition holds only its matching
            rows, and partitions the chunk statistics prove empty are left out
            of the graph.

        Returns
        -------
        dask.dataframe.DataFrame

        Raises
        ------
        ImportError
            When dask or pandas is not installed (extra ``bcolz_store[dask]``).
        KeyError
            An unknown column.
        ValueError
            A column of multidimensional items, a bad ``blen``, or ``filters``
            naming a variable that is neither a column nor a scalar.
        TypeError
            ``filters`` that is not a string.
        QueryError, NameError
            As :meth:`where`, for ``filters`` (checked on the first row).
        """
        from .interop.dask import ctable_to_dask
        select = None if filters is None else _query.table_filter(
            self, sys._getframe(1), filters, self._query_indexes())
        return ctable_to_dask(self, blen=blen, columns=columns, select=select)

    def to_kerchunk(self, url=None, *, inline_threshold=0, skip_unsupported=False):
        r"""kerchunk references (version 1) that open this stored ctable as a zarr
        v2 group, one array per column, and with xarray as a Dataset whose
        variables share the dimension ``row`` (docs/zarr.md).

        Each column is described as :meth:`carray.to_kerchunk` describes one;
        a column's atom dimensions are ``COLUMN_dim_1``...; the group's
        ``.zattrs`` are the table's attrs.  A column whose name zarr cannot
        open as an array name (empty, ``.``, ``..``, with ``/`` or ``\``,
        starting with ``.``) is named after its folder in the dataset
        (``__c<N>_<ascii>``), its ``.zattrs`` giving the column's name under
        ``bcolz_store_column``.  Only committed files are referenced.

        Parameters
        ----------
        url : str, optional
            The table's folder as readers will see it (chunk URLs
            ``url/COLUMN/data/__N.blp``); default as :meth:`carray.to_kerchunk`.
        inline_threshold : int, default 0
            Full chunks whose Blosc buffer is smaller are inlined too.
        skip_unsupported : bool, default False
            Leave out, with a ``UserWarning`` naming each, the columns zarr
            cannot read, instead of raising.

        Returns
        -------
        dict
            ``{"version": 1, "refs": {...}}``.

        Raises
        ------
        TypeError
            A kind zarr v2 has no dtype for: vlen, categorical, object,
            structured, or any kind of this library's own (its ``meta/storage``
            is not plain bcolz's); the message names the column and the reason.
            Also an ``inline_threshold`` that is not an int.
        ValueError
            In memory (no files); changes not yet flushed (call ``flush()``
            first); a committed change an interrupted writer left unapplied; a
            store whose files have no URL (a ``.zip`` pack, a ``MemoryStore``)
            without ``url``; a negative ``inline_threshold``.
        CodecError
            A chunk compressed with snappy, which numcodecs' Blosc lacks.
        FormatError
            A chunk file whose headers are invalid or announce another size.

        Examples
        --------
        >>> import bcolz_store as bcolz
        >>> t = bcolz.ctable([[1, 2, 3], [0.5, 1.5, 2.5]], names=["a", "b"], rootdir="t")
        >>> sorted(t.to_kerchunk()["refs"])
        ['.zattrs', '.zgroup', 'a/.zarray', 'a/.zattrs', 'a/0', 'b/.zarray', 'b/.zattrs', 'b/0']
        """
        return ctable_refs(self, url, inline_threshold=inline_threshold,
                           skip_unsupported=skip_unsupported)

    @classmethod
    def fromhdf5(cls, filepath, nodepath="/ctable", **kwargs):
        """A ctable of a PyTables Table node.

        Parameters
        ----------
        filepath : str
        nodepath : str, default '/ctable'
        **kwargs
            ``drop_attrs=True`` leaves out the node's attributes; ctable
            constructor parameters.

        Returns
        -------
        ctable

        Raises
        ------
        ImportError
            When PyTables is not installed (extra ``bcolz_store[hdf5]``).
        OSError
            A file that cannot be opened.
        NodeKindError
            A node that is not a Table (a TypeError); the message names it,
            the file's Tables, and how to read an array (as a carray).
        ValueError, FormatError
            An attribute JSON cannot hold (unless ``drop_attrs``), or a
            malformed one bcolz_store wrote.
        """
        return _hdf5.fromhdf5(cls, filepath, nodepath, **kwargs)

    def tohdf5(self, filepath, nodepath="/ctable", mode="w", cparams=None, cname=None):
        """Write this table as a PyTables Table node.

        Parameters
        ----------
        filepath : str
        nodepath : str, default '/ctable'
        mode : {'w', 'a'}, default 'w'
        cparams : cparams, optional
            Default this table's.
        cname : str, optional
            The HDF5 compressor (default from ``cparams``).

        Raises
        ------
        ImportError
            When PyTables is not installed (extra ``bcolz_store[hdf5]``).
        DatasetExistsError
            With mode 'w' when ``filepath`` exists.
        TypeError, ValueError
            datetime64, timedelta64 or object columns, unicode past U+10FFFF,
            or an attribute name bcolz_store uses itself (nothing is written).
        """
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


