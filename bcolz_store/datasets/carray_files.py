"""A carray's files in its store: ``meta/storage``, ``meta/sizes`` and the chunk
files, read into a chunk engine, and staged back for a commit.

::

    ROOT/meta/storage     dtype, cparams, chunklen, expectedlen, dflt
    ROOT/meta/sizes       shape [length, *atom], nbytes, cbytes
    ROOT/data/__N.blp     chunk N (the leftover is chunk ``length // chunklen``)

This module reads and writes bcolz's own carrays (fixed-size atoms, and
pickled objects).  The files of every other kind of carray are read and
written by its kind's ``files.py`` (bcolz_store/kinds/<kind>/files.py), a
:class:`KindFiles` in :data:`KIND_FILES`: opening, creating and committing
any carray finds its kind there.

Source: bcolz format v1.0 (seeds/001) and FORMAT-NOTES.md; the bytes of the
JSON files are those of :mod:`bcolz_store.format.meta`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..chunks.chunk import chunk_key
from ..cparams import cparams as cparams_cls
from ..chunks.engine import ChunkEngine
from ..format.index_meta import INDEX_META_KEY
from ..chunks.index import attach_index, index_problem as _index_problem, stage_index
from ..chunks.stats import attach_stats, stats_kind
from ..format.stats_meta import STATS_KEY
from ..chunks.objects import ObjectEngine
from ..errors import ChunkNotFoundError, DatasetNotFoundError, FormatError
from ..format.meta import (SizesMeta, StorageMeta, atom_dtype, dump_sizes, dump_storage,
                           load_json, load_sizes, load_storage, storage_kind)

__all__ = ["CarrayMeta", "KIND_FILES", "KindFiles", "MAX_CHUNK_BYTES", "appendable",
           "attach_chunk_stats", "check_end_files", "check_plain", "chunk_engine", "files_of_meta",
           "fixed_meta", "index_problem", "load_carray", "new_engine", "stage_sizes",
           "stage_stats", "stage_storage", "stats_engine", "stats_problem", "storage_entries",
           "stored_cparams"]


class KindFiles:
    """How the files of one kind of carray (bcolz_store/kinds/<kind>/files.py) are
    read and written.  A kind's files module appends one instance of a
    subclass to :data:`KIND_FILES` when imported (its ``kind.py`` imports it,
    and bcolz_store/kinds/installed.py every ``kind.py``), before any carray
    is opened.

    A kind whose carrays are its own says which they are with
    :meth:`of_data` (a ``meta/storage`` of its own layout, which
    :func:`~bcolz_store.format.meta.load_storage` cannot parse) or
    :meth:`of_storage` (one that it parses, with the kind's entry: a
    :class:`~bcolz_store.format.meta.StorageKind`), and :meth:`of_meta` and
    :meth:`of_engine`; it then has

    ``load(store, data, storage, sizes) -> CarrayMeta``
        The checked metadata of the carray in ``store`` whose ``meta/storage``
        holds ``data``; ``storage`` and ``sizes`` are the parsed
        ``meta/storage`` and ``meta/sizes`` for a kind claiming it by
        :meth:`of_storage`, None for one claiming it by :meth:`of_data`.
    ``engine(meta, store, cache_budget, new)``
        The engine of such a carray (a stored one unless ``new``) with the
        chunk statistics and index its kind keeps (:func:`attach_chunk_stats`).
    ``stage_storage(store, meta, name)``
        Stage its ``meta/storage``; ``name`` is the carray's folder name.

    A kind that only adds a key to the ``meta/storage`` of carrays of other
    layouts (bcolz ignores keys it does not know) sets :attr:`key` and has
    :meth:`entry` and :meth:`check`.
    """

    #: The key this kind adds to the ``meta/storage`` of carrays of any layout
    #: (with :meth:`entry` and :meth:`check`), or None.
    key = None
    #: Whether its carrays' items are in the chunk files ``data/__N`` of
    #: ``length // chunklen`` chunks alone (another program may append to them:
    #: datasets/foreign.py).
    chunked = False

    def of_data(self, data: bytes) -> bool:
        """Whether ``data``, a ``meta/storage``, is of this kind's own layout."""
        return False

    def of_storage(self, storage: StorageMeta) -> bool:
        """Whether the parsed ``meta/storage`` ``storage`` is of this kind."""
        return False

    def of_meta(self, meta) -> bool:
        """Whether a carray's metadata (a CarrayMeta) is of this kind."""
        return False

    def of_engine(self, engine) -> bool:
        """Whether ``engine`` is the engine of a carray of this kind."""
        return False

    def entry(self, meta):
        """The JSON value stored under :attr:`key` for the carray ``meta``, or None
        (no key)."""
        return None

    def check(self, meta, value, where: str) -> None:
        """Check the value stored under :attr:`key` against the carray ``meta``
        it was read with (raises FormatError naming ``where``)."""

    def stats_engine(self, engine):
        """The part of ``engine`` that keeps the carray's chunk statistics and
        index: the engine itself unless the kind says otherwise."""
        return engine

    def stage_parts(self, store, engine):
        """Stage the sizes of ``engine``'s parts that are not committed otherwise
        and return the part whose statistics :func:`stage_stats` stages: the
        engine's statistics keeper unless the kind says otherwise."""
        return self.stats_engine(engine)


