"""carray: a compressed, chunked, enlargeable array in memory or in a store.

Data is split in chunks of ``chunklen`` atoms, each compressed with Blosc.  The
trailing partial chunk (the *leftover*) stays uncompressed in memory until
``flush()``, when it is written as the next numbered chunk file holding only the
leftover atoms, and ``meta/sizes`` is rewritten.

This module is bcolz's API on top of two layers: the chunk engine
(:mod:`bcolz_store.chunks.engine`, or :mod:`~bcolz_store.chunks.objects` for
pickled objects) holds the chunks, the leftover and the cache; the dataset
layout (:mod:`bcolz_store.datasets.carray_files`) reads and stages the files
through the store's commit protocol.  Iteration, queries and the utilities
(``copy``, ``view``, ``reshape``, ``sum``) are in :mod:`bcolz_store.carray_ops`.

Source: bcolz format v1.0 (seeds/001) and FORMAT-NOTES.md.
"""

from __future__ import annotations

import contextlib

import numpy as np

from . import attrs as _attrs
from . import handles as _handles
from .carray_edit import CarrayEdits
from .carray_meta import new_fixed_meta
from .category_type import CodesView, category, category_of, category_request, new_category_meta
from .carray_ops import CarrayOps
from .carray_read import CarrayReads
from .chunks.chunk import chunk
from .cparams import cparams as cparams_cls
from .datasets.carray_files import load_carray, new_engine, stage_storage
from .defaults import check_cache_budget, defaults
from .errors import BcolzStoreError, DatasetExistsError, DatasetNotFoundError, ReadOnlyError
from .indexing import calc_chunklen, matching_positions
from .options import OpenOptions
from .storage import locking as _locking
from .storage.dataset import DatasetStore
from .storage.urls import describe_rootdir, open_store
from .vlen_type import new_vlen_meta, vlen_of, vlen_request

__all__ = ["calc_chunklen", "carray", "chunk", "matching_positions"]


