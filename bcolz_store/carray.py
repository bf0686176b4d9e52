"""carray: a compressed, chunked, enlargeable array in memory or in a store.

Data is split in chunks of ``chunklen`` atoms, each compressed with Blosc.  The
trailing partial chunk (the *leftover*) stays uncompressed in memory until
``flush()``, when it is written as the next numbered chunk file holding only the
leftover atoms, and ``meta/sizes`` is rewritten.

The class is bcolz's API over four parts: the metadata (``CarrayMeta``), the chunk
engine (:mod:`bcolz_store.chunks`), the dataset (:class:`~bcolz_store.carray_dataset.
CarrayDataset`: store, lock, attrs, commits) and the options (``OpenOptions``).  What
reads, writes and iteration compute is in ``carray_read``, ``carray_edit``, ``carray_ops``.

Source: bcolz format v1.0 (seeds/001) and FORMAT-NOTES.md.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import sys

import numpy as np

from . import carray_edit as _edit
from . import carray_ops as _ops
from . import carray_read as _read, handles as _handles, threads
from .carray_dataset import CarrayDataset
from .carray_meta import new_meta
from .chunks.chunk import chunk
from .kinds import ArrowBuffers, kind_of
from .kinds.buffers import whole_chunks
from .kinds.base import ColumnKind, column_kind
from .interop.arrow_columns import as_kind_buffers
from .datasets.carray_files import new_engine, stage_sizes, stage_stats, stage_storage
from .defaults import check_cache_budget, defaults
from .errors import ReadOnlyError, UnsafeDataError
from .indexing import as_nitems, calc_chunklen, matching_positions, within_rows
from .interop import arrow_stream as _arrow, fixed_width as _fixed_width, kerchunk as _kerchunk
from .options import OpenOptions
from .storage.dataset import DatasetOwner
from .params import public_signature

__all__ = ["calc_chunklen", "carray", "chunk", "matching_positions"]

_MODES = ("r", "w", "a")


@public_signature
class carray:

    """carray(array=None, cparams=None, dtype=None, dflt=None, expectedlen=None, chunklen=None, rootdir=None, safe=True, mode='a', *, nullable=None)

    A compressed, enlargeable array, in memory or on disk.

    Parameters
    ----------
    array : array_like or carray, optional
        Initial data; its first dimension is the length, the others form the
        atom.  Required unless opening an existing ``rootdir``.
    cparams : cparams or dict, optional
        Compression parameters (default: ``bcolz_store.defaults.cparams``).
    dtype : numpy dtype, str, vlen or category, optional
        Force this dtype.  ``'vlen-str'``, ``'vlen-bytes'``, a ``StringDType``
        or a :class:`~bcolz_store.vlen` make items of any length (which bcolz
        cannot read, docs/strings.md); ``'category'`` or a
        :class:`~bcolz_store.category` codes plus categories.
    dflt : scalar, optional
        Fill value for growing (``resize``); default zero (vlen: an empty
        item; categorical: a missing item).
    expectedlen : int, optional
        Expected final length; decides ``chunklen`` (default ``len(array)``).
    chunklen : int, optional
        Atoms per chunk; overrides ``expectedlen``'s choice.
    rootdir : str, os.PathLike or Store, optional
        A folder, a URL (``s3://bucket/x.bcolz``, any fsspec URL), a ``.zip``
        pack (read-only) or a :class:`~bcolz_store.storage.base.Store`; None
        keeps the carray in memory.
    safe : bool, default True
        Convert and check appended data.
    mode : {'a', 'r', 'w'}, default 'a'
        'r' read-only, 'a' read and append, 'w' create anew (replacing what is
        at ``rootdir`` in the creation's one commit).
    nullable : bool, optional
        Keyword only: items may be null (default: masked or None data; docs/nulls.md).
    verify, allow_pickle, lock, storage_options, consolidated
        Keyword only: how a stored carray is opened
        (:class:`~bcolz_store.options.OpenOptions`); or ``options=``.

    Raises
    ------
    ValueError
        Invalid mode or parameters, or neither ``array`` nor ``rootdir``.
    DatasetExistsError
        Creating at an existing ``rootdir`` with mode other than 'w'.
    DatasetNotFoundError
        Opening a ``rootdir`` that holds no carray.
    FormatError
        Opening a rootdir whose metadata or chunk files are corrupt.
    TypeError
        dtypes bcolz cannot store either (nested objects, typesize > 255).
    LockTimeoutError
        ``lock`` asked for, and another writer keeps it past the timeout.

    Notes
    -----
    Compatibility: bcolz 1.x's constructor, properties and methods, with the
    same chunklen choice and the same bytes on disk.  Better than bcolz:
    negative slice steps, integer index arrays of any integer dtype, every
    dtype persists (complex, timedelta64, datetime64 in any unit, structured).

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> c = bcolz.carray([1, 2, 3], chunklen=2)
    >>> c.append([4, 5]); (len(c), c.nchunks, c.nleftover)
    (5, 2, 1)
    >>> c[1:4]
    array([2, 3, 4])
    """
    _handle_kind = "carray"        # what a rebuilt handle's class must say (handles.py)
    _kinds = (None, ColumnKind, None)  # (meta, its column_kind, its kind_of): _kinds_of

    def __init__(self, array=None, cparams=None, dtype=None, dflt=None, expectedlen=None,
                 chunklen=None, rootdir=None, safe=True, mode="a", *, nullable=None,
                 verify=False, allow_pickle=False, lock=False, storage_options=None,
                 consolidated=None, options=None, _store=None, _dataset=None, _lock=None):
        if mode not in _MODES:
            raise ValueError("mode should be 'r', 'w' or 'a'")
        if options is None:
            options = OpenOptions(verify=verify, allow_pickle=allow_pickle, lock=lock,
                                  storage_options=storage_options, consolidated=consolidated)
        self._options = options
        self._mode = mode
        self._safe = safe
        # pickles are read with the user's allow_pickle, or when this process made them
        self._allow_pickle = options.allow_pickle or array is not None
        self._meta = None
        self._engine = None
        self._unstaged = False       # appended items not yet staged (see _stage_pending)
        self._committed_len = 0
        self._iterator = None
        self._is_iter_view = False
        if array is None and rootdir is None:
            raise ValueError("You need at least to pass an array or/and a rootdir")
        self._files = CarrayDataset(rootdir, options, given=_store, prepared=_dataset, lock=_lock)
        if array is not None:
            try:
                self._create(array, cparams, dtype, dflt, expectedlen, chunklen, nullable)
            except BaseException:
                self._files.abandon_creation()
                raise
            if self._files.store is not None:
                # one commit: meta, chunks, attrs and the removal of what was at
                # the rootdir; it writes even in mode 'r', as bcolz does
                self._files.commit_creation(self._mode)
        else:
            self._mode = self._files.open(mode)
            self._files.load(self._read_meta, just_loaded=_dataset is not None)
        self._files.attach(self._owner())
        self._committed_len = self.len
        if array is None and mode == "w":
            self.resize(0)

    def _create(self, array, cparams, dtype, dflt, expectedlen, chunklen, nullable):
        array, dtype, rest, arrow_attrs = _arrow.carray_source(array, dtype)  # (Arrow's blocks)
        self._meta, data = new_meta(array, cparams, dtype, dflt, expectedlen, chunklen,
                                    self._to_ndarray, nullable)
        store = None
        if self._files.rootdir is not None:
            store = self._files.begin_creation(self._mode)
            stage_storage(store, self._meta)
        self._engine = new_engine(self._meta, store, defaults.cache_budget, new=True)
        if isinstance(data, ArrowBuffers):         # (items made Arrow rows: the kind's)
            self._append_block(data)
        elif not isinstance(array, (carray, ArrowBuffers)):
            self._engine.append(data)
        for block in array._blocks() if isinstance(array, carray) else whole_chunks(
                itertools.chain([array] if isinstance(array, ArrowBuffers) else [], rest),
                self._meta.chunklen, self.len):
            self._append_block(block)
        if store is not None:
            self._flush(commit=False)
        self._files.load_attrs(self._mode, new=True)
        if arrow_attrs:             # (an Arrow source's; none in mode 'r')
            self.attrs.update(arrow_attrs)

    def _read_meta(self):
        """Load the committed state (metadata, attrs and chunks) from the store."""
        self._meta, self._engine = self._files.read_state(self._mode, self._engine)
        self._unstaged = False
        self._committed_len = self.len

    def _owner(self) -> DatasetOwner:
        """What the dataset's commits call on (see :class:`DatasetOwner`)."""
        return DatasetOwner(reload=self._read_meta, stage_pending=self._stage_pending,
                            capture_appends=self._capture_appends, committed=self._note_committed)

    def _to_ndarray(self, value, dtype, arrlen=None):
        column = self._column
        return _edit.to_ndarray(value, dtype, self._meta, column.coded_items, arrlen,
                                self._files.rootdir or "carray", column)

    def _guard(self):
        if not self._allow_pickle:
            raise UnsafeDataError(
                f"{self._files.rootdir}: object arrays are stored as pickles, and unpickling "
                f"can run code; open with allow_pickle=True if you trust this dataset")

    def _check_writable(self):
        if self._mode == "r":
            raise ReadOnlyError(f"{self._files.rootdir or 'in-memory carray'}: cannot modify "
                                f"data because mode is 'r'")

    def _blocks(self):
        """Blocks of as many chunks as the thread pool decodes at once."""
        return self._iterblocks(self._meta.chunklen * threads.chunks_per_block())

    # ------------------------------------------------------------ properties

    attrs = property(lambda self: self._files.attrs, doc="The user attributes (``attrs``).")
    category = property(lambda self: self._column.category(self._meta, self._engine),
                        doc="The :class:`~bcolz_store.category` of a categorical carray, or None.")
    column_type = property(lambda self: self._column.column_type(self._meta, self._engine),
                           doc="The decimal or struct type of such a carray, else None.")
    field = _ops.field_carray
    cbytes = property(lambda self: self._engine.cbytes, doc="int: compressed bytes.")
    chunklen = property(lambda self: self._meta.chunklen, doc="int: atoms per chunk.")
    chunks = property(lambda self: self._engine.chunks, doc="The full chunks (``chunk``).")
    cparams = property(lambda self: self._meta.cparams, doc="The compression parameters.")
    dataset = property(lambda self: self._files.store,
                       doc="The :class:`~bcolz_store.storage.dataset.DatasetStore` a stored "
                           "carray reads and commits through (a column's is its table's); "
                           "None in memory.")
    dtype = property(lambda self: self._meta.atom.base, doc="numpy.dtype of the elements.")
    leftover = property(lambda self: self._engine.nleft * self._meta.atom.itemsize,
                        doc="int: bytes held in the uncompressed leftover buffer.")
    leftover_bytes = leftover
    leftover_array = property(lambda self: self._engine.leftover, doc="The leftover buffer.")
    leftover_ptr = property(lambda self: self._engine.leftover.ctypes.data, doc="int: address.")
    len = property(lambda self: self._engine.length, doc="int: number of atoms (rows).")
    nchunks = property(lambda self: self._engine.nchunks, doc="int: number of full chunks.")
    ndim = property(lambda self: len(self.shape), doc="int: number of dimensions.")
    nullable = property(lambda self: self._column.may_hold_nulls(self._meta),
                        doc="bool: whether items may be null (reads give masked arrays).")
    nleftover = property(lambda self: self._engine.nleft, doc="int: atoms in the leftover.")
    leftover_elements = nleftover
    partitions = property(lambda self: [(i * self.chunklen, (i + 1) * self.chunklen)
                                        for i in range(self.nchunks)],
                          doc="list of (start, stop): the rows of every full chunk.")
    safe = property(lambda self: self._safe, doc="bool: whether appends are checked.")
    shape = property(lambda self: (int(self.len),) + self._meta.atom.shape, doc="(len, *atom).")
    shards = property(lambda self: (self._meta.chunklen,) + self._meta.atom.shape,
                      doc="tuple (chunklen, *atom shape): the rows compressed as one "
                          "chunk (dask's ``from_array`` takes its blocks from it).")
    size = property(lambda self: int(np.prod(self.shape)), doc="int: number of elements.")
    listtype = property(lambda self: self._column.list_type(self._meta), doc="The list or map type of a "
                        "list carray (:func:`~bcolz_store.list_`), else None.")
    vlen = property(lambda self: self._column.vlen_type(self._meta),
                    doc="The :class:`~bcolz_store.vlen` type of a carray of variable-length "
                        "items (or of a categorical carray's items), else None.")
    _cache = property(lambda self: self._engine.cache)
    _cache_nbytes = property(lambda self: self._engine.cache_nbytes)

    cache_budget = property(
        lambda self: self._engine.cache_budget,
        lambda self, value: self._engine.set_cache_budget(check_cache_budget(value)),
        doc="""int: bytes of decompressed chunks kept for re-reads (default
        ``bcolz_store.defaults.cache_budget``, 8 MiB; 0: no cache; whole-chunk
        reads bypass it; see also ``defaults.block_cache_budget``).  Setting:
        TypeError for a non-integer, ValueError if negative.""")

    codes = property(lambda self: self._column.codes_view(self._meta, self._engine, self.len),
                     doc="The codes of a categorical carray, read by ``codes[key]`` (-1: "
                         "missing); TypeError for other carrays.")

    cratio = property(lambda self: self.nbytes / float(self.cbytes) if self.cbytes
                      else float("nan"), doc="float: ``nbytes / cbytes`` (nan when empty).")

    dflt = property(lambda self: self._column.dflt(self._meta, self._engine),
                    doc="0-d array of ``dtype``: the fill value for growing.")

    expectedlen = property(lambda self: self._meta.expectedlen,
                           lambda self, value: setattr(self._meta, "expectedlen", int(value)),
                           doc="int: the expected length that decided ``chunklen``.")

    @property
    def mode(self) -> str:
        """str: 'r', 'w' or 'a'; ValueError when set to anything else."""
        return self._mode

    @mode.setter
    def mode(self, value):
        if value not in _MODES:
            raise ValueError("mode should be 'r', 'w' or 'a'")
        self._mode = value
        self._files.set_mode(value)

    nbytes = property(lambda self: self._engine.nbytes if self._meta.atom.kind == "O" or
                      self._column.vlen_items else self.len * self._meta.atom.itemsize,
                      doc="int: uncompressed bytes.")

    @property
    def rootdir(self):
        """str: where a stored carray lives (None in memory).  Setting it sends
        later writes elsewhere, moving no file (as bcolz); ValueError in memory."""
        return self._files.rootdir

    @rootdir.setter
    def rootdir(self, value):
        if not self._files.rootdir:
            raise ValueError("cannot modify the rootdir value of an in-memory carray")
        store = self._files.relocate(value, self._mode)
        self._files.attach(self._owner())
        self._engine.store = store
        self._engine.chunks.store = store

    # ------------------------------------------------------------ reading

    def __getitem__(self, key):
        """Read ``x[key]``.

        In mode 'r' reads come from the committed state the carray opened (or
        last refreshed to).

        Parameters
        ----------
        key : int, slice, tuple, array_like, carray or str
            An int; a slice of any step (negative steps too, which bcolz
            refused); a tuple (its first item selects rows, the rest index
            within them); an integer array of positions (any integer dtype,
            negative counted from the end); a boolean array or boolean carray of
            ``len(x)``; or an expression string over the caller's variables
            that evaluates to a boolean array.

        Returns
        -------
        scalar or numpy.ndarray
            An int gives one element (a Python int/bool for integer and
            boolean dtypes, as bcolz; an ndarray for a multidimensional atom),
            anything else a new ndarray of ``dtype``.

        Raises
        ------
        IndexError
            Out-of-range ints, a mask of the wrong length, non-integer arrays,
            unsupported keys, an expression that is not boolean.
        ValueError
            An empty tuple, or a zero slice step.
        DatasetChangedError
            A writer replaced files the read needs (call ``refresh()``).
        UnsafeDataError
            An object carray from a store without ``allow_pickle``.
        QueryError
            An expression string that cannot be evaluated.

        Examples
        --------
        >>> import numpy as np, bcolz_store as bcolz
        >>> c = bcolz.carray(np.arange(10))
        >>> c[3], c[8:2:-2], c[[1, -1]]
        (3, array([8, 6, 4]), array([1, 9]))
        >>> c["c > 6"]
        array([7, 8, 9])
        """
        if isinstance(key, str):
            if self._column.has_fields:     # a struct carray's field
                return self.field(key)
            key = _read.eval_key(key, sys._getframe(1), type(self), self.len)
        return _read.read_key(self._engine, self._meta, self._guard, key, self.len,
                              self.__getitem__, self._column)

    def __iter__(self):
        return self if self._iterator is not None else self.iter()

    def __next__(self):
        """The next element of an iteration (``next(c)``; bcolz's ``c.next()``).

        A carray iterates from its start; a view made by :meth:`iter`,
        :meth:`where` or :meth:`wheretrue` from where it stands.

        Returns
        -------
        scalar or numpy.ndarray

        Raises
        ------
        StopIteration
            At the end (an iterator view stays exhausted, as in bcolz).
        """
        if self._iterator is None:
            self._iterator = self._items(0, self.len, 1, None, 0)
        try:
            return next(self._iterator)
        except StopIteration:   # an iterator view stays exhausted; a carray restarts
            self._iterator = iter(()) if self._is_iter_view else None
            raise

    next = __next__

    def _items(self, start, stop, step, limit, skip):
        return _ops.iter_items(self.__getitem__, self._meta.atom, self._meta.chunklen,
                               start, stop, step, limit, skip)

    def _iterating(self, generator):
        # bcolz's iterators are carray views that also work with next()
        view = self.view()
        view._iterator, view._is_iter_view = generator, True
        return view

    def iter(self, start=0, stop=None, step=1, limit=None, skip=0):
        """Iterate over the elements ``start:stop:step``.

        Parameters
        ----------
        start, stop : int, optional
            The range, as a slice takes it (default: all).
        step : int, default 1
            Positive.
        limit : int, optional
            Yield at most this many elements (None: all).
        skip : int, default 0
            Skip this many first.

        Returns
        -------
        carray
            A view that is also an iterator (as bcolz's).

        Raises
        ------
        NotImplementedError
            For a step <= 0 (as bcolz).

        Examples
        --------
        >>> import bcolz_store as bcolz
        >>> list(bcolz.arange(10).iter(1, 9, 3, skip=1))
        [4, 7]
        """
        step = 1 if step is None else step
        if step <= 0:
            raise NotImplementedError("step param can only be positive")
        start, stop, step = slice(start, stop, step).indices(self.len)
        return self._iterating(self._items(start, stop, step, limit, skip))

    def _iterblocks(self, blen=None, start=0, stop=None):
        """The rows ``start:stop`` in blocks of ``blen`` (default ``chunklen``)."""
        stop = self.len if stop is None else min(stop, self.len)
        blen = blen or self._meta.chunklen
        for pos in range(start, stop, blen):
            yield self[pos:min(pos + blen, stop)]

    def wheretrue(self, limit=None, skip=0):
        """Iterate over the positions where this boolean carray is true.

        Parameters
        ----------
        limit : int, optional
            Yield at most this many positions (None: all).
        skip : int, default 0
            Skip this many first.

        Returns
        -------
        carray
            A view that is also an iterator of ints.

        Raises
        ------
        ValueError
            If the carray is not boolean.
        NotImplementedError
            If it is multidimensional.

        Examples
        --------
        >>> import bcolz_store as bcolz
        >>> list(bcolz.carray([True, False, True]).wheretrue())
        [0, 2]
        """
        if self._meta.atom.base.type != np.bool_:
            raise ValueError("`self` is not an array of booleans")
        if self.ndim > 1:
            raise NotImplementedError("`self` is not unidimensional")
        return self._iterating(_ops.true_positions(self, limit, skip, self._meta.chunklen))

    def where(self, boolarr, limit=None, skip=0):
        """Iterate over the values where ``boolarr`` is true.

        Parameters
        ----------
        boolarr : numpy.ndarray or carray of bool
            As long as this carray.
        limit : int, optional
            Yield at most this many values (None: all).
        skip : int, default 0
            Skip this many first.

        Returns
        -------
        carray
            A view that is also an iterator.

        Raises
        ------
        NotImplementedError
            If this carray is multidimensional.
        ValueError
            ``boolarr`` not a boolean array of the same length.

        Examples
        --------
        >>> import bcolz_store as bcolz
        >>> c = bcolz.arange(5)
        >>> [int(v) for v in c.where(c[:] % 2 == 0)]
        [0, 2, 4]
        """
        _ops.check_where(boolarr, self.len, self.ndim)
        blen = boolarr.chunklen if isinstance(boolarr, carray) else self._meta.chunklen
        gather = functools.partial(_read.gather, self._engine, self._meta, self._guard,
                                   column=self._column)
        return self._iterating(_ops.values_where(gather, boolarr, limit, skip, blen))

    isnull, notnull = _ops.isnull, _ops.notnull

    def sum(self, dtype=None):
        """Sum all elements (a nullable carray's nulls are skipped).

        Parameters
        ----------
        dtype : numpy dtype, optional
            The accumulator's dtype (default numpy's rule: at least the platform
            integer for integers and booleans).

        Returns
        -------
        numpy scalar
            The same for every number of threads (partial sums of chunks are
            added in chunk order).

        Raises
        ------
        TypeError
            For string dtypes and vlen carrays.
        UnsafeDataError
            An object carray from a store without ``allow_pickle``.

        Examples
        --------
        >>> import bcolz_store as bcolz
        >>> int(bcolz.arange(101).sum())
        5050
        """
        dtype = _ops.sum_dtype(self._meta.atom.base, dtype, self._column.vlen_items)
        if self._pickled():
            self._guard()
        return _ops.engine_sum(self._engine, dtype)

    # ------------------------------------------------------------ writing

    def _writing(self, op=None):
        """One write (``op`` names it in the commit record): on any failure
        the carray, and a column's whole table, returns to its last commit."""
        return self._files.writing(op)

    def append(self, array):
        """Append data at the end.

        On disk the rows are staged and committed at the next ``flush()`` (or
        write, or ``close()``); rows that fit in the leftover only go there.

        Parameters
        ----------
        array : array_like, scalar or carray
            Atoms, one atom, a scalar, or another carray (copied block by block;
            into a vlen or categorical carray, checked whole before anything is
            written, a categorical carray's codes translated into this one's
            categories).

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        ValueError
            Data that cannot be converted, or whose trailing dimensions differ
            from the atom's; for a categorical carray, an item that is not one of
            its categories.
        KindMismatchError
            str items (an array, a list, a carray) appended to a vlen or
            categorical carray of bytes, or bytes to one of str; a ``TypeError``.

        Examples
        --------
        >>> import bcolz_store as bcolz
        >>> c = bcolz.carray([1, 2])
        >>> c.append(3); c.append([4, 5])
        >>> c[:]
        array([1, 2, 3, 4, 5])
        """
        engine, meta = self._engine, self._meta
        if (type(array) is np.ndarray and array.dtype is meta.atom and array.ndim == 1
                and self._mode != "r" and array.dtype.kind != "O" and self._column.direct_appends):
            end = engine.nleft + array.shape[0]     # the common case: into the leftover
            if end < meta.chunklen:
                engine.leftover[engine.nleft:end] = array
                engine.nleft = end
                self._unstaged = True
                return
        self._check_writable()
        # (Arrow rows of a column kind: its buffers; other Arrow rows: as a carray reads them)
        if _arrow.is_arrow_source(array := as_kind_buffers(array, self.kind)):
            array = type(self)(array)[:]
        prepared = self._prepare_append(array)
        with self._writing("append"):
            self._append_prepared(prepared)

    def _append_block(self, block):
        if not isinstance(block, ArrowBuffers):
            block = self._to_ndarray(block, self._meta.atom.base)
        _edit.append_block(self.kind, self._engine, block, self._files.rootdir)

    def to_buffers(self, start=0, stop=None):
        """Rows ``[start, stop)`` of a carray of a column kind (vlen, categorical,
        nullable, decimal, list, map, struct, fixed-size binary) in Arrow's
        columnar layout, as numpy arrays (no pyarrow needed).

        Parameters
        ----------
        start, stop : int, optional
            As a slice's (default: every row).

        Returns
        -------
        bcolz_store.kinds.buffers.ArrowBuffers
            ``stop - start`` rows: validity, offsets, values, children
            (``bcolz_store.kinds.arrow.to_pyarrow`` wraps them in a pyarrow
            array without a copy).

        Raises
        ------
        TypeError
            A carray of one of bcolz's fixed dtypes (it has no column kind).
        """
        return _read.kind_buffers(self.kind, self._engine, self.len, start, stop)

    @property
    def kind(self):
        """The column kind of this carray (``bcolz_store.kinds.base.ColumnKind``:
        its Arrow type, how its rows encode and decode), or None for one of
        bcolz's fixed dtypes.
        """
        return self._kinds_of()[2]

    _column = property(lambda self: self._kinds_of()[1])

    # (whether items are pickled Python objects: bcolz's object carrays)
    _pickled = lambda self: self._meta.atom.kind == "O" and self._column is ColumnKind  # noqa

    def _kinds_of(self) -> tuple:
        """(meta, column_kind(meta), kind_of(meta)), found once per metadata object."""
        found = self._kinds
        if found[0] is not self._meta:
            found = self._kinds = (self._meta, column_kind(self._meta), kind_of(self._meta))
        return found

    def _prepare_append(self, array):
        return _edit.prepare_append(self._meta, self._engine, self._safe, array,
                                    self._to_ndarray, self._column)

    def _append_prepared(self, prepared):
        self._unstaged = True
        for block in _edit.append_blocks(prepared, self._meta.atom.base, self._to_ndarray):
            _edit.append_block(self.kind, self._engine, block, self._files.rootdir)

    def __setitem__(self, key, value):
        """Write ``x[key] = value``; on disk each assignment is one commit.

        Parameters
        ----------
        key : int, slice, tuple, array_like, carray or str
            As ``x[key]`` takes it.
        value : scalar or array_like
            Broadcast to the items ``key`` selects, converted to ``dtype``.

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        IndexError
            Out-of-range ints, unsupported keys.
        ValueError
            A boolean mask of the wrong length, values that cannot broadcast
            or convert, an empty tuple.
        NotImplementedError
            On an object carray (as bcolz).

        Examples
        --------
        >>> import numpy as np, bcolz_store as bcolz
        >>> c = bcolz.carray(np.zeros(6, dtype="i4"))
        >>> c[::2] = 7; c[[1, 3]] = [1, 3]
        >>> c[:]
        array([7, 1, 7, 3, 7, 0], dtype=int32)
        """
        self._check_writable()
        if self._pickled():
            raise NotImplementedError("assignment into object carrays is not supported")
        if isinstance(key, str):
            key = _read.eval_key(key, sys._getframe(1), type(self), self.len)
        if _arrow.is_arrow_source(value := _arrow.as_arrow_source(value)):
            value = type(self)(value)[:]
        if isinstance(key, tuple):
            if len(key) == 0:
                raise ValueError("empty tuple not supported")
            if len(key) > 1:     # rows read, changed within, written back
                rows = self[key[0]]
                rows[within_rows(key, key[0][:] if isinstance(key[0], carray) else None)] = value
                value = rows
            key = key[0]
        _edit.assign(self._engine, self._meta, key, value, self.len, self._to_ndarray,
                     self._writing)
        if self._files.store is not None:
            self.flush()

    def trim(self, nitems):
        """Remove the trailing ``nitems`` atoms (one commit on disk).

        Parameters
        ----------
        nitems : int
            How many to remove; a negative number grows the array with ``dflt``.

        Raises
        ------
        TypeError
            ``nitems`` not a number.
        ValueError
            ``nitems`` more than the length.
        ReadOnlyError
            In mode 'r'.

        Examples
        --------
        >>> import bcolz_store as bcolz
        >>> c = bcolz.arange(5)
        >>> c.trim(2); c[:]
        array([0, 1, 2])
        """
        nitems = as_nitems(nitems)
        if nitems > self.len:
            raise ValueError("`nitems` must be less than total length")
        if nitems <= 0:
            self.resize(self.len - nitems)
            return
        self._check_writable()
        with self._writing("trim"):
            self._engine.trim_to(self.len - nitems)
            self.flush()

    def resize(self, nitems):
        """Make the length ``nitems`` (one commit on disk).

        Parameters
        ----------
        nitems : int
            The new length: shorter trims, longer grows with ``dflt``.

        Raises
        ------
        TypeError
            ``nitems`` not a number.
        ValueError
            ``nitems`` negative.
        ReadOnlyError
            In mode 'r'.

        Examples
        --------
        >>> import bcolz_store as bcolz
        >>> c = bcolz.carray([1, 2], dflt=9)
        >>> c.resize(4); c[:]
        array([1, 2, 9, 9])
        """
        nitems = as_nitems(nitems)
        if nitems == self.len:
            if self._files.store is not None and self._mode != "r":
                self.flush()  # still one commit: it includes pending appends
            return
        if nitems < 0:
            raise ValueError("`nitems` cannot be negative")
        self._check_writable()
        with self._writing("resize"):
            if nitems < self.len:
                self._engine.trim_to(nitems)
            elif self._pickled():
                self._engine.append([self.dflt[()]] * (nitems - self.len))
            else:
                for block in _edit.filler_blocks(self._meta, self.dflt, nitems - self.len,
                                                 self._column):
                    self._engine.append(block)
            self.flush()

    def flush(self):
        """Commit: write the leftover and ``meta/sizes`` of a stored carray.

        Nothing happens in memory, or when nothing changed since the last
        commit.

        Raises
        ------
        ReadOnlyError
            In mode 'r' (nothing is written).
        ConcurrentWriteError
            Another writer changed the dataset in a way this write cannot be
            rebased on (a ``ConflictError``), or kept the commit lock.
        """
        if self._files.store is None:
            return
        self._check_writable()
        with self._writing():
            self._flush()

    def _flush(self, commit=True):
        store = self._files.store
        if self._unstaged:
            store.note("append")
        self._engine.stage_leftover()
        stage_sizes(store, self.shape, self.nbytes, self._engine.cbytes)
        stage_stats(store, self._engine)
        self._unstaged = False
        if commit:
            store.commit()

    def _note_committed(self):
        self._committed_len = self.len

    def _capture_appends(self):
        rows = self._pending_rows(self._committed_len)
        return lambda: self._append_prepared(self._prepare_append(rows))

    def _pending_rows(self, start: int):
        # this writer's own rows, appended but not committed: pickles too
        allowed, self._allow_pickle = self._allow_pickle, True
        store = self._files.store
        try:
            with contextlib.nullcontext() if store is None else store.reading_own_rows():
                return self[start:self.len]
        finally:
            self._allow_pickle = allowed

    def _stage_pending(self):
        # every commit includes the appends not yet staged: no commit holds
        # chunk files that its meta/sizes does not count
        if self._unstaged:
            self._flush(commit=False)

    # ------------------------------------------------------------ lifecycle

    def refresh(self):
        """Load the latest committed state, to see other writers' commits.

        In modes 'a'/'w' pending appends are committed first; after a failed
        write the carray returns to the last committed state.  Nothing happens
        in memory.

        Raises
        ------
        FormatError, DatasetNotFoundError
            The dataset has become unreadable.
        ReadOnlyError
            Never in mode 'r' (nothing is written there).
        """
        store = self._files.store
        if store is None:
            return
        if store.broken:          # a failed write: back to the committed state
            store.reload()
            if self._files.given is None:
                return
        elif self._mode != "r":
            self.flush()
        self._files.load(self._read_meta)

    def close(self):
        """Flush (unless read-only) and release the writer lock, if held.

        Raises
        ------
        ReadOnlyError, ConcurrentWriteError
            As :meth:`flush`; the lock is released all the same.
        """
        try:
            if self._files.store is not None and self._mode != "r":
                self.flush()
        finally:
            self._files.release()

    def free_cachemem(self):
        """Release the cached decompressed chunks (``cache_budget`` stays)."""
        self._engine.free_cachemem()

    def purge(self):
        """Remove the stored data in one commit (a no-op in memory).

        A standalone carray's folder goes too; a ctable column's when its table
        commits.

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        DatasetNotFoundError
            The rootdir is gone already.
        """
        if self._files.rootdir:
            self._check_writable()
            self._files.purge()

    # ------------------------------------------------------------ copies

    def copy(self, **kwargs):
        """Copy the carray, optionally elsewhere or otherwise compressed.

        Parameters
        ----------
        **kwargs
            :class:`carray` parameters (``rootdir``, ``mode``, ``cparams``,
            ``chunklen``...); as in bcolz, those not given take the current
            defaults, and ``expectedlen`` is ``len(self)``.

        Returns
        -------
        carray

        Raises
        ------
        UnsafeDataError
            An object carray from a store without ``allow_pickle``.
        DatasetExistsError, ValueError, TypeError
            As :class:`carray` for the parameters given.

        Examples
        --------
        >>> import bcolz_store as bcolz
        >>> bcolz.arange(4).copy(cparams={"clevel": 9}).cparams.clevel
        9
        """
        expectedlen = kwargs.pop("expectedlen", self.len)
        kwargs.setdefault("dflt", _ops.copy_dflt(self))
        kwargs.setdefault("nullable", self.nullable)
        atom = self._meta.atom
        if self._column.variable_items or self._column.python_items:   # block by block
            return type(self)(self, expectedlen=expectedlen, **kwargs)
        out = type(self)(np.empty((0,) + atom.shape, dtype=atom.base),
                         expectedlen=expectedlen, **kwargs)
        _ops.copy_rows(self._engine, self._meta, self._guard, self.len, self._blocks(),
                       out._engine)
        if out.mode != "r":
            out.flush()
        return out

    def view(self):
        """A lightweight in-memory view sharing this carray's chunks.

        Writes to either are not shown in the other once the leftover differs.

        Returns
        -------
        carray
        """
        out = type(self).__new__(type(self))
        out.__dict__.update(self.__dict__)
        out._engine = self._engine.copy_for_view()
        out._iterator, out._is_iter_view = None, False
        return out

    def reshape(self, newshape):
        """The same data in another shape.

        Stored, the reshaped data replaces this dataset in one commit (as in
        bcolz, which rewrote its rootdir).

        Parameters
        ----------
        newshape : int or tuple of int
            One dimension may be -1 (inferred).

        Returns
        -------
        carray

        Raises
        ------
        ValueError
            Sizes that differ, more than one -1, or more than one dimension
            for an object or vlen carray.
        ReadOnlyError
            On disk in mode 'r'.

        Examples
        --------
        >>> import bcolz_store as bcolz
        >>> bcolz.arange(6).reshape((3, -1)).shape
        (3, 2)
        """
        if self._files.rootdir:
            self._check_writable()
        newshape = _ops.new_shape(newshape, self.size, self._meta.atom.kind == "O"
                                  or self._column.vlen_items)
        if not self._files.rootdir:
            return self._reshaped(newshape, None)
        self._files.replace_with(lambda rootdir: self._reshaped(newshape, rootdir))
        self._read_meta()
        # mode 'w' would empty the dataset on open: open it in 'a', then say 'w'
        out = type(self)(rootdir=self._files.root_arg, mode="a" if self._mode == "w"
                         else self._mode, options=self._options.replace(lock=False),
                         _store=self._files.given)
        out._allow_pickle = self._allow_pickle
        out.mode = self._mode
        return out

    def _reshaped(self, newshape: tuple, rootdir):
        if self._column.variable_items:     # one-dimensional: the same items
            return self.copy(rootdir=rootdir, mode="w", cparams=self._meta.cparams)
        base = self._meta.atom.base
        out = type(self)(np.empty((0,) + newshape[1:], dtype=base), cparams=self._meta.cparams,
                         expectedlen=newshape[0], rootdir=rootdir, mode="w")
        _ops.copy_rows(self._engine, self._meta, self._guard, self.len, self._iterblocks(),
                       out._engine, lambda blocks: _ops.reshaped_rows(blocks, base, newshape))
        if rootdir is not None:
            out.flush()
        return out

    def to_dask(self, blen=None):
        """This carray as a dask array of whole chunks of rows.

        Each task reads its rows from this carray (a stored carray travels to
        other processes as its rootdir and is read there in mode 'r'); see
        :func:`bcolz_store.interop.dask.carray_to_dask`.

        Parameters
        ----------
        blen : int, optional
            Rows per block, a multiple of ``chunklen`` (default: about 32 MiB).

        Returns
        -------
        dask.array.Array

        Raises
        ------
        ImportError
            dask is not installed (extra ``bcolz_store[dask]``).
        ValueError
            A ``blen`` that is not a positive multiple of ``chunklen``.
        """
        from .interop.dask import carray_to_dask
        return carray_to_dask(self, blen=blen)

    def to_kerchunk(self, url=None, *, name=None, inline_threshold=0):
        r"""kerchunk references (version 1) that open this stored carray as a zarr
        v2 array, and with xarray, in place (docs/zarr.md).

        One group holding one array ``name``: shape ``(len, *atom)``, chunks
        ``(chunklen, *atom)``, the dtype with its byte order, numcodecs' Blosc,
        a null fill value (xarray would mask items equal to one), and
        ``.zattrs`` with the attrs and ``_ARRAY_DIMENSIONS`` (``dim_0``...).
        Each full chunk is ``[url, 16, ctbytes]``: a chunk file is a 16-byte
        bloscpack header and one Blosc buffer (docs/format.md, "A chunk file").
        The leftover is padded with ``dflt``, compressed and inlined
        (``"base64:..."``).  Only committed files are referenced.

        Parameters
        ----------
        url : str, optional
            The carray's folder as readers will see it (chunk URLs
            ``url/data/__N.blp``).  Default: ``file://`` and the absolute path,
            or the store's own URL (``s3://...``).
        name : str, optional
            The array's name (default: the rootdir's last part, else "data").
        inline_threshold : int, default 0
            Full chunks whose Blosc buffer is smaller are inlined too.

        Returns
        -------
        dict
            ``{"version": 1, "refs": {...}}``, for ``json.dump`` and fsspec's
            ``ReferenceFileSystem(fo=...)``.

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
            without ``url``; a negative ``inline_threshold``; a ``name`` that
            is empty, holds '/' or '\' or starts with '.'.
        CodecError
            A chunk compressed with snappy, which numcodecs' Blosc lacks.
        FormatError
            A chunk file whose headers are invalid or announce another size.

        Examples
        --------
        >>> import numpy as np, bcolz_store as bcolz
        >>> c = bcolz.carray(np.arange(10.0), chunklen=4, rootdir="walk")
        >>> refs = c.to_kerchunk()["refs"]
        >>> refs["walk/0"][0].startswith("file://"), refs["walk/0"][1], refs["walk/2"][:7]
        (True, 16, 'base64:')
        """
        return _kerchunk.carray_refs(self, url, name=name, inline_threshold=inline_threshold)

    def tofixed(self, rootdir=None, mode="w", *, missing=None, **kwargs):
        """A copy the real bcolz reads.

        A vlen carray becomes fixed-width ``U`` (str) or ``S`` (bytes), as wide
        as its longest item; other carrays are copied.

        Parameters
        ----------
        rootdir : str, optional
            Where to write the copy (None: in memory).
        mode : {'w', 'a'}, default 'w'
        missing : str or bytes, optional
            Written for a missing item (default: missing items are refused).
        **kwargs
            Other :class:`carray` parameters (``cparams``, ``chunklen``...).

        Returns
        -------
        carray

        Raises
        ------
        ValueError
            Missing items without ``missing``, or a str item ending in NUL
            (fixed-width ``U`` cannot hold it).
        DatasetExistsError
            ``rootdir`` exists and ``mode`` is not 'w'.
        """
        return _fixed_width.tofixed(self, rootdir, mode, missing=missing, **kwargs)

    # ------------------------------------------------------------ protocols

    def __len__(self):
        return self.len

    def __sizeof__(self):
        return self.cbytes

    def __array__(self, dtype=None, copy=None):
        x = self[:]
        return x.astype(dtype) if dtype is not None and x.dtype != dtype else x

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()

    def __str__(self):
        from .printing import format_carray_str
        return format_carray_str(self)

    def __repr__(self):
        from .printing import format_carray_repr
        return format_carray_repr(self)

    def __reduce__(self):     # stored: its rootdir, reopened in mode 'r'; in memory: its chunks
        return _handles.reduce_carray(self)

    def __dask_tokenize__(self):
        return _handles.dask_token(self)

    __arrow_c_stream__, __arrow_c_schema__ = _arrow.carray_stream, _arrow.carray_schema


def _rebuild_carray(array, rootdir):     # pickles of earlier versions: a reader, never a writer
    if rootdir:
        return _handles.open_stored(carray, rootdir, None, False, False, None)
    return carray(array)
