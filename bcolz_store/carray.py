"""carray: a compressed, chunked, enlargeable array in memory or on disk.

Data is split in chunks of ``chunklen`` atoms, each compressed with Blosc.  The
trailing partial chunk (the *leftover*) stays uncompressed in memory until
``flush()``, when it is written as the next numbered chunk file holding only the
leftover atoms, and ``meta/sizes`` is rewritten.  On open, the leftover file is
read back into the leftover buffer.

Source: bcolz format v1.0 (seeds/001) and FORMAT-NOTES.md; the layout of the
files is in :mod:`bcolz_store.format`.
"""

from __future__ import annotations

import contextlib
import math
import pickle
import sys
import threading
from collections import OrderedDict

import numpy as np

from . import attrs as _attrs
from .chunks.chunk import DiskChunks, MemoryChunks, chunk, chunk_key
from .chunks.cparams import cparams as cparams_cls
from .defaults import check_cache_budget, defaults
from .errors import (BcolzStoreError, ChunkNotFoundError, DatasetExistsError,
                     DatasetNotFoundError, FormatError, ReadOnlyError, UnsafeDataError)
from .storage import locking as _locking
from .format.meta import (SizesMeta, StorageMeta, atom_dtype, dump_sizes, dump_storage,
                          load_sizes, load_storage, storage_kind)
from .storage.dataset import DatasetStore
from .storage.journal import read_consistently
from .storage.urls import describe_rootdir, open_store

__all__ = ["calc_chunklen", "carray", "chunk", "matching_positions"]

_MB = 1024 * 1024
# Reads that allocate more than this check first that their chunk files exist.
CHECK_BEFORE_ALLOCATING = 256 * _MB
# Compressed bytes of chunk files fetched together from a remote store.
FETCH_BATCH_BYTES = 64 * _MB
# Blosc-1 compresses at most 2 GB per chunk; a larger chunk in meta is a lie.
MAX_CHUNK_BYTES = 2 ** 31 - 16


def calc_chunklen(expectedlen: int, atomsize: int) -> int:
    """Chunk length bcolz picks for ``expectedlen`` atoms of ``atomsize`` bytes.

    Source: bcolz's chunk-size formula: the expected size in MB is clamped to
    [1e-4, 1e4], rounded down to a power of ten (``zone``), and the chunk size
    is ``4 KiB * int(2 ** (zone + 6))`` bytes, floored to whole atoms (at least
    one atom).  Checked against every fixture's chunklen.
    """
    size_mb = (expectedlen * atomsize) / float(_MB)
    size_mb = min(max(size_mb, 1e-4), 1e4)
    zone = int(math.log10(size_mb))
    chunksize = 4 * 1024 * int(2 ** (math.log10(10 ** zone) + 6))
    chunksize = (chunksize // atomsize) * atomsize
    return max(chunksize, atomsize) // atomsize


def matching_positions(mask, limit, skip, blen):
    """Yield arrays of the positions where ``mask`` is true, ``blen`` items at a time.

    ``skip`` true positions are passed over first, then at most ``limit``
    (None: all) are yielded: bcolz's limit/skip semantics for ``where``,
    ``wheretrue`` and the ctable queries.  ``mask`` is a boolean ndarray or
    carray.
    """
    skip = max(int(skip or 0), 0)
    remaining = None if limit is None else max(int(limit), 0)
    if remaining == 0:
        return
    for start in range(0, len(mask), blen):
        hits = np.flatnonzero(np.asarray(mask[start:start + blen]))
        if skip:
            dropped = min(skip, len(hits))
            skip -= dropped
            hits = hits[dropped:]
        if remaining is not None:
            hits = hits[:remaining]
            remaining -= len(hits)
        if len(hits):
            yield hits + start
        if remaining == 0:
            return


def _as_nitems(nitems) -> int:
    """A count of items for trim/resize (bcolz also accepts floats)."""
    if not isinstance(nitems, (int, float, np.integer, np.floating)):
        raise TypeError("`nitems` must be an integer")
    return int(nitems)


# Dtype kinds whose single elements come back as Python scalars, as in bcolz
# (which returned what numpy's item() gives); others stay numpy scalars.
PYTHON_SCALAR_KINDS = "biufcSU"


def _within_rows(key: tuple) -> tuple:
    """For a tuple key, the index into ``self[key[0]]`` that gives numpy's ``a[key]``.

    An int first key drops the row dimension; a slice, mask or index array
    keeps it, and index arrays in the rest pair with the selected rows as
    numpy's advanced indexing does.
    """
    first, rest = key[0], key[1:]
    if _is_int(first):
        return rest
    if isinstance(first, slice):
        return (slice(None),) + rest
    rows = np.asarray(first[:] if isinstance(first, carray) else first)
    n = int(rows.sum()) if rows.dtype == np.bool_ else rows.size
    if any(isinstance(k, (list, np.ndarray)) for k in rest):
        return (np.arange(n),) + rest
    return (slice(None),) + rest


def _is_int(key) -> bool:
    return isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_))