#: The files of every kind of carray beyond bcolz's own (:class:`KindFiles`),
#: in the order the kinds were imported.
KIND_FILES: list = []


def _check_entries(store, meta, data: bytes) -> None:
    """Check the kinds' entries (:attr:`KindFiles.key`) stored in ``data``, and
    keep them in ``meta.entries`` (``{key: JSON value}``)."""
    entries = [e for e in KIND_FILES if e.key is not None and e.key.encode("ascii") in data]
    if entries:
        where = store.path("meta/storage")
        obj = load_json(data, where)
        found = {}
        for entry in entries:
            if entry.key in obj:
                entry.check(meta, obj[entry.key], where)
                found[entry.key] = obj[entry.key]
        meta.entries = found or None


def storage_entries(meta) -> dict | None:
    """The keys the kinds add to the ``meta/storage`` of ``meta`` (a CarrayMeta):
    ``{key: value}``, or None when none does."""
    entries = {e.key: v for e in KIND_FILES if e.key is not None
               and (v := e.entry(meta)) is not None}
    return entries or None


def files_of_meta(meta):
    """The :class:`KindFiles` of ``meta`` (a CarrayMeta); None for bcolz's own."""
    for kind in KIND_FILES:
        if kind.of_meta(meta):
            return kind
    return None


def _files_of_engine(engine):
    for kind in KIND_FILES:
        if kind.of_engine(engine):
            return kind
    return None


def stats_engine(engine):
    """The part of ``engine`` (a carray's) that keeps its chunk statistics and
    index (:meth:`KindFiles.stats_engine`)."""
    kind = _files_of_engine(engine)
    return engine if kind is None else kind.stats_engine(engine)


def appendable(meta) -> bool:
    """Whether the items of the carray ``meta`` are in its chunk files
    ``data/__N`` alone, so that another program may append chunk files
    (bcolz's fixed-size atoms; pickled objects are not; a kind's
    :attr:`KindFiles.chunked`)."""
    kind = files_of_meta(meta)
    if kind is not None:
        return kind.chunked
    return meta.atom.kind != "O"

# Blosc-1 compresses at most 2 GB per chunk; a larger chunk in meta is a lie.
MAX_CHUNK_BYTES = 2 ** 31 - 16


@dataclass
class CarrayMeta:
    """What a carray's metadata says.

    Every carray has these: ``atom`` is the dtype of one item with its
    sub-array shape (the dtype reads return); ``dflt`` a 0-d array of
    ``atom.base``; ``length`` in items, ``cbytes`` in bytes; ``nbytes`` the
    items' bytes where a kind's ``meta/sizes`` says them (0 for bcolz's
    layout, whose items are counted).  ``kind`` holds what a kind beyond
    bcolz's own layout keeps of the carray (its ``files.py``,
    :class:`KindFiles`): an object of a class its folder
    bcolz_store/kinds/<kind>/ defines, by which the kind recognises its
    carrays (a vlen carray's VlenMeta, a nullable carray's entry and
    validity, a list carray's type and layout...; docs/kinds.md lists
    them), or None for a carray of bcolz's layout.  ``entries`` holds the
    keys kinds add to the ``meta/storage`` of a carray of bcolz's layout
    (:attr:`KindFiles.key`), as read (``{key: JSON value}``), or as a new
    carray's kind set them.
    """

    atom: np.dtype
    cparams: object
    chunklen: int
    expectedlen: int
    dflt: np.ndarray
    length: int = 0
    cbytes: int = 0
    nbytes: int = 0
    #: The metadata of a kind beyond bcolz's layout: an object its folder
    #: defines (None: bcolz's own layout).
    kind: object = None
    entries: dict | None = None                 # kinds' keys on a carray of bcolz's layout


