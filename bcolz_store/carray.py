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
from .apidoc import documented
from .apidoc.carray import CARRAY_DOCS
from .apidoc.carray_interop import CARRAY_INTEROP_DOCS
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

__all__ = ["calc_chunklen", "carray", "chunk", "matching_positions"]

_MODES = ("r", "w", "a")


@documented({**CARRAY_DOCS, **CARRAY_INTEROP_DOCS})
class carray:
    # The reference docs (constructor and methods): bcolz_store/apidoc/carray.py.

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
        if isinstance(key, str):
            if self._column.has_fields:     # a struct carray's field
                return self.field(key)
            key = _read.eval_key(key, sys._getframe(1), type(self), self.len)
        return _read.read_key(self._engine, self._meta, self._guard, key, self.len,
                              self.__getitem__, self._column)

    def __iter__(self):
        return self if self._iterator is not None else self.iter()

    def __next__(self):
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
        if self._meta.atom.base.type != np.bool_:
            raise ValueError("`self` is not an array of booleans")
        if self.ndim > 1:
            raise NotImplementedError("`self` is not unidimensional")
        return self._iterating(_ops.true_positions(self, limit, skip, self._meta.chunklen))

    def where(self, boolarr, limit=None, skip=0):
        _ops.check_where(boolarr, self.len, self.ndim)
        blen = boolarr.chunklen if isinstance(boolarr, carray) else self._meta.chunklen
        gather = functools.partial(_read.gather, self._engine, self._meta, self._guard,
                                   column=self._column)
        return self._iterating(_ops.values_where(gather, boolarr, limit, skip, blen))

    isnull, notnull = _ops.isnull, _ops.notnull

    def sum(self, dtype=None):
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

    to_buffers = lambda self, start=0, stop=None: _read.kind_buffers(  # noqa: E731
        self.kind, self._engine, self.len, start, stop)
    kind = property(lambda self: self._kinds_of()[2])
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
        try:
            if self._files.store is not None and self._mode != "r":
                self.flush()
        finally:
            self._files.release()

    def free_cachemem(self):
        self._engine.free_cachemem()

    def purge(self):
        if self._files.rootdir:
            self._check_writable()
            self._files.purge()

    # ------------------------------------------------------------ copies

    def copy(self, **kwargs):
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
        out = type(self).__new__(type(self))
        out.__dict__.update(self.__dict__)
        out._engine = self._engine.copy_for_view()
        out._iterator, out._is_iter_view = None, False
        return out

    def reshape(self, newshape):
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
        from .interop.dask import carray_to_dask
        return carray_to_dask(self, blen=blen)

    def to_kerchunk(self, url=None, *, name=None, inline_threshold=0):
        return _kerchunk.carray_refs(self, url, name=name, inline_threshold=inline_threshold)

    def tofixed(self, rootdir=None, mode="w", *, missing=None, **kwargs):
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