class carray(CarrayReads, CarrayEdits, CarrayOps):
    """carray(array=None, cparams=None, dtype=None, dflt=None, expectedlen=None, chunklen=None, rootdir=None, safe=True, mode='a')

    A compressed, enlargeable array, in memory or on disk.

    Parameters
    ----------
    array : array_like, optional
        Initial data; its first dimension is the length, the others form the
        atom.  Required unless opening an existing ``rootdir``.
    cparams : cparams or dict, optional
        Compression parameters (default: ``bcolz_store.defaults.cparams``).
    dtype : numpy dtype, str or vlen, optional
        Force this dtype instead of the one of ``array``.  ``'vlen-str'``,
        ``'vlen-bytes'``, a ``StringDType`` or a :class:`~bcolz_store.vlen`
        (zstd level, dictionary, missing items) make a carray of str or bytes
        items of any length, as does a ``StringDType`` ``array``; such a
        carray is not readable by bcolz (see docs/strings.md).
    dflt : scalar, optional
        Fill value used when the array grows (``resize``); default zero
        (vlen: an empty item; categorical: a missing item, and otherwise
        one of the categories, stored as its code).
    expectedlen : int, optional
        Expected final length; decides ``chunklen`` (default ``len(array)``).
    chunklen : int, optional
        Atoms per chunk; overrides ``expectedlen``'s choice.
    rootdir : str, os.PathLike or Store, optional
        Where a stored carray lives: a folder, a URL (``s3://bucket/x.bcolz``
        and any other fsspec URL), a ``.zip`` pack (read-only) or a
        :class:`~bcolz_store.storage.base.Store`.  None keeps it in memory.
    safe : bool, default True
        Convert and check appended data.
    mode : {'a', 'r', 'w'}, default 'a'
        'r' read-only, 'a' read and append, 'w' create anew (replacing what is
        at ``rootdir`` in the creation's one commit).
    verify : bool, default False
        Check every file read against the checksum file (keyword only).
    allow_pickle : bool, default False
        Allow reading object carrays (pickles) from a store (keyword only).
    lock : bool or float, default False
        Hold the dataset's writer lock (local folders; keyword only).
    storage_options : dict, optional
        fsspec options for a URL ``rootdir`` (keyword only).
    consolidated : bool, optional
        Read the metadata from the consolidated metadata file (default: for
        remote stores; keyword only).

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
                 options=None, _store=None, _dataset=None, _lock=None):
        if mode not in ("r", "w", "a"):
            raise ValueError("mode should be 'r', 'w' or 'a'")
        if options is None:
            options = OpenOptions(verify=verify, allow_pickle=allow_pickle, lock=lock,
                                  storage_options=storage_options, consolidated=consolidated)
        verify, allow_pickle, lock = options.verify, options.allow_pickle, options.lock
        storage_options, consolidated = options.storage_options, options.consolidated
        self._options = options
        self._rootdir = describe_rootdir(rootdir) if rootdir is not None else None
        self._root_arg = rootdir
        self._storage_options = storage_options
        self._consolidated = consolidated
        self._mode = mode
        self._safe = safe
        self._verify = verify
        self._allow_pickle = allow_pickle or array is not None
        self._allow_pickle_given = bool(allow_pickle)   # what a pickled handle carries
        self._given_store = _store
        self._store = None
        self._attrs = None
        self._iterator = None
        self._is_iter_view = False
        self._unstaged = False       # appended items not yet staged (see _stage_pending)
        # (``_lock``: the writer lock open() took before loading the state)
        wanted = _lock if _lock is not None else (lock if _store is None else False)
        self._lock = _locking.acquire(rootdir, wanted, storage_options=storage_options)
        if array is not None:
            self._create_or_clean_up(array, cparams, dtype, dflt, expectedlen, chunklen)
            new = True
        elif self._rootdir is not None:
            self._open(_dataset)
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
            self._own_dataset()
        if not new and mode == "w":
            self.resize(0)

    # ------------------------------------------------------------ creating

    def _new_store(self, readonly: bool = False) -> DatasetStore:
        """The view of this carray's own store (a standalone carray)."""
        return DatasetStore(open_store(self._root_arg, readonly, self._storage_options),
                            readonly=readonly, verify=self._verify,
                            consolidated=self._consolidated, locked=self._lock)

    def _create_or_clean_up(self, *args):
        """:meth:`_create`; on failure, nothing of the new dataset stays stored."""
        self._existed = None
        try:
            self._create(*args)
        except BaseException:
            store = self._store
            if store is not None and self._given_store is None:
                store.discard()
                if self._existed == "missing":
                    with contextlib.suppress(OSError, BcolzStoreError):
                        store.store.remove_root()
            raise

    def _commit_creation(self):
        self._store.note("create")
        self._store.commit()     # a ctable column: deferred to the table's batch
        if self._given_store is None and self._existed == "folder":
            self._store.store.prune_empty_folders(keep=("data", "meta"))

    def _writing(self, op=None):
        """The context of one write (``op``: what it does, for the commit
        record): on any failure, the carray (and, for a ctable column, its
        whole table) returns to its last committed state (see
        :meth:`bcolz_store.storage.dataset.DatasetStore.operation`)."""
        if self._store is None:
            return contextlib.nullcontext()
        return self._store.operation(op)

    def _create(self, array, cparams, dtype, dflt, expectedlen, chunklen):
        if cparams is None or isinstance(cparams, (cparams_cls, dict)):
            cparams = cparams_cls.from_any(cparams)
        else:
            raise ValueError("`cparams` param must be an instance of `cparams` class")
        request = category_request(array, dtype) or vlen_request(array, dtype)
        if isinstance(request, category):     # codes + categories (category_type.py)
            self._meta, array_ = new_category_meta(request, array, cparams, expectedlen,
                                                   chunklen, dflt)
        elif request is not None:     # items of any length (vlen_type.py)
            self._meta, array_ = new_vlen_meta(request, array, cparams, dflt, expectedlen,
                                               chunklen)
        else:
            self._meta, array_ = new_fixed_meta(array, cparams, dtype, dflt, expectedlen,
                                                chunklen, self._to_ndarray)
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
            stage_storage(self._store, self._meta)
        self._engine = new_engine(self._meta, self._store, defaults.cache_budget, new=True)
        if isinstance(array, carray):
            for block in array._copy_blocks():
                self._engine.append(self._to_ndarray(block, self._meta.atom.base))
        else:
            self._engine.append(array_)
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
            store.recover()       # finish a commit left by a killed writer
        store.remove_all()

    # ------------------------------------------------------------ opening

    def _open(self, dataset=None):
        if self._given_store is not None:
            self._store = self._given_store
            self._read_meta()
            return
        if dataset is not None:         # open() prepared it (and loaded the state)
            self._store = dataset
        else:
            self._store = self._new_store(readonly=self._mode == "r")
            if self._store.state() != "folder":
                raise DatasetNotFoundError(f"{self._rootdir}: no carray here (directory "
                                           f"does not exist)")
        if self._store.store.readonly and self._mode == "a":   # a pack: read-only, and says so
            self._mode = "r"
            self._store.readonly = True
        self._load_committed(just_loaded=dataset is not None)

    def _load_committed(self, just_loaded=False):
        """Finish or discard an interrupted commit, then load the committed state
        (``just_loaded``: ``open()`` has loaded it, read it as it is).

        In mode 'r' this retries until no writer committed during the load, so
        the carray holds one committed state (see
        :meth:`~bcolz_store.storage.dataset.DatasetStore.read_consistently`).
        """
        # One committed state, even while a writer commits: a writer too reads
        # again when a commit began meanwhile, rather than take the files of
        # two states for damage.
        self._store.read_consistently(self._read_meta, just_loaded)
        self._store.warn_if_unverifiable()

    def _read_meta(self):
        """Load the committed state (metadata, attrs and chunks) from the store."""
        store = self._store
        if self._attrs is not None and self._attrs._store is store:
            self._attrs.reload()          # in place: callers may hold the attrs object
        else:
            self._attrs = _attrs.attrs(self._rootdir, self._mode, _new=False, _store=store)
        budget = self._engine.cache_budget if hasattr(self, "_engine") else \
            defaults.cache_budget
        self._meta = load_carray(store)
        self._engine = new_engine(self._meta, store, budget)
        if self._mode != "r":       # one committed state: nothing read lazily later
            self._engine.load_for_writing()
        self._unstaged = False
        self._committed_len = self.len

    def refresh(self):
        """Re-read the committed state, to see other writers' commits.

        In modes 'a'/'w' pending appends are committed first (``flush``).  Does
        nothing for an in-memory carray.

        Raises
        ------
        FormatError, DatasetNotFoundError
            If the dataset has become unreadable.
        """
        if self._store is None:
            return
        if self._store.broken:    # a failed write: back to the committed state
            self._store.reload()
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

    # ------------------------------------------------------------ properties

    @property
    def _dtype(self) -> np.dtype:
        return self._meta.atom

    @property
    def _chunklen(self) -> int:
        return self._meta.chunklen

    @property
    def _cparams(self):
        return self._meta.cparams

    @property
    def _dflt(self) -> np.ndarray:
        meta = self._meta
        if meta.dflt_code < 0:
            return meta.dflt
        out = np.empty((), dtype=meta.atom)       # a categorical's: its code's category
        out[()] = self._engine.lookup()[meta.dflt_code]
        return out

    @property
    def _lastchunkarr(self) -> np.ndarray:
        return self._engine.leftover

    @property
    def vlen(self):
        """The :class:`~bcolz_store.vlen` type of a carray of variable-length
        items (kind, zstd level, dictionary, nullable), or of the items of a
        categorical carray; None for other carrays."""
        return vlen_of(self._meta.vlen)

    @property
    def category(self):
        """The :class:`~bcolz_store.category` of a categorical carray (its
        categories and ``ordered``); None for other carrays."""
        return category_of(self._meta, self._engine)

    @property
    def codes(self):
        """The codes of a categorical carray, read by ``codes[key]`` (-1 for a
        missing item).

        Raises
        ------
        TypeError
            For a carray that is not categorical.
        """
        if self._meta.categorical is None:
            raise TypeError("only categorical carrays have codes")
        return CodesView(self._engine, self.len)

    @property
    def expectedlen(self) -> int:
        """The expected length that decided ``chunklen``."""
        return self._meta.expectedlen

    @expectedlen.setter
    def expectedlen(self, value) -> None:
        self._meta.expectedlen = int(value)

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
        return self._engine.cache_budget

    @cache_budget.setter
    def cache_budget(self, value) -> None:
        self._engine.set_cache_budget(check_cache_budget(value))

    @property
    def _cache(self):
        return self._engine.cache

    @property
    def _cache_nbytes(self) -> int:
        return self._engine.cache_nbytes

    @property
    def cbytes(self) -> int:
        """Compressed size in bytes (the leftover counts as a full uncompressed chunk)."""
        return self._engine.cbytes

    @property
    def chunklen(self) -> int:
        """Atoms per chunk."""
        return self._meta.chunklen

    @property
    def chunks(self):
        """The sequence of full, compressed chunks."""
        return self._engine.chunks

    @property
    def cparams(self):
        """The compression parameters (a :class:`cparams`)."""
        return self._meta.cparams

    @property
    def dflt(self) -> np.ndarray:
        """The fill value for growing, a 0-d array of ``dtype``."""
        return self._dflt

    @property
    def dtype(self) -> np.dtype:
        """dtype of the elements (the atom's base dtype, numpy's convention)."""
        return self._meta.atom.base

    @property
    def len(self) -> int:
        """Number of atoms (the leading dimension)."""
        return self._engine.length

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
        if self._meta.atom.kind == "O" or self._meta.vlen is not None:
            return self._engine.nbytes
        return self.len * self._meta.atom.itemsize

    @property
    def nchunks(self) -> int:
        """Number of full (compressed) chunks."""
        return self._engine.nchunks

    @property
    def leftover(self) -> int:
        """Bytes held in the uncompressed leftover buffer."""
        return self._engine.nleft * self._meta.atom.itemsize

    leftover_bytes = leftover

    @property
    def nleftover(self) -> int:
        """Atoms held in the leftover buffer."""
        return self._engine.nleft

    leftover_elements = nleftover

    @property
    def leftover_array(self) -> np.ndarray:
        """The leftover buffer, shape (chunklen, *atom)."""
        return self._engine.leftover

    @property
    def leftover_ptr(self) -> int:
        """Address of the leftover buffer."""
        return self._engine.leftover.ctypes.data

    @property
    def partitions(self) -> list:
        """(start, stop) of every full chunk."""
        cl = self._meta.chunklen
        return [(i * cl, (i + 1) * cl) for i in range(self.nchunks)]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def rootdir(self):
        """Where a stored carray lives (None in memory)."""
        return self._rootdir

    @property
    def dataset(self):
        """The :class:`~bcolz_store.storage.dataset.DatasetStore` a stored carray
        reads and commits through (a ctable column's shares the table's
        commits); None in memory."""
        return self._store

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
        self._own_dataset()
        self._engine.store = self._store
        self._engine.chunks.store = self._store
        self._attrs._store = self._store
        self._attrs.rootdir = self._rootdir

    @property
    def safe(self) -> bool:
        return self._safe

    @property
    def shape(self) -> tuple:
        return (int(self.len),) + self._meta.atom.shape

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def cratio(self) -> float:
        """nbytes / cbytes."""
        cbytes = self._engine.cbytes
        return self.nbytes / float(cbytes) if cbytes else float("nan")

    def free_cachemem(self):
        """Release cached decompressed chunks."""
        self._engine.free_cachemem()

    # ------------------------------------------------------------ checks

    def _check_writable(self):
        if self._mode == "r":
            raise ReadOnlyError(f"cannot modify data because mode is '{self._mode}'")

    def __reduce__(self):
        # Stored: its rootdir, reopened in mode 'r'; in memory: its chunks.
        return _handles.reduce_carray(self)

    def __dask_tokenize__(self):
        return _handles.dask_token(self)

    def purge(self):
        """Remove the stored data of this carray (no-op in memory).

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
                self._store.forget_all()
                self._store.store.remove_root()


def _rebuild_carray(array, rootdir):     # pickles of earlier versions: a reader, never a writer
    if rootdir:
        return _handles.open_stored(carray, rootdir, None, False, False, None)
    return carray(array)