def load_carray(store) -> CarrayMeta:
    """Read and check the metadata of the carray in ``store`` (a DatasetStore).

    Raises
    ------
    DatasetNotFoundError
        If ``meta/sizes`` or ``meta/storage`` is missing.
    FormatError
        If they are malformed, disagree, name a compressor this Blosc build
        lacks, or imply chunks over Blosc's 2 GB.
    ChunkNotFoundError
        On a local store, if the first or last chunk file the sizes imply is
        missing (two stats; remote stores find out when reading).
    """
    for key in ("meta/sizes", "meta/storage"):
        if not store.exists(key):
            raise DatasetNotFoundError(f"{store.path(key)}: missing, {store.root} is not a "
                                       f"carray")
    data = store.get("meta/storage")
    for kind in KIND_FILES:
        if kind.of_data(data):
            return kind.load(store, data, None, None)
    sizes = load_sizes(store.get("meta/sizes"), store.path("meta/sizes"))
    storage = load_storage(data, store.path("meta/storage"))
    for kind in KIND_FILES:
        if kind.of_storage(storage):
            return kind.load(store, data, storage, sizes)
    meta = fixed_meta(store, sizes, storage)
    check_plain(store, meta, data)
    return meta


def check_plain(store, meta: CarrayMeta, data: bytes) -> None:
    """Check what a carray of bcolz's layout (``meta``, its ``meta/storage``
    ``data``) keeps beside its metadata: the kinds' entries in ``data``
    (:attr:`KindFiles.key`) and, on a local store, its first and last chunk
    files.

    Raises
    ------
    FormatError
        A kind's entry the carray contradicts (:meth:`KindFiles.check`).
    ChunkNotFoundError
        As :func:`check_end_files`.
    """
    _check_entries(store, meta, data)
    pickled = storage_kind(meta.atom) == "pickle"
    check_end_files(store, meta, meta.length if pickled else -(-meta.length // meta.chunklen),
                     chunk_key)


def fixed_meta(store, sizes: SizesMeta, storage: StorageMeta,
                one_d: str | None = None) -> CarrayMeta:
    """The metadata of a carray of fixed-size atoms (or pickled objects), checked:
    one-dimensional for objects (and for ``one_d``, a kind of carray named in
    the message), known cparams, chunks within Blosc's limit.

    Raises
    ------
    FormatError
        Naming ``meta/sizes`` or ``meta/storage``: as :func:`~.meta.atom_dtype`
        and :func:`stored_cparams`, a shape of more than one dimension where
        one is due, or chunks over Blosc's 2 GB.
    """
    atom = atom_dtype(storage.dtype, sizes.shape[1:], store.path("meta/sizes"))
    pickled = storage_kind(atom) == "pickle"
    if (pickled or one_d) and len(sizes.shape) > 1:
        raise FormatError(f"{store.path('meta/sizes')}: shape {list(sizes.shape)} for "
                          f"{one_d or 'an object'} carray, which is one-dimensional")
    cparams = stored_cparams(store, storage)
    if not pickled and storage.chunklen * atom.itemsize > MAX_CHUNK_BYTES:
        raise FormatError(f"{store.path('meta/storage')}: chunklen {storage.chunklen} of "
                          f"{atom.itemsize}-byte atoms exceeds Blosc's {MAX_CHUNK_BYTES} bytes")
    return CarrayMeta(atom, cparams, storage.chunklen, storage.expectedlen, storage.dflt,
                      sizes.shape[0], sizes.cbytes)


def check_end_files(store, meta: CarrayMeta, nfiles: int, key) -> None:
    """On a local store, that the first and last of the ``nfiles`` chunk files
    (``key(n)``) exist: two stats, so that a missing chunk file is told at
    once (remote stores find out when reading).

    Raises
    ------
    ChunkNotFoundError
        Naming the missing chunk file.
    """
    if nfiles and not store.store.remote:
        for n in (0, nfiles - 1):
            if not store.exists(key(n)):
                raise ChunkNotFoundError(
                    f"{store.path(key(n))}: chunk file missing; meta/sizes promises "
                    f"{meta.length} items in {nfiles} chunk files")


def stored_cparams(store, storage: StorageMeta):
    """The carray's cparams from ``meta/storage``.

    Raises
    ------
    FormatError
        Naming ``meta/storage``, for a compressor this Blosc build lacks or
        settings out of range.
    """
    try:
        return cparams_cls(**storage.cparams)
    except ValueError as err:   # a compressor this Blosc build lacks
        raise FormatError(f"{store.path('meta/storage')}: {err}") from err


def attach_chunk_stats(engine, kind, meta: CarrayMeta, store, new: bool) -> None:
    """Give ``engine`` its chunk statistics of ``kind`` (``meta/stats``,
    chunks/stats.py; None: none) and, a stored carray's, its index
    (chunks/index.py)."""
    attach_stats(engine, kind, meta.chunklen, store, meta.length, new)
    if not new and kind is not None:
        attach_index(engine, store, kind, meta.length)


def new_engine(meta: CarrayMeta, store, cache_budget: int, new: bool = False):
    """The engine of a carray described by ``meta`` (a stored one unless ``new``),
    with its chunk statistics (``meta/stats``, chunks/stats.py) and index when
    its kind has them: a kind's own (:class:`KindFiles`), or bcolz's.

    The leftover of a stored carray is read from its chunk file when first
    needed, so opening a table reads no chunk at all.
    """
    kind = files_of_meta(meta)
    if kind is not None:
        return kind.engine(meta, store, cache_budget, new)
    if storage_kind(meta.atom) == "pickle":
        return ObjectEngine(meta.cparams, meta.chunklen, store,
                            0 if new else meta.length, 0 if new else meta.cbytes)
    engine = chunk_engine(meta, store, cache_budget, new)
    attach_chunk_stats(engine, stats_kind(meta.atom), meta, store, new)
    return engine


def chunk_engine(meta: CarrayMeta, store, cache_budget: int, new: bool,
                 atom=None) -> ChunkEngine:
    """The ChunkEngine of the carray ``meta`` (a stored one, of its length and
    cbytes, unless ``new``), of atoms ``atom`` (default ``meta.atom``: a
    decimal's or categorical's stored items are of another dtype)."""
    atom = meta.atom if atom is None else atom
    if new:
        return ChunkEngine(atom, meta.cparams, meta.chunklen, store, cache_budget=cache_budget)
    nfull, nleft = divmod(meta.length, meta.chunklen)
    return ChunkEngine(atom, meta.cparams, meta.chunklen, store, nfull, nleft, meta.cbytes,
                       cache_budget=cache_budget)


def stage_stats(store, engine) -> None:
    """Stage ``meta/stats`` for the engine's chunks as they are now (chunks/stats.py)
    and bring its index up to date (chunks/index.py); nothing for a kind
    without statistics.  A kind's engine stages its other parts' sizes first
    (:meth:`KindFiles.stage_parts`)."""
    kind = _files_of_engine(engine)
    engine = engine if kind is None else kind.stage_parts(store, engine)
    stats = getattr(engine, "stats", None)
    if stats is not None:
        stage_index(store, engine, stats)
        stats.stage(store, engine)
        stats.settled()


def stats_problem(store):
    """Why the carray in ``store`` (a DatasetStore) has a ``meta/stats`` that does
    not describe its items: damaged, of another carray, or stale (a chunk
    whose statistics differ from those of its items, read); None when it
    describes them, or there is none.

    Raises
    ------
    BcolzStoreError
        As reading the carray (its metadata or a chunk file is damaged).
    """
    if not store.exists(STATS_KEY):
        return None
    meta = load_carray(store)
    engine = stats_engine(new_engine(meta, store, cache_budget=0))
    if getattr(engine, "stats", None) is None:
        return f"{store.path(STATS_KEY)}: a carray of {meta.atom} keeps no statistics"
    why = engine.stats.recompute(engine)
    if why is None or why.startswith(store.path(STATS_KEY)):
        return why
    return f"{store.path(STATS_KEY)}: {why}"


def index_problem(store):
    """Why the carray in ``store`` (a DatasetStore) has an index (``index/meta``)
    that does not describe its items (chunks/index.py), or None.

    Raises
    ------
    BcolzStoreError
        As reading the carray.
    """
    if not store.exists(INDEX_META_KEY):
        return None
    meta = load_carray(store)
    engine = stats_engine(new_engine(meta, store, cache_budget=0))
    if getattr(engine, "index", None) is None:
        return f"{store.path(INDEX_META_KEY)}: a carray of {meta.atom} keeps no index"
    return _index_problem(store, engine)


def stage_storage(store, meta: CarrayMeta) -> None:
    """Stage ``meta/storage`` (bcolz's bytes) for the next commit: a kind's own
    (:class:`KindFiles`, told the carray's folder name, under which a ctable
    column is its column's name) or bcolz's, with the keys the kinds add."""
    kind = files_of_meta(meta)
    if kind is not None:
        name = str(store.root).rstrip("/").replace("\\", "/").rpartition("/")[2] or "carray"
        kind.stage_storage(store, meta, name)
        return
    store.set("meta/storage", dump_storage(StorageMeta(
        meta.atom.base, meta.cparams.to_dict(), meta.chunklen, meta.expectedlen, meta.dflt,
        entries=storage_entries(meta))))


def stage_sizes(store, shape: tuple, nbytes: int, cbytes: int) -> None:
    """Stage ``meta/sizes`` (bcolz's bytes) for the next commit."""
    store.set("meta/sizes", dump_sizes(SizesMeta(shape, nbytes, cbytes)))