class carray:
    """carray(array=None, cparams=None, dtype=None, dflt=None, expectedlen=None, chunklen=None, rootdir=None, safe=True, mode='a')

    A compressed, enlargeable array, in memory or on disk.

    Parameters
    ----------
    array : array_like, optional
        Initial data; its first dimension is the length, the others form the
        atom.  Required unless opening an existing ``rootdir``.
    cparams : cparams or dict, optional
        Compression parameters (default: ``bcolz_store.defaults.cparams``).
    dtype : numpy dtype, optional
        Force this dtype instead of the one of ``array``.
    dflt : scalar, optional
        Fill value used when the array grows (``resize``); default zero.
    expectedlen : int, optional
        Expected final length; decides ``chunklen`` (default ``len(array)``).
    chunklen : int, optional
        Atoms per chunk; overrides ``expectedlen``'s choice.
    rootdir : str, optional
        Directory for an on-disk carray; None keeps it in memory.
    safe : bool, default True
        Convert and check appended data.
    mode : {'a', 'r', 'w'}, default 'a'
        'r' read-only, 'a' read and append, 'w' create anew (removing what is
        at ``rootdir``).

    Raises
    ------
    ValueError
        Invalid mode or parameters, or neither ``array`` nor ``rootdir``.
    DatasetExistsError
        Creating at an existing ``rootdir`` with mode other than 'w' (an
        OSError, as bcolz's IOError).
    DatasetNotFoundError
        Opening a ``rootdir`` that holds no carray (a FileNotFoundError).
    FormatError
        Opening a rootdir whose metadata or chunk files are corrupt.
    TypeError
        dtypes bcolz cannot store either (nested objects, typesize > 255).

    Notes
    -----
    Compatibility: bcolz 1.x's constructor, properties and methods, with the
    same chunklen choice and the same bytes on disk.  Better than bcolz:
    negative slice steps, integer index arrays of any integer dtype, every
    dtype persists (complex, timedelta64, datetime64 in any unit, structured).
    """

    def __init__(self, array=None, cparams=None, dtype=None, dflt=None, expectedlen=None,
                 chunklen=None, rootdir=None, safe=True, mode="a", *, verify=False,
                 allow_pickle=False, lock=False, storage_options=None, consolidated=None,
                 _store=None, _dataset=None):
        if mode not in ("r", "w", "a"):
            raise ValueError("mode should be 'r', 'w' or 'a'")
        self._rootdir = describe_rootdir(rootdir) if rootdir is not None else None
        self._root_arg = rootdir
        self._storage_options = storage_options
        self._consolidated = consolidated
        self._mode = mode
        self._safe = safe
        self._verify = verify
        self._allow_pickle = allow_pickle or array is not None
        self._given_store = _store
        self._dataset = _dataset      # a store view open() prepared (its journal recovered)
        self._lock = _locking.acquire(rootdir, lock and _store is None)
        self._cache = OrderedDict()
        self._cache_nbytes = 0
        self._cache_lock = threading.Lock()
        self._cache_budget = defaults.cache_budget
        self._iterator = None
        self._is_iter_view = False
        if array is not None:
            self._create_or_clean_up(array, cparams, dtype, dflt, expectedlen, chunklen)
            new = True
        elif self._rootdir is not None:
            self._open()
            new = False
        else:
            raise ValueError("You need at least to pass an array or/and a rootdir")
        if new or self._store is None:
            self._attrs = _attrs.attrs(self._rootdir, self._mode, _new=new, _store=self._store)
        if new and self._store is not None:
            # Creation is one commit (meta, chunks, attrs, and the removal of
            # what was at the rootdir before); it writes even in mode 'r', as
            # bcolz does.
            self._commit_creation()
            self._store.readonly = mode == "r"
        if self._store is not None and self._given_store is None:
            # A failed write returns this carray to its last committed state.
            self._store.journal.owner_reload = self._read_meta
            self._store.journal.locked = self._lock is not None
        if not new and mode == "w":
            self.resize(0)

    def _new_store(self, readonly: bool = False) -> DatasetStore:
        """The view of this carray's own store (a standalone carray)."""
        return DatasetStore(open_store(self._root_arg, readonly, self._storage_options),
                            readonly=readonly, verify=self._verify,
                            consolidated=self._consolidated)

    def _create_or_clean_up(self, *args):
        """:meth:`_create`; on failure, nothing of the new dataset stays stored."""
        self._existed = None
        try:
            self._create(*args)
        except BaseException:
            store = getattr(self, "_store", None)
            if store is not None and self._given_store is None:
                store.journal.discard()
                if self._existed == "missing":
                    with contextlib.suppress(OSError, BcolzStoreError):
                        store.store.remove_root()
            raise

    def _commit_creation(self):
        journal = self._store.journal
        if self._given_store is not None:   # a ctable column: the table commits
            journal.commit()
            return
        journal.commit()      # on failure, _create_or_clean_up's caller cleans
        if self._existed == "folder":
            self._store.store.prune_empty_folders(keep=("data", "meta"))

    def _writing(self):
        """The context of one write: on any failure, the carray (and, for a
        ctable column, its whole table) returns to its last committed state
        (see :meth:`bcolz_store.storage.journal.Journal.operation`)."""
        if self._store is None:
            return contextlib.nullcontext()
        return self._store.journal.operation()

    # ------------------------------------------------------------------ setup

    def _create(self, array, cparams, dtype, dflt, expectedlen, chunklen):
        if cparams is None or isinstance(cparams, (cparams_cls, dict)):
            self._cparams = cparams_cls.from_any(cparams)
        else:
            raise ValueError("`cparams` param must be an instance of `cparams` class")
        if isinstance(dtype, str):
            dtype = np.dtype(dtype)
        if isinstance(array, carray):
            source_len = len(array)
            if dtype is None:
                dtype = array.dtype
            first = np.empty((0,) + array.shape[1:], dtype=array.dtype)
            array_ = first
        else:
            array_ = self._to_ndarray(array, None if dtype is None else np.dtype(dtype).base)
            source_len = len(array_)
        if dtype is None:
            dtype = array_.dtype.base
        dtype = np.dtype(dtype)
        if storage_kind(dtype) == "pickle":
            if array_.ndim > 1:
                raise TypeError("object carrays are one-dimensional (each item is pickled)")
            self._dtype = dtype
        else:
            self._dtype = np.dtype((dtype.base, dtype.shape + array_.shape[1:]))
            storage_kind(self._dtype)
        if self._dtype.itemsize >= 2 ** 31:
            raise ValueError("atomic size is too large (>= 2 GB)")
        if self._dtype.itemsize == 0:
            raise TypeError("atomic size cannot be zero")
        if not self._dtype.hasobject:
            from .chunks.codec import typesize_for
            typesize_for(self._dtype)  # TypeError for > 255-byte items bcolz refuses too
        self._dflt = np.zeros((), dtype=self._dtype.base)
        if dflt is not None:
            if isinstance(dflt, np.ndarray) and dflt.ndim == 0:
                dflt = dflt[()]       # a carray's own dflt (a 0-d array)
            self._dflt[()] = dflt
        self.expectedlen = int(source_len if expectedlen is None else expectedlen)
        if chunklen is None:
            self._chunklen = calc_chunklen(self.expectedlen, self._dtype.itemsize)
        else:
            if not _is_int(chunklen) or chunklen < 1:
                raise ValueError("chunklen must be a positive integer")
            self._chunklen = int(chunklen)
        self._lastchunkarr = np.zeros(self._chunklen, dtype=self._dtype)
        self._nleft = 0
        # cbytes counts the leftover buffer as a full chunk (objects have none).
        self._cbytes = 0 if self._dtype.kind == "O" else self._chunksize
        if self._rootdir is not None:
            self._store = self._given_store or self._new_store()
            self._existed = self._store.state()
            if self._existed != "missing":
                if self._mode != "w":
                    raise DatasetExistsError(
                        f"specified rootdir path '{self._rootdir}' already exists "
                        f"and creation mode is '{self._mode}'")
                self._replace_existing()
            self._store.makedirs("data", "meta")
            self._chunks = DiskChunks(self._store, self._dtype, self._cparams, 0,
                                      chunk_nbytes=None if self._dtype.kind == "O" else
                                      self._chunksize)
            self._write_storage()
        else:
            self._store = None
            self._chunks = MemoryChunks()
        if isinstance(array, carray):
            for block in array.iterblocks_(self._chunklen):
                self._append_array(self._to_ndarray(block, self._dtype.base))
        elif self._dtype.kind == "O":
            for obj in array_:
                self._store_obj(obj)
        else:
            self._append_array(array_)
        if self._store is not None:
            self._flush(commit=False)  # committed with the attrs, in __init__

    def _replace_existing(self):
        """Stage the removal of what is at the rootdir: the new carray replaces
        it in the creation's one commit, so a killed writer leaves the old
        dataset whole."""
        store = self._store
        if self._existed == "other":
            store.store.remove_root()     # a file, or a broken link: not a dataset
            self._existed = "missing"
            return
        if self._given_store is None:
            store.journal.recover()       # finish a commit left by a killed writer
        store.remove_all()

    def _open(self):
        root = self._rootdir
        if self._given_store is not None:
            self._store = self._given_store
            self._read_meta()
            return
        if self._dataset is not None:
            self._store, self._dataset = self._dataset, None
        else:
            self._store = self._new_store(readonly=self._mode == "r")
            if self._store.state() != "folder":
                raise DatasetNotFoundError(f"{root}: no carray here (directory does not exist)")
        self._load_committed()

    def _load_committed(self):
        """Finish or discard an interrupted commit, then load the committed state.

        In mode 'r' this retries until no writer committed during the load, so
        the carray holds one committed state (see :func:`read_consistently`).
        """
        journal = self._store.journal
        if self._mode == "r":
            read_consistently(journal, self._read_meta)
        else:
            if not journal.fresh:
                journal.recover()
            journal.fresh = False
            self._read_meta()
        self._store.warn_if_unverifiable()

    def _read_meta(self):
        """Load the committed state (meta files and leftover) from the store."""
        store = self._store
        root = self._rootdir
        self._drop_cache()
        attrs = getattr(self, "_attrs", None)
        if attrs is not None and attrs._store is store:
            attrs.reload()          # in place: callers may hold the attrs object
        else:
            self._attrs = _attrs.attrs(root, self._mode, _new=False, _store=store)
        for key in ("meta/sizes", "meta/storage"):
            if not store.exists(key):
                raise DatasetNotFoundError(f"{store.path(key)}: missing, {root} is not a carray")
        sizes = load_sizes(store.get("meta/sizes"), store.path("meta/sizes"))
        storage = load_storage(store.get("meta/storage"), store.path("meta/storage"))
        dtype = atom_dtype(storage.dtype, sizes.shape[1:], store.path("meta/sizes"))
        if storage_kind(dtype) == "pickle" and len(sizes.shape) > 1:
            raise FormatError(f"{store.path('meta/sizes')}: shape {list(sizes.shape)} for an "
                              f"object carray, which is one-dimensional")
        self._dtype = dtype
        try:
            self._cparams = cparams_cls(**storage.cparams)
        except ValueError as err:   # a compressor this Blosc build lacks
            raise FormatError(f"{store.path('meta/storage')}: {err}") from err
        self._chunklen = storage.chunklen
        self._dflt = storage.dflt
        self.expectedlen = storage.expectedlen
        length = sizes.shape[0]
        atomsize = dtype.itemsize
        if dtype.kind == "O":
            if length and not (store.exists(chunk_key(0)) and store.exists(chunk_key(length - 1))):
                raise ChunkNotFoundError(
                    f"{store.path(chunk_key(0 if not store.exists(chunk_key(0)) else length - 1))}"
                    f": chunk file missing; meta/sizes promises {length} objects, one chunk "
                    f"file each")
            self._chunks = DiskChunks(store, dtype, self._cparams, length, chunk_nbytes=None)
            self._lastchunkarr = np.zeros(0, dtype=dtype)
            self._nleft = 0
            self._cbytes = sizes.cbytes
            return
        if self._chunklen * atomsize > MAX_CHUNK_BYTES:
            raise FormatError(f"{store.path('meta/storage')}: chunklen {self._chunklen} of "
                              f"{atomsize}-byte atoms exceeds Blosc's {MAX_CHUNK_BYTES} bytes")
        nfull, nleft = divmod(length, self._chunklen)
        needed = nfull + (1 if nleft else 0)
        if not store.store.remote:      # two stats: a missing chunk file is told at once
            missing = [i for i in (0, needed - 1) if needed and not store.exists(chunk_key(i))]
            if missing:
                raise ChunkNotFoundError(
                    f"{store.path(chunk_key(missing[0]))}: chunk file missing; meta/sizes "
                    f"promises {length} items in {needed} chunk files")
        self._chunks = DiskChunks(store, dtype, self._cparams, nfull,
                                  chunk_nbytes=self._chunklen * atomsize)
        self._nleft = nleft
        # The leftover chunk is read when first needed (reading the last rows,
        # appending...), so opening a table reads no chunk at all.
        self._leftover_buffer = None
        self._cbytes = sizes.cbytes

    def refresh(self):
        """Re-read the committed state from disk, to see other writers' commits.

        In modes 'a'/'w' pending appends are committed first (``flush``).  Does
        nothing for an in-memory carray.

        Raises
        ------
        FormatError, DatasetNotFoundError
            If the dataset on disk has become unreadable.
        """
        if self._store is None:
            return
        journal = self._store.journal
        if journal.broken is not None:    # a failed write: back to the committed state
            journal.reload_committed()
            if self._given_store is None:
                return
        elif self._mode != "r":
            self.flush()
        if self._given_store is None:
            self._load_committed()
        else:
            self._read_meta()

    def close(self):
        """Flush (unless read-only) and release the writer lock, if held."""
        try:
            if self._store is not None and self._mode != "r":
                self.flush()
        finally:
            _locking.release(self._lock)
            self._lock = None

    def _write_storage(self):
        self._store.set("meta/storage", dump_storage(StorageMeta(
            self._dtype.base, self._cparams.to_dict(), self._chunklen, self.expectedlen,
            self._dflt)))

    # ------------------------------------------------------------- properties

    @property
    def _lastchunkarr(self) -> np.ndarray:
        """The leftover buffer, ``chunklen`` atoms (read from its chunk file on first use)."""
        buffer = self._leftover_buffer
        if buffer is None:
            buffer = np.zeros(self._chunklen, dtype=self._dtype)
            if self._nleft:
                try:
                    self._chunks.read_into(len(self._chunks), buffer[:self._nleft])
                except BcolzStoreError as err:
                    journal = self._store.journal
                    if not journal.readonly and journal.committed_elsewhere():
                        error = journal.concurrent_error()
                        if journal._depth == 0:        # not inside a write: reload here
                            journal.roll_back(error)
                        raise error from err
                    raise
            self._leftover_buffer = buffer
        return buffer

    @_lastchunkarr.setter
    def _lastchunkarr(self, value: np.ndarray) -> None:
        self._leftover_buffer = value

    @property
    def _chunksize(self) -> int:
        return self._chunklen * self._dtype.itemsize

    @property
    def attrs(self):
        """The user attributes (an :class:`bcolz_store.attrs.attrs`)."""
        return self._attrs

    @property
    def cache_budget(self) -> int:
        """Bytes of decompressed chunks kept for re-reads (least recently used
        go first); a chunk larger than the budget is never kept.

        Starts at ``bcolz_store.defaults.cache_budget`` (8 MiB).  Setting a
        smaller budget evicts at once; 0 turns the cache off.  Reads of whole
        chunks (as in ``a[:]`` or ``sum``) decompress straight into their
        output and bypass the cache, so a full read holds the output plus at
        most one chunk.

        Raises
        ------
        TypeError
            Setting a value that is not an integer.
        ValueError
            Setting a negative value.
        """
        return self._cache_budget

    @cache_budget.setter
    def cache_budget(self, value) -> None:
        self._cache_budget = check_cache_budget(value)
        with self._cache_lock:
            while self._cache_nbytes > self._cache_budget:
                _, old = self._cache.popitem(last=False)
                self._cache_nbytes -= old.nbytes

    @property
    def cbytes(self) -> int:
        """Compressed size in bytes (the leftover counts as a full uncompressed chunk)."""
        return self._cbytes

    @property
    def chunklen(self) -> int:
        """Atoms per chunk."""
        return self._chunklen

    @property
    def chunks(self):
        """The sequence of full, compressed chunks."""
        return self._chunks

    @property
    def cparams(self):
        """The compression parameters (a :class:`cparams`)."""
        return self._cparams

    @property
    def dflt(self) -> np.ndarray:
        """The fill value for growing, a 0-d array of ``dtype``."""
        return self._dflt

    @property
    def dtype(self) -> np.dtype:
        """dtype of the elements (the atom's base dtype, numpy's convention)."""
        return self._dtype.base

    @property
    def len(self) -> int:
        """Number of atoms (the leading dimension)."""
        if self._dtype.kind == "O":
            return len(self._chunks)
        return len(self._chunks) * self._chunklen + self._nleft

    @property
    def mode(self) -> str:
        """'r', 'w' or 'a'."""
        return self._mode

    @mode.setter
    def mode(self, value):
        if value not in ("r", "w", "a"):
            raise ValueError("mode should be 'r', 'w' or 'a'")
        self._mode = value
        if self._store is not None:
            self._store.readonly = value == "r"
        self._attrs.mode = value
        if self._attrs._store is not None:
            self._attrs._store.readonly = value == "r"

    @property
    def nbytes(self) -> int:
        """Uncompressed size in bytes."""
        if self._dtype.kind == "O":
            return sum(c.nbytes for c in self._chunks)
        return self.len * self._dtype.itemsize

    @property
    def nchunks(self) -> int:
        """Number of full (compressed) chunks."""
        return len(self._chunks)

    @property
    def leftover(self) -> int:
        """Bytes held in the uncompressed leftover buffer."""
        return self._nleft * self._dtype.itemsize

    leftover_bytes = leftover

    @property
    def nleftover(self) -> int:
        """Atoms held in the leftover buffer."""
        return self._nleft

    leftover_elements = nleftover

    @property
    def leftover_array(self) -> np.ndarray:
        """The leftover buffer, shape (chunklen, *atom)."""
        return self._lastchunkarr

    @property
    def leftover_ptr(self) -> int:
        """Address of the leftover buffer."""
        return self._lastchunkarr.ctypes.data

    @property
    def partitions(self) -> list:
        """(start, stop) of every full chunk."""
        cl = self._chunklen
        return [(i * cl, (i + 1) * cl) for i in range(self.nchunks)]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def rootdir(self):
        """The directory of an on-disk carray (None in memory)."""
        return self._rootdir

    @rootdir.setter
    def rootdir(self, value):
        if not self._rootdir:
            raise ValueError("cannot modify the rootdir value of an in-memory carray")
        # Compatibility: as in bcolz, only where later writes go changes; no
        # file is moved.
        self._rootdir = describe_rootdir(value)
        self._root_arg = value
        self._given_store = None
        self._store = self._new_store(readonly=self._mode == "r")
        self._store.journal.owner_reload = self._read_meta
        self._chunks.store = self._store
        self._attrs._store = self._store
        self._attrs.rootdir = self._rootdir

    @property
    def safe(self) -> bool:
        return self._safe

    @property
    def shape(self) -> tuple:
        return (int(self.len),) + self._dtype.shape

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def cratio(self) -> float:
        """nbytes / cbytes."""
        return self.nbytes / float(self._cbytes) if self._cbytes else float("nan")

    # ---------------------------------------------------------- chunk access

    def _check_writable(self):
        if self._mode == "r":
            raise ReadOnlyError(f"cannot modify data because mode is '{self._mode}'")

    def _new_chunk(self, data) -> chunk:
        return chunk(data, self._dtype, self._cparams, _memory=self._store is None)

    def _chunk_array(self, nchunk: int) -> np.ndarray:
        """Decompressed atoms of chunk ``nchunk`` (full chunk or leftover); read-only view."""
        if nchunk == len(self._chunks):
            return self._lastchunkarr[:self._nleft]
        with self._cache_lock:  # several threads may read one carray
            cached = self._cache.get(nchunk)
            if cached is not None:
                self._cache.move_to_end(nchunk)
                return cached
        data = np.empty(self._chunklen, dtype=self._dtype)
        self._chunks.read_into(nchunk, data)
        data.flags.writeable = False
        if data.nbytes <= self._cache_budget:
            with self._cache_lock:
                if nchunk not in self._cache:
                    self._cache[nchunk] = data
                    self._cache_nbytes += data.nbytes
                while self._cache_nbytes > self._cache_budget:
                    _, old = self._cache.popitem(last=False)
                    self._cache_nbytes -= old.nbytes
        return data

    def _replace_chunk(self, nchunk: int, data: np.ndarray):
        """Store new contents for full chunk ``nchunk``."""
        old = self._chunks[nchunk]
        new = self._new_chunk(data)
        self._chunks[nchunk] = new
        self._cbytes += new.cbytes - old.cbytes
        self._drop_cache(nchunk)

    def _drop_cache(self, nchunk=None):
        with self._cache_lock:
            if nchunk is None:
                self._cache.clear()
                self._cache_nbytes = 0
            elif nchunk in self._cache:
                self._cache_nbytes -= self._cache.pop(nchunk).nbytes

    def free_cachemem(self):
        """Release cached decompressed chunks."""
        self._drop_cache()
        self._chunks.free_cachemem()

    # --------------------------------------------------------------- reading

    def _read_range(self, start: int, stop: int, out: np.ndarray | None = None) -> np.ndarray:
        """Atoms ``start:stop`` (0 <= start <= stop <= len) as a new contiguous array."""
        n = stop - start
        cl = self._chunklen
        nfull = len(self._chunks)
        if out is None:
            if n * self._dtype.itemsize > CHECK_BEFORE_ALLOCATING and self._store is not None:
                self._check_chunk_files(start // cl, min((stop - 1) // cl + 1, nfull))
            out = np.empty(n, dtype=self._dtype)
        whole = []             # full chunks read straight into out: (nchunk, dest)
        pos = start
        while pos < stop:
            nchunk = pos // cl
            lo = pos - nchunk * cl
            hi = min(stop - nchunk * cl, cl)
            dest = out[pos - start: pos - start + hi - lo]
            if nchunk < nfull and lo == 0 and hi == cl and nchunk not in self._cache:
                whole.append((nchunk, dest))
            else:
                dest[...] = self._chunk_array(nchunk)[lo:hi]
            pos += hi - lo
        self._decode_into(whole)
        return out

    def _decode_into(self, tasks: list) -> None:
        """Decompress each full chunk ``nchunk`` of ``tasks`` into its ``dest``.

        On a remote store the chunk files are fetched concurrently, a bounded
        number at a time (:data:`FETCH_BATCH_BYTES`), so a full read makes
        few round trips and holds the output plus one batch of chunk files.
        """
        chunks = self._chunks
        if len(tasks) < 2 or chunks.memory or not self._store.store.remote:
            for nchunk, dest in tasks:
                chunks.read_into(nchunk, dest)
            return
        per_batch = max(FETCH_BATCH_BYTES // max(self._chunksize, 1), 2)
        for first in range(0, len(tasks), per_batch):
            batch = tasks[first:first + per_batch]
            got = chunks.read_files([n for n, _dest in batch], chunks.limit())
            for nchunk, dest in batch:
                chunks.decode_into(nchunk, got.pop(nchunk), dest)

    def _check_chunk_files(self, first: int, stop: int) -> None:
        """Before a large allocation: every chunk file ``first:stop`` exists,
        and the first and last announce the size the metadata implies.

        A hostile ``meta/sizes`` can claim 10**12 items with a few chunk
        files, or ``meta/storage`` a chunklen of 10**8 for files of a few
        bytes; this refuses them before memory for them is asked for.

        Raises
        ------
        ChunkNotFoundError
            Naming the first missing chunk file.
        FormatError
            Naming a chunk file whose header announces another size.
        """
        store = self._store
        for nchunk in range(first, stop):
            if not store.exists(chunk_key(nchunk)):
                raise ChunkNotFoundError(
                    f"{store.path(chunk_key(nchunk))}: chunk file missing; meta/sizes promises "
                    f"{self.len} items in {self.nchunks + (1 if self._nleft else 0)} chunk files")
        for nchunk in {first, stop - 1} if stop > first else ():
            self._chunks.check_header(nchunk)   # the size each chunk file announces

    def _unpickle(self, nchunk: int):
        """The object of object chunk ``nchunk``.

        Raises
        ------
        FormatError
            When the chunk's bytes do not unpickle.
        """
        chunk_ = self._chunks[nchunk]
        try:
            return pickle.loads(chunk_.getudata())
        except BcolzStoreError:
            raise
        except Exception as err:  # unpickling damaged bytes raises anything
            where = self._chunks.path(nchunk) if hasattr(self._chunks, "path") else \
                f"chunk {nchunk}"
            raise FormatError(f"{where}: the pickled object cannot be read "
                              f"({type(err).__name__}: {err})") from err

    def _getitem_object(self, start, stop=None, step=None):
        if stop is None:
            if not self._allow_pickle:
                raise UnsafeDataError(
                    f"{self._rootdir}: object arrays are stored as pickles, and unpickling can "
                    f"run code; open with allow_pickle=True if you trust this dataset")
            return self._unpickle(start)
        objs = [self._getitem_object(i) for i in range(start, stop, step)]
        out = np.empty(len(objs), dtype=object)
        out[:] = objs
        return out

    def _positions(self, key) -> np.ndarray:
        """Integer positions (int64, in range) for an integer index array."""
        idx = np.asarray(key)
        if idx.dtype.kind == "u":
            if idx.size and idx.max() >= self.len:
                raise IndexError(f"index {int(idx.max())} out of range for length {self.len}")
            return idx.astype(np.int64)
        idx = idx.astype(np.int64)
        length = self.len
        if idx.size:
            low, high = int(idx.min()), int(idx.max())
            if low < -length or high >= length:
                bad = low if low < -length else high
                raise IndexError(f"index {bad} out of range for length {length}")
            idx = np.where(idx < 0, idx + length, idx)
        return idx

    def _gather(self, idx: np.ndarray) -> np.ndarray:
        """Atoms at positions ``idx`` (any order, repeats allowed)."""
        out = np.empty(idx.shape + self._dtype.shape, dtype=self._dtype.base)
        if idx.size == 0:
            return out
        flat = idx.ravel()
        flat_out = out.reshape((-1,) + self._dtype.shape)
        if self._dtype.kind == "O":
            for j, i in enumerate(flat):
                flat_out[j] = self._getitem_object(int(i))
            return out
        nchunk = flat // self._chunklen
        order = np.argsort(nchunk, kind="stable")
        sorted_chunks = nchunk[order]
        bounds = np.flatnonzero(np.diff(sorted_chunks)) + 1
        starts = np.concatenate(([0], bounds))
        stops = np.concatenate((bounds, [len(order)]))
        groups = {int(sorted_chunks[lo]): order[lo:hi] for lo, hi in zip(starts, stops)}
        for c, data in self._chunk_arrays(list(groups)):
            sel = groups[c]
            flat_out[sel] = data[flat[sel] - c * self._chunklen]
        return out

    def _chunk_arrays(self, nchunks: list):
        """Yield ``(nchunk, decompressed atoms)`` for each of ``nchunks`` (the
        leftover included), fetching the chunk files of a remote store
        concurrently, a bounded number at a time; arrays of fetched chunks are
        valid until the next one is yielded."""
        chunks = self._chunks
        nfull = len(chunks)
        remote = not chunks.memory and self._store.store.remote
        fetch = [n for n in nchunks if n < nfull and n not in self._cache] if remote else []
        if len(fetch) < 2:
            for n in nchunks:
                yield n, self._chunk_array(n)
            return
        per_batch = max(FETCH_BATCH_BYTES // max(self._chunksize, 1), 2)
        fetched = {}
        buffer = np.empty(self._chunklen, dtype=self._dtype)
        batches = iter(range(0, len(fetch), per_batch))
        for n in nchunks:
            if n in fetch and n not in fetched:
                first = next(batches)
                fetched = chunks.read_files(fetch[first:first + per_batch], chunks.limit())
            if n in fetched:
                chunks.decode_into(n, fetched.pop(n), buffer)
                yield n, buffer
            else:
                yield n, self._chunk_array(n)

    def _where_mask(self, mask) -> np.ndarray:
        """Values where a boolean mask (ndarray or carray) is true."""
        if len(mask) != self.len:
            raise IndexError("boolean array length must match len(self)")
        if isinstance(mask, carray):
            parts = []
            for start, block in mask._iter_blocks(self._chunklen):
                hits = np.flatnonzero(block)
                if hits.size:
                    parts.append(self._gather(hits + start))
            if parts:
                return np.concatenate(parts)
            return np.empty((0,) + self._dtype.shape, dtype=self._dtype.base)
        return self._gather(np.flatnonzero(np.asarray(mask)))

    def __getitem__(self, key):
        """x[key]: ints, slices (any step), tuples, int and boolean arrays, expressions.

        Opened in mode 'r', a carray serves reads from the committed state it
        opened (or last refreshed to); when a writer has since replaced files
        that a read needs, the read raises ``DatasetChangedError`` instead of
        mixing two states, and ``refresh()`` moves to the new state.

        Returns
        -------
        numpy scalar or numpy.ndarray
            An int gives one element (a Python int/bool for integer and
            boolean dtypes, as bcolz; a numpy scalar for other dtypes; an
            array for multidimensional atoms); anything else a new ndarray.

        Raises
        ------
        IndexError
            Out-of-range ints, a mask of the wrong length, non-integer arrays.
        ValueError
            An empty tuple, or a zero slice step.
        DatasetChangedError
            In mode 'r', when a writer committed since this reader opened
            (call ``refresh()``).
        """
        if isinstance(key, str):
            key = self._eval_expression(key, sys._getframe(1))
        return self._getitem(key)

    def _getitem(self, key):
        length = self.len
        if _is_int(key):
            i = int(key)
            if i < 0:
                i += length
            if not 0 <= i < length:
                raise IndexError("index out of range")
            if self._dtype.kind == "O":
                return self._getitem_object(i)
            nchunk, pos = divmod(i, self._chunklen)
            value = self._chunk_array(nchunk)[pos]
            if isinstance(value, np.ndarray):
                return value.copy()
            return value.item() if self._dtype.kind in PYTHON_SCALAR_KINDS else value
        if isinstance(key, slice):
            start, stop, step = key.indices(length)
            if self._dtype.kind == "O":
                return self._getitem_object(start, stop, step)
            if step == 1:
                return self._read_range(start, max(start, stop))
            if step > 1:
                n = len(range(start, stop, step))
                if n == 0:
                    return np.empty((0,) + self._dtype.shape, dtype=self._dtype.base)
                last = start + (n - 1) * step
                if n * 8 >= (last - start):  # dense: read the span once
                    return self._read_range(start, last + 1)[::step].copy()
                return self._gather(np.arange(start, last + 1, step, dtype=np.int64))
            positions = np.arange(start, stop, step, dtype=np.int64)
            return self._gather(positions)
        if isinstance(key, tuple):
            if len(key) == 0:
                raise ValueError("empty tuple not supported")
            if len(key) == 1:
                return self[key[0]]
            arr = self[key[0]]
            arr = arr[_within_rows(key)]
            return np.ascontiguousarray(arr) if isinstance(arr, np.ndarray) else arr
        if isinstance(key, carray):
            if key.dtype != np.bool_:
                key = key[:]
            else:
                return self._where_mask(key)
        if isinstance(key, (list, range)) or hasattr(key, "dtype") or hasattr(key, "__array__"):
            try:
                idx = np.asarray(key)
                if isinstance(key, list) and idx.dtype.kind == "f":
                    idx = idx.astype(np.int64)  # bcolz truncates float lists
            except (TypeError, ValueError) as err:
                raise IndexError("key cannot be converted to an array of indices") from err
            if idx.dtype == np.bool_:
                return self._where_mask(idx)
            if idx.size == 0:
                idx = idx.astype(np.int64)
            if idx.dtype.kind not in "iu":
                raise IndexError("arrays used as indices must be integer (or boolean)")
            return self._gather(self._positions(idx))
        raise IndexError(f"key not supported: {key!r}")

    def _eval_expression(self, expression: str, frame):
        from .query.eval import eval as _eval
        user_dict = dict(frame.f_globals)
        user_dict.update(frame.f_locals)
        result = _eval(expression, user_dict=user_dict)
        if result.dtype.type != np.bool_:
            raise IndexError("only boolean expressions supported")
        if len(result) != self.len:
            raise IndexError("boolean expression outcome must match len(self)")
        return result

    # --------------------------------------------------------------- writing

    def _to_ndarray(self, value, dtype, arrlen=None) -> np.ndarray:
        """Convert ``value`` to a contiguous array of ``dtype``; scalars become length 1."""
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
        if arrlen is not None and array.shape != (arrlen,) + self._dtype.shape:
            full = np.empty((arrlen,) + self._dtype.shape, dtype=self._dtype.base)
            try:
                full[...] = array.reshape(full.shape) if array.size == full.size else array
            except ValueError as err:
                raise ValueError(f"cannot assign values of shape {array.shape} to "
                                 f"{arrlen} items of shape {self._dtype.shape}") from err
            array = full
        return array

    def _store_obj(self, obj):
        data = pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
        self._chunks.append(chunk(data, self._dtype, self._cparams, _memory=self._store is None))

    def _append_array(self, arr: np.ndarray):
        """Append atoms (already of the right dtype and atom shape)."""
        cl = self._chunklen
        n = len(arr)
        pos = 0
        if self._nleft:
            take = min(cl - self._nleft, n)
            self._lastchunkarr[self._nleft:self._nleft + take] = arr[:take]
            self._nleft += take
            pos = take
            if self._nleft == cl:
                self._push_chunk(self._lastchunkarr)
                self._nleft = 0
        while n - pos >= cl:
            self._push_chunk(arr[pos:pos + cl])
            pos += cl
        rest = n - pos
        if rest:
            self._lastchunkarr[:rest] = arr[pos:]
            self._nleft = rest

    def _push_chunk(self, data: np.ndarray):
        new = self._new_chunk(data)
        self._chunks.append(new)
        self._cbytes += new.cbytes

    def append(self, array):
        """Append ``array`` (atoms, one atom, a scalar, or another carray).

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        ValueError
            If the data cannot be converted, or its trailing dimensions differ
            from the atom's.
        """
        if (type(array) is np.ndarray and array.dtype is self._dtype and array.ndim == 1
                and self._mode != "r" and array.dtype.kind != "O"):
            # The common case, as cheap as bcolz's: 1-d data of the carray's
            # own dtype that fits in the leftover is just copied there.
            end = self._nleft + array.shape[0]
            if end < self._chunklen:
                self._lastchunkarr[self._nleft:end] = array
                self._nleft = end
                return
        self._check_writable()
        prepared = self._prepare_append(array)
        with self._writing():
            self._append_prepared(prepared)

    def _prepare_append(self, array):
        """``array`` converted for :meth:`_append_prepared`, changing nothing.

        Raises
        ------
        ValueError
            As :meth:`append`.
        """
        if isinstance(array, carray):
            if array.dtype.kind == "O" or self._dtype.kind == "O":
                return array[:] if self._dtype.kind == "O" else \
                    self._prepare_append(array[:])
            if array.shape[1:] != self._dtype.shape:
                raise ValueError("array trailing dimensions do not match with self")
            return array
        if self._dtype.kind == "O":
            return self._to_ndarray(array, self._dtype)
        arr = self._to_ndarray(array, self._dtype.base) if self._safe else array
        if arr.shape == self._dtype.shape or (self._dtype.shape and arr.shape == (1,) and
                                              self._dtype.shape != (1,)):
            arr = arr.reshape((1,) + self._dtype.shape) if arr.size == int(
                np.prod(self._dtype.shape)) else arr
        if arr.shape[1:] != self._dtype.shape:
            raise ValueError("array trailing dimensions do not match with self")
        return arr

    def _append_prepared(self, prepared):
        """Append what :meth:`_prepare_append` returned."""
        if self._dtype.kind == "O":
            for obj in prepared:
                self._store_obj(obj)
        elif isinstance(prepared, carray):
            for block in prepared.iterblocks_(self._chunklen):
                self._append_array(self._to_ndarray(block, self._dtype.base))
        else:
            self._append_array(prepared)

    def trim(self, nitems):
        """Remove the trailing ``nitems`` atoms; a negative number grows the array.

        Raises
        ------
        TypeError
            If ``nitems`` is not a number.
        ValueError
            If ``nitems`` exceeds the length.
        ReadOnlyError
            In mode 'r'.
        """
        nitems = _as_nitems(nitems)
        if nitems > self.len:
            raise ValueError("`nitems` must be less than total length")
        if nitems <= 0:
            self.resize(self.len - nitems)
            return
        self._check_writable()
        with self._writing():
            self._trim(nitems)

    def _trim(self, nitems: int):
        if self._dtype.kind == "O":
            for _ in range(nitems):
                self._chunks.pop()
            self.flush()
            return
        newlen = self.len - nitems
        nfull, nleft = divmod(newlen, self._chunklen)
        if nfull == len(self._chunks):
            self._nleft = nleft
        else:
            carry = self._chunk_array(nfull)[:nleft].copy() if nleft else None
            while len(self._chunks) > nfull:
                popped = self._chunks.pop()
                self._cbytes -= popped.cbytes
            self._drop_cache()
            if nleft:
                self._lastchunkarr[:nleft] = carry
            self._nleft = nleft
        self.flush()

    def resize(self, nitems):
        """Make the length ``nitems``, growing with ``dflt`` or trimming.

        Raises
        ------
        TypeError
            If ``nitems`` is not a number.
        ValueError
            If ``nitems`` is negative.
        ReadOnlyError
            In mode 'r'.
        """
        nitems = _as_nitems(nitems)
        if nitems == self.len:
            if self._store is not None and self._mode != "r":
                self.flush()  # still one commit: it includes pending appends
            return
        if nitems < 0:
            raise ValueError("`nitems` cannot be negative")
        self._check_writable()
        with self._writing():
            if nitems < self.len:
                self._trim(self.len - nitems)
                return
            grow = nitems - self.len
            if self._dtype.kind == "O":
                for _ in range(grow):
                    self._store_obj(self._dflt[()])
            block = max(self._chunklen, 1)
            while grow and self._dtype.kind != "O":
                n = min(grow, block)
                filler = np.empty((n,) + self._dtype.shape, dtype=self._dtype.base)
                filler[...] = self._dflt
                self._append_array(filler)
                grow -= n
            self.flush()

    def __setitem__(self, key, value):
        """x[key] = value for ints, slices (any step), tuples, int/bool arrays, expressions.

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        IndexError
            Out-of-range ints, unsupported keys.
        ValueError
            A boolean mask of the wrong length, values that cannot broadcast.
        """
        self._check_writable()
        length = self.len
        if self._dtype.kind == "O":
            raise NotImplementedError("assignment into object carrays is not supported")
        if _is_int(key):
            i = int(key)
            if i < 0:
                i += length
            if not 0 <= i < length:
                raise IndexError("index out of range")
            self._set_slice(i, i + 1, 1, value)
        elif isinstance(key, slice):
            start, stop, step = key.indices(length)
            if step < 0:
                n = len(range(start, stop, step))
                if n == 0:
                    return
                vals = self._to_ndarray(value, self._dtype.base, arrlen=n)
                self._set_slice(start + (n - 1) * step, start + 1, -step, vals[::-1])
            else:
                self._set_slice(start, stop, step, value)
        elif isinstance(key, tuple):
            if len(key) == 0:
                raise ValueError("empty tuple not supported")
            if len(key) == 1:
                self[key[0]] = value
                return
            arr = self[key[0]]
            arr[_within_rows(key)] = value
            self[key[0]] = arr
        elif isinstance(key, str):
            self[self._eval_expression(key, sys._getframe(1))] = value
        else:
            if isinstance(key, carray):
                key = key[:]
            try:
                idx = np.asarray(key)
            except (TypeError, ValueError) as err:
                raise IndexError("key cannot be converted to an array of indices") from err
            if idx.dtype == np.bool_:
                if len(idx) != length:
                    raise ValueError("boolean array length must match len(self)")
                idx = np.flatnonzero(idx)
            elif idx.size == 0:
                return
            elif idx.dtype.kind not in "iu":
                raise IndexError("arrays used as indices must be of integer (or boolean) type")
            else:
                idx = self._positions(idx).ravel()
            self._set_positions(idx, value)
        if self._store is not None:
            self.flush()  # on disk each assignment is one commit

    def _set_slice(self, start, stop, step, value):
        n = len(range(start, stop, step))
        if n == 0:
            return
        vals = self._to_ndarray(value, self._dtype.base, arrlen=n)
        vals = vals.reshape((n,) + self._dtype.shape)
        with self._writing():
            self._set_slice_values(start, stop, step, n, vals)

    def _set_slice_values(self, start, stop, step, n, vals):
        cl = self._chunklen
        nfull = len(self._chunks)
        first = start // cl
        last = (start + (n - 1) * step) // cl
        done = 0
        for nchunk in range(first, last + 1):
            base = nchunk * cl
            lo = max(start, base)
            if (lo - start) % step:
                lo += step - (lo - start) % step
            hi = min(stop, base + cl)
            if lo >= hi:
                continue
            count = len(range(lo, hi, step))
            part = vals[done:done + count]
            done += count
            if nchunk == nfull:
                self._lastchunkarr[lo - base:hi - base:step] = part
                continue
            if step == 1 and lo == base and hi == base + cl:
                data = part
            else:
                data = self._chunk_array(nchunk).copy()
                data[lo - base:hi - base:step] = part
            self._replace_chunk(nchunk, data)

    def _set_positions(self, idx, value):
        vals = self._to_ndarray(value, self._dtype.base, arrlen=len(idx))
        if len(vals) != len(idx):
            raise ValueError(f"cannot assign {len(vals)} values to {len(idx)} positions")
        with self._writing():
            self._set_position_values(idx, vals)

    def _set_position_values(self, idx, vals):
        cl = self._chunklen
        nfull = len(self._chunks)
        nchunk = idx // cl
        order = np.argsort(nchunk, kind="stable")
        sorted_chunks = nchunk[order]
        bounds = np.flatnonzero(np.diff(sorted_chunks)) + 1
        for sel in np.split(order, bounds):
            if not sel.size:
                continue
            c = int(nchunk[sel[0]])
            local = idx[sel] - c * cl
            if c == nfull:
                self._lastchunkarr[local] = vals[sel]
            else:
                data = self._chunk_array(c).copy()
                data[local] = vals[sel]
                self._replace_chunk(c, data)

    def flush(self):
        """Write the leftover and ``meta/sizes`` of an on-disk carray.

        Raises
        ------
        ReadOnlyError
            In mode 'r' (nothing is written).
        """
        if self._store is None:
            return
        self._check_writable()
        with self._writing():
            self._flush()

    def _flush(self, commit=True):
        if self._dtype.kind != "O":
            nfull = len(self._chunks)
            if self._nleft:
                left = chunk(self._lastchunkarr[:self._nleft], self._dtype, self._cparams,
                             _memory=False)
                self._chunks.write(nfull, left)
            else:
                self._store.delete(chunk_key(nfull))
        self._store.set("meta/sizes", dump_sizes(SizesMeta(self.shape, self.nbytes,
                                                             self._cbytes)))
        if commit:
            self._store.commit()

    def purge(self):
        """Remove the on-disk data of this carray (no-op in memory).

        The removal of the files is one commit; a standalone carray's folder
        is then deleted, a ctable column's folder when its table commits.

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        DatasetNotFoundError
            If the rootdir is gone already.
        """
        if self._rootdir:
            self._check_writable()
            if self._store.state() != "folder":
                raise DatasetNotFoundError(f"{self._rootdir}: nothing to purge, directory is gone")
            self._store.remove_all()
            if self._given_store is None:
                with self._writing():
                    self._store.commit()
                self._store.journal.reset()
                self._store.store.remove_root()

    # ------------------------------------------------------------- iteration

    def _iter_blocks(self, blen=None, start=0, stop=None):
        """Yield ``(offset, block)`` over atoms start:stop in blocks of ``blen``."""
        length = self.len
        stop = length if stop is None else min(stop, length)
        blen = blen or self._chunklen
        pos = start
        while pos < stop:
            end = min(pos + blen, stop)
            yield pos, self[pos:end]
            pos = end

    def _iter_chunks(self):
        """Yield the decompressed chunks in order (the leftover last), as
        read-only arrays that are valid only until the next one is yielded:
        uncached chunks share one reused buffer, so a scan allocates nothing
        per chunk and stays in the CPU cache."""
        if self._dtype.kind == "O":
            yield from (block for _, block in self._iter_blocks())
            return
        buffer = None
        for nchunk in range(len(self._chunks)):
            with self._cache_lock:
                cached = self._cache.get(nchunk)
            if cached is None:
                if buffer is None:
                    buffer = np.empty(self._chunklen, dtype=self._dtype)
                buffer.flags.writeable = True
                self._chunks.read_into(nchunk, buffer)
                buffer.flags.writeable = False
                cached = buffer
            yield cached
        if self._nleft:
            yield self._lastchunkarr[:self._nleft]

    def iterblocks_(self, blen=None, start=0, stop=None):
        """Yield consecutive ndarray blocks of ``blen`` atoms."""
        for _, block in self._iter_blocks(blen, start, stop):
            yield block

    def __iter__(self):
        if self._iterator is not None:
            return self
        return self.iter()

    def __next__(self):
        if self._iterator is None:
            self._iterator = self._iter_gen(0, self.len, 1, None, 0)
        try:
            return next(self._iterator)
        except StopIteration:
            # An iterator view stays exhausted (as in bcolz); the carray
            # itself can be iterated again.
            self._iterator = iter(()) if self._is_iter_view else None
            raise

    next = __next__

    def _iterating(self, generator):
        """A view of this carray that iterates over ``generator``.

        Compatibility: bcolz's iterators are carray views, so ``iter(b)``,
        ``b.iter()``, ``b.where()`` and ``b.wheretrue()`` return objects with
        the carray API that also work with ``next()``.
        """
        view = self.view()
        view._iterator = generator
        view._is_iter_view = True
        return view

    def iter(self, start=0, stop=None, step=1, limit=None, skip=0, _next=False):
        """Iterate over elements ``start:stop:step``, skipping ``skip`` and yielding at most ``limit``.

        Returns
        -------
        carray
            A view that is also an iterator.

        Raises
        ------
        NotImplementedError
            For a step <= 0 (as bcolz).
        """
        if step is None:
            step = 1
        if step <= 0:
            raise NotImplementedError("step param can only be positive")
        start, stop, step = slice(start, stop, step).indices(self.len)
        return self._iterating(self._iter_gen(start, stop, step, limit, skip))

    def _iter_gen(self, start, stop, step, limit, skip):
        if limit is not None and limit <= 0:
            return
        emitted = 0
        skipped = 0
        blen = max(self._chunklen, 1)
        pos = start
        while pos < stop:
            end = min(stop, pos + blen * step)
            block = self[pos:end:step]
            if skipped < skip:
                drop = min(skip - skipped, len(block))
                skipped += drop
                block = block[drop:]
            items = block if self._dtype.shape or self._dtype.kind not in PYTHON_SCALAR_KINDS \
                else block.tolist()
            for item in items:
                yield item
                emitted += 1
                if limit is not None and emitted >= limit:
                    return
            pos = end
            if (pos - start) % step:
                pos += step - (pos - start) % step

    def wheretrue(self, limit=None, skip=0):
        """Iterate over the indices where this boolean carray is true.

        Raises
        ------
        ValueError
            If the carray is not boolean.
        NotImplementedError
            If it is multidimensional.
        """
        if self._dtype.base.type != np.bool_:
            raise ValueError("`self` is not an array of booleans")
        if self.ndim > 1:
            raise NotImplementedError("`self` is not unidimensional")
        return self._iterating(self._wheretrue_gen(limit, skip))

    def _wheretrue_gen(self, limit, skip):
        for positions in matching_positions(self, limit, skip, self._chunklen):
            yield from positions.tolist()

    def where(self, boolarr, limit=None, skip=0):
        """Iterate over the values where ``boolarr`` (ndarray or carray) is true.

        Raises
        ------
        NotImplementedError
            If this carray is multidimensional.
        ValueError
            If ``boolarr`` is not a boolean array of the same length.
        """
        if self.ndim > 1:
            raise NotImplementedError("`self` is not unidimensional")
        if not hasattr(boolarr, "dtype"):
            raise ValueError("`boolarr` is not an array")
        if boolarr.dtype.type != np.bool_:
            raise ValueError("`boolarr` is not an array of booleans")
        if len(boolarr) != self.len:
            raise ValueError("`boolarr` must be of the same length than ``self``")
        return self._iterating(self._where_gen(boolarr, limit, skip))

    def _where_gen(self, boolarr, limit, skip):
        blen = boolarr.chunklen if isinstance(boolarr, carray) else self._chunklen
        for positions in matching_positions(boolarr, limit, skip, blen):
            yield from self._gather(positions)

    # ------------------------------------------------------------- utilities

    def copy(self, **kwargs):
        """Return a copy, optionally with other constructor parameters (rootdir, cparams...).

        Compatibility: as in bcolz, parameters not given take the current
        defaults (cparams) and ``expectedlen`` defaults to ``len(self)``.

        Raises
        ------
        As :class:`carray`.
        """
        expectedlen = kwargs.pop("expectedlen", self.len)
        kwargs.setdefault("dflt", self._dflt)
        out = carray(np.empty((0,) + self._dtype.shape, dtype=self._dtype.base),
                     expectedlen=expectedlen, **kwargs)
        if self._dtype.kind == "O":
            for i in range(self.len):
                out._store_obj(self._getitem_object(i))
        else:
            for block in self.iterblocks_():
                out._append_array(block)
        if out.mode != "r":
            out.flush()
        return out

    def view(self):
        """A lightweight in-memory view sharing this carray's chunks.

        The view reads the same chunks; writes to either are not shown in the
        other once the leftover differs.
        """
        out = carray.__new__(carray)
        out.__dict__.update(self.__dict__)
        out._cache = OrderedDict()
        out._cache_nbytes = 0
        out._cache_lock = threading.Lock()
        out._iterator = None
        out._is_iter_view = False
        out._lastchunkarr = self._lastchunkarr.copy()
        return out

    def reshape(self, newshape):
        """Return a new carray with the same data and shape ``newshape`` (one -1 allowed).

        Raises
        ------
        ValueError
            If the sizes differ or more than one dimension is -1.
        ReadOnlyError
            On disk in mode 'r': an on-disk reshape replaces the dataset
            (as in bcolz), which a read-only carray must not do.
        """
        if self._rootdir:
            self._check_writable()
        if _is_int(newshape):
            newshape = (int(newshape),)
        newshape = tuple(int(n) for n in newshape)
        size = self.size
        if newshape.count(-1) > 1:
            raise ValueError("only one shape dimension can be -1")
        if -1 in newshape:
            pos = newshape.index(-1)
            other = int(np.prod(newshape[:pos] + newshape[pos + 1:]))
            newshape = newshape[:pos] + ((size // other) if other else 0,) + newshape[pos + 1:]
        if int(np.prod(newshape)) != size:
            raise ValueError("`newshape` is not compatible with the current one")
        if self._dtype.kind == "O" and len(newshape) > 1:
            raise ValueError("object carrays are one-dimensional")
        if not self._rootdir:
            return self._reshaped(newshape, None)
        # On disk the reshaped data replaces this dataset in one commit: it is
        # written into a folder inside the journal, whose files become the
        # commit's blobs; a killed writer leaves the old dataset whole.
        with self._writing():
            journal = self._store.journal
            build = journal.scratch_prefix("reshape")
            out = self._reshaped(newshape, self._store.store.child(build))
            new_files = out._store.journal.recorded()
            prefix = self._store.prefix
            self._store.remove_all()
            for key, digest in new_files.items():
                journal.stage_moved(prefix + key, build + key, digest)
            self._store.commit()
        self._read_meta()
        # Mode 'w' would empty the dataset on open: open it in 'a', then say 'w'.
        out = carray(rootdir=self._rootdir, mode="a" if self._mode == "w" else self._mode,
                     _store=self._given_store, allow_pickle=self._allow_pickle)
        out.mode = self._mode
        return out

    def _reshaped(self, newshape: tuple, rootdir):
        """A new carray of this data in ``newshape`` (in memory, or at ``rootdir``)."""
        out = carray(np.empty((0,) + newshape[1:], dtype=self._dtype.base), dtype=None,
                     cparams=self._cparams, expectedlen=newshape[0], rootdir=rootdir, mode="w")
        rowsize = int(np.prod(newshape[1:])) if len(newshape) > 1 else 1
        if self._dtype.kind == "O":
            for i in range(self.len):
                out._store_obj(self._getitem_object(i))
        else:
            buf = np.empty(0, dtype=self._dtype.base)
            for block in self.iterblocks_():
                buf = np.concatenate((buf, block.ravel()))
                nrows = len(buf) // rowsize
                if nrows:
                    out._append_array(buf[:nrows * rowsize].reshape((nrows,) + newshape[1:]))
                    buf = buf[nrows * rowsize:]
        if rootdir is not None:
            out.flush()
        return out

    def sum(self, dtype=None):
        """Sum of all elements (numpy's rules for the accumulator dtype).

        Raises
        ------
        TypeError
            For string dtypes.
        """
        if dtype is None:
            dtype = self._dtype.base
            if dtype.kind in "bi" and dtype.itemsize < np.dtype(np.int_).itemsize:
                dtype = np.dtype(np.int_)
            elif dtype.kind == "u" and dtype.itemsize < np.dtype(np.uint).itemsize:
                dtype = np.dtype(np.uint)
        else:
            dtype = np.dtype(dtype)
        if dtype.kind in "SUV":
            raise TypeError("cannot perform reduce with flexible type")
        result = np.zeros((), dtype=dtype)[()]
        for block in self._iter_chunks():
            result += block.sum(dtype=dtype)
        return result

    def __len__(self):
        return self.len

    def __sizeof__(self):
        return self._cbytes

    def __array__(self, dtype=None, copy=None):
        x = self[:]
        if dtype is not None and x.dtype != dtype:
            x = x.astype(dtype)
        return x

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()

    def __reduce__(self):
        if self._rootdir:
            return (_rebuild_carray, (None, self._rootdir))
        return (_rebuild_carray, (self[:], None))

    def __str__(self):
        from .printing import format_carray_str
        return format_carray_str(self)

    def __repr__(self):
        from .printing import format_carray_repr
        return format_carray_repr(self)


def _rebuild_carray(array, rootdir):
    if rootdir:
        return carray(rootdir=rootdir)
    return carray(array)
