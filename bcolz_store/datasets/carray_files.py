"""A carray's files in its store: ``meta/storage``, ``meta/sizes`` and the chunk
files, read into a chunk engine, and staged back for a commit.

::

    ROOT/meta/storage     dtype, cparams, chunklen, expectedlen, dflt
    ROOT/meta/sizes       shape [length, *atom], nbytes, cbytes
    ROOT/data/__N.blp     chunk N (the leftover is chunk ``length // chunklen``)

A carray of variable-length items has ``data/__N.vlen`` chunk files instead
and a ``vlen`` entry in ``meta/storage`` (kinds/vlen/meta.py).  A nullable
carray has a ``nullable`` entry and its validity, a carray of bool, in
``ROOT/valid`` (kinds/nullable/meta.py).

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
from ..kinds.decimal.engine import DecimalEngine
from ..chunks.kind_stats import attach_kind_stats, kind_stats_kind
from ..chunks.stats import attach_stats, stats_kind
from ..format.stats_meta import STATS_KEY
from ..chunks.objects import ObjectEngine
from ..kinds.category.engine import CategoryEngine
from ..kinds.nullable.engine import NullableEngine
from ..kinds.list.engine import ListEngine
from ..kinds.vlen.chunk import dictionary_id
from ..kinds.vlen.chunk_files import vlen_chunk_key
from ..kinds.vlen.engine import VlenEngine
from ..errors import ChunkNotFoundError, CodecError, DatasetNotFoundError, FormatError
from ..format.meta import (SizesMeta, StorageMeta, atom_dtype, dump_sizes, dump_storage,
                           load_json, load_sizes, load_storage, storage_kind)
from ..kinds.decimal.meta import DecimalMeta
from ..kinds.nullable.meta import VALIDITY_DIR, NullableMeta
from ..kinds.category.meta import CATEGORIES_DIR, CategoryMeta, category_dtype_text
from ..kinds.list.meta import list_dtype_text
from ..kinds.vlen.meta import VlenMeta, vlen_dtype_text, vlen_result_dtype

__all__ = ["COMPOSITE_KINDS", "CarrayMeta", "MAX_CHUNK_BYTES", "MAX_VLEN_CHUNKLEN",
           "STORAGE_ENTRIES", "kind_of", "load_carray", "new_engine",
           "new_validity_meta", "stage_sizes", "stage_stats", "stage_storage", "stats_problem"]

# Kinds whose files another module of this package reads and writes (decimal
# and struct carrays: kinds/decimal/files.py), each an object with
# ``matches(storage_bytes)``, ``owns(composite)``, ``load(store, storage_bytes)``,
# ``engine(meta, store, cache_budget, new)`` and ``stage_storage(store, meta, name)``.
COMPOSITE_KINDS = []

# Keys that a column kind (bcolz_store/kinds/) adds to the ``meta/storage`` of a
# carray of bcolz's own layout (bcolz ignores keys it does not know), each an
# object with ``key``, ``entry(meta)`` (the JSON value stored for a CarrayMeta,
# or None: no key) and ``check(meta, value, where)`` (raises FormatError for a
# stored value this code cannot read).  The kinds add theirs when the package
# imports them (bcolz_store/kinds/installed.py), before any carray is opened.
STORAGE_ENTRIES = []


def _check_entries(store, meta, data: bytes) -> None:
    """Check the kinds' entries (:data:`STORAGE_ENTRIES`) stored in ``data``."""
    entries = [e for e in STORAGE_ENTRIES if e.key.encode("ascii") in data]
    if entries:
        where = store.path("meta/storage")
        obj = load_json(data, where)
        for entry in entries:
            if entry.key in obj:
                entry.check(meta, obj[entry.key], where)


def kind_of(meta=None, data: bytes | None = None):
    """The kind in :data:`COMPOSITE_KINDS` of ``meta`` (a CarrayMeta) or of the
    bytes of a ``meta/storage``; None for bcolz's own kinds, vlen and categorical."""
    for kind in COMPOSITE_KINDS:
        if (meta is not None and (kind.owns(meta.composite) or kind.owns(meta.lists2))) or \
                (data is not None and kind.matches(data)):
            return kind
    return None

# Blosc-1 compresses at most 2 GB per chunk; a larger chunk in meta is a lie.
MAX_CHUNK_BYTES = 2 ** 31 - 16


@dataclass
class CarrayMeta:
    """What a carray's metadata says.

    ``atom`` is the dtype of one item with its sub-array shape; ``dflt`` a
    0-d array of ``atom.base``; ``length`` in items, ``cbytes`` in bytes.  A
    carray of variable-length items has ``vlen`` set (kinds/vlen/meta.py),
    ``atom`` the dtype its reads return, and ``nbytes`` from ``meta/sizes``.
    A categorical carray (kinds/category/meta.py) has ``categorical`` set,
    ``categories`` the metadata of its categories (a vlen carray) and
    ``vlen`` the kind of its items; ``atom`` is the dtype its reads return.
    A list carray (kinds/list/meta.py) has ``listtype`` set (a ListType or
    MapType), ``atom`` object and ``listlevel`` the zstd level of its
    chunks, vlen chunks of the encoded items; one of layout version 2
    (kinds/list/files.py) has ``lists2`` its layout as well.
    """

    atom: np.dtype
    cparams: object
    chunklen: int
    expectedlen: int
    dflt: np.ndarray
    length: int = 0
    cbytes: int = 0
    vlen: VlenMeta | None = None
    nbytes: int = 0
    categorical: CategoryMeta | None = None
    categories: "CarrayMeta | None" = None      # the categories' vlen carray
    initial: np.ndarray | None = None           # the categories of a new one
    dflt_code: int = -1                         # a categorical's dflt, as its code
    composite: object = None                    # a decimal's or struct's (COMPOSITE_KINDS)
    nullable: NullableMeta | None = None        # a nullable carray's entry
    validity: "CarrayMeta | None" = None        # ... and its validity's metadata
    listtype: object = None                     # a list carray's ListType or MapType
    listlevel: int = 6
    lists2: object = None                       # a list carray's layout of version 2

    @property
    def variable(self) -> bool:
        """Whether items have any length (vlen, categorical and list carrays)."""
        return self.vlen is not None or self.listtype is not None

    @property
    def items_vlen(self) -> VlenMeta:
        """The vlen type of a list carray's encoded items: bytes, missing allowed."""
        return VlenMeta("bytes", self.listlevel, True)


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
    kind = kind_of(data=data)
    if kind is not None:
        return kind.load(store, data)
    sizes = load_sizes(store.get("meta/sizes"), store.path("meta/sizes"))
    storage = load_storage(data, store.path("meta/storage"))
    if storage.vlen is not None:
        return _load_vlen(store, sizes, storage)
    if storage.categorical is not None:
        return _load_categorical(store, sizes, storage)
    if storage.lists is not None:
        plain = StorageMeta(storage.dtype, storage.cparams, storage.chunklen,
                            storage.expectedlen, storage.dflt, VlenMeta("bytes", nullable=True))
        meta = _load_vlen(store, sizes, plain)
        meta.vlen, meta.listtype, meta.listlevel = None, storage.lists[0], storage.lists[1]
        return meta
    meta = fixed_meta(store, sizes, storage)
    if storage.nullable is not None:
        load_validity(store, meta, storage.nullable)
    _check_entries(store, meta, data)
    pickled = storage_kind(meta.atom) == "pickle"
    check_end_files(store, meta, meta.length if pickled else -(-meta.length // meta.chunklen),
                     chunk_key)
    return meta


def fixed_meta(store, sizes: SizesMeta, storage: StorageMeta,
                one_d: str | None = None) -> CarrayMeta:
    """The metadata of a carray of fixed-size atoms (or pickled objects), checked:
    one-dimensional for objects (and for ``one_d``, a kind of carray named in
    the message), known cparams, chunks within Blosc's limit."""
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


def load_validity(store, meta: CarrayMeta, nullable: NullableMeta) -> None:
    """The validity of a nullable carray (kinds/nullable/meta.py), checked.

    Raises
    ------
    FormatError
        Naming ``ROOT/valid``: missing, not a carray of bool, of another
        chunklen, or damaged.
    """
    where = store.path(VALIDITY_DIR)
    if storage_kind(meta.atom) == "pickle":
        raise FormatError(f"{store.path('meta/storage')}: an object carray cannot be nullable")
    try:
        validity = load_carray(store.sub(VALIDITY_DIR))
    except DatasetNotFoundError as err:
        raise FormatError(f"{where}: the validity of this nullable carray is missing "
                          f"({err})") from None
    if (validity.atom != np.dtype(bool) or validity.vlen is not None
            or validity.nullable is not None or validity.categorical is not None):
        raise FormatError(f"{where}: the validity of a nullable carray must be a carray of "
                          f"bool, not of {validity.atom}")
    if validity.chunklen != meta.chunklen:
        raise FormatError(f"{where}: chunklen {validity.chunklen} of the validity differs "
                          f"from the values' {meta.chunklen}")
    meta.nullable, meta.validity = nullable, validity


def new_validity_meta(meta: CarrayMeta) -> CarrayMeta:
    """The metadata of the validity (bool, True: present) of the new nullable
    carray ``meta``."""
    return CarrayMeta(np.dtype(bool), meta.cparams, meta.chunklen, meta.expectedlen,
                      np.ones((), dtype=bool))


def nullable_engine(meta: CarrayMeta, store, cache_budget: int, new: bool) -> NullableEngine:
    """A NullableEngine: values and validity in two ChunkEngines (when ``new``,
    the validity's ``meta/storage`` is staged at once)."""
    sub = store.sub(VALIDITY_DIR) if store is not None else None
    if new:
        valid = new_validity_meta(meta)
        if sub is not None:
            sub.makedirs("data", "meta")
            stage_storage(sub, valid)
        values = ChunkEngine(meta.atom, meta.cparams, meta.chunklen, store,
                             cache_budget=cache_budget)
        validity = ChunkEngine(valid.atom, valid.cparams, valid.chunklen, sub,
                               cache_budget=cache_budget)
        return NullableEngine(values, validity)
    valid = meta.validity
    nfull, nleft = divmod(meta.length, meta.chunklen)
    values = ChunkEngine(meta.atom, meta.cparams, meta.chunklen, store, nfull, nleft,
                         meta.cbytes, cache_budget=cache_budget)
    nfull, nleft = divmod(valid.length, valid.chunklen)
    validity = ChunkEngine(valid.atom, valid.cparams, valid.chunklen, sub, nfull, nleft,
                           valid.cbytes, cache_budget=cache_budget)
    return NullableEngine(values, validity)


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


# Items per vlen chunk at most (the leftover buffer takes 16 bytes per item).
MAX_VLEN_CHUNKLEN = 1 << 24


def _load_vlen(store, sizes: SizesMeta, storage: StorageMeta) -> CarrayMeta:
    """The metadata of a vlen carray (kinds/vlen/meta.py), checked."""
    where = store.path("meta/sizes")
    if len(sizes.shape) != 1:
        raise FormatError(f"{where}: shape {list(sizes.shape)} for a vlen carray, which is "
                          f"one-dimensional")
    if storage.chunklen > MAX_VLEN_CHUNKLEN:
        raise FormatError(f"{store.path('meta/storage')}: chunklen {storage.chunklen} is above "
                          f"{MAX_VLEN_CHUNKLEN}, the most items a vlen chunk may hold")
    cparams = stored_cparams(store, storage)
    if storage.vlen.dictionary is not None:
        try:
            dictionary_id(storage.vlen.dictionary)
        except CodecError as err:
            raise FormatError(f"{store.path('meta/storage')}: the vlen dictionary is not a "
                              f"zstd dictionary ({err})") from err
    meta = CarrayMeta(storage.dtype, cparams, storage.chunklen, storage.expectedlen,
                      storage.dflt, sizes.shape[0], sizes.cbytes, storage.vlen, sizes.nbytes)
    check_end_files(store, meta, -(-meta.length // meta.chunklen), vlen_chunk_key)
    return meta


def _load_categorical(store, sizes: SizesMeta, storage: StorageMeta) -> CarrayMeta:
    """The metadata of a categorical carray (kinds/category/meta.py): its codes,
    read as any carray's, and its categories, a vlen carray beside them."""
    categories = load_carray(store.sub(CATEGORIES_DIR))
    where = store.path(CATEGORIES_DIR)
    if categories.vlen is None or categories.categorical is not None or categories.vlen.nullable:
        raise FormatError(f"{where}: the categories of a categorical carray must be a vlen "
                          f"carray without missing items")
    plain = StorageMeta(storage.dtype, storage.cparams, storage.chunklen, storage.expectedlen,
                        storage.dflt)
    codes = fixed_meta(store, sizes, plain, one_d="a categorical")
    atom = vlen_result_dtype(categories.vlen.kind, True)
    dflt = np.empty((), dtype=atom)
    dflt[()] = None                 # the item of a code >= 0 is read when asked for
    code = int(storage.dflt)
    if not -1 <= code < categories.length:
        raise FormatError(f"{store.path('meta/storage')}: dflt {code} is not a code of the "
                          f"{categories.length} categories (nor -1)")
    return CarrayMeta(atom, codes.cparams, codes.chunklen, codes.expectedlen, dflt,
                      codes.length, codes.cbytes, VlenMeta(categories.vlen.kind, nullable=True),
                      codes.length * storage.dtype.itemsize, storage.categorical, categories,
                      dflt_code=code)


def _category_engine(meta: CarrayMeta, store, cache_budget: int, new: bool):
    """A CategoryEngine: codes in a ChunkEngine, categories in a VlenEngine (when
    ``new``, the categories ``meta.categories.initial`` are staged at once)."""
    codes = meta.categorical.codes
    sub = store.sub(CATEGORIES_DIR) if store is not None else None
    cats = meta.categories
    if new:
        categories = VlenEngine(cats.vlen, cats.chunklen, sub, cache_budget=cache_budget)
        categories.append(cats.initial)
        if sub is not None:
            sub.makedirs("data", "meta")
            stage_storage(sub, cats)
            categories.stage_leftover()
            stage_sizes(sub, (categories.length,), categories.nbytes, categories.cbytes)
        engine = ChunkEngine(codes, meta.cparams, meta.chunklen, store,
                             cache_budget=cache_budget)
    else:
        nfull, nleft = divmod(cats.length, cats.chunklen)
        categories = VlenEngine(cats.vlen, cats.chunklen, sub, nfull, nleft, cats.nbytes,
                                cats.cbytes, cache_budget=cache_budget)
        nfull, nleft = divmod(meta.length, meta.chunklen)
        engine = ChunkEngine(codes, meta.cparams, meta.chunklen, store, nfull, nleft,
                             meta.cbytes, cache_budget=cache_budget)
    return CategoryEngine(engine, categories, meta.atom)


def new_engine(meta: CarrayMeta, store, cache_budget: int, new: bool = False):
    """The engine of a carray described by ``meta`` (a stored one unless ``new``),
    with its chunk statistics (``meta/stats``, chunks/stats.py) when its kind
    has them.

    The leftover of a stored carray is read from its chunk file when first
    needed, so opening a table reads no chunk at all.
    """
    if meta.lists2 is not None:           # no statistics, no index (its children keep theirs)
        return kind_of(meta).engine(meta, store, cache_budget, new)
    if meta.composite is not None:       # no index; a decimal's statistics (chunks/kind_stats.py)
        engine = kind_of(meta).engine(meta, store, cache_budget, new)
        dec = meta.composite
        if isinstance(dec, DecimalMeta) and dec.bits == 128:
            values = engine.values
            nullable = values if isinstance(values, NullableEngine) else None
            kind = kind_stats_kind(None, nullable is not None, dec.scale)
            attach_kind_stats(values if nullable is None else values.values, nullable, kind,
                              meta.chunklen, store, meta.length, new)
        return engine
    engine = _new_engine(meta, store, cache_budget, new)
    kind, inner = None, engine
    if meta.categorical is not None:
        kind, inner = stats_kind(meta.categorical.codes, categorical=True), engine.codes
    elif meta.vlen is not None:
        kind = stats_kind(meta.atom, meta.vlen.kind)
    elif meta.listtype is not None:
        inner = engine.inner
    elif storage_kind(meta.atom) != "pickle" and meta.nullable is None:
        kind = stats_kind(meta.atom)
    elif storage_kind(meta.atom) != "pickle":   # those of its present items, no index
        kind = kind_stats_kind(stats_kind(meta.atom), True)
        attach_kind_stats(engine.values, engine, kind, meta.chunklen, store, meta.length, new)
        return engine
    attach_stats(inner, kind, meta.chunklen, store, meta.length, new)
    if not new and kind is not None and not kind.startswith("vlen:"):
        attach_index(inner, store, kind, meta.length)
    return engine


def _new_engine(meta: CarrayMeta, store, cache_budget: int, new: bool):
    if meta.categorical is not None:
        return _category_engine(meta, store, cache_budget, new)
    if meta.nullable is not None:
        return nullable_engine(meta, store, cache_budget, new)
    if meta.listtype is not None:
        nfull, nleft = divmod(0 if new else meta.length, meta.chunklen)
        return ListEngine(VlenEngine(meta.items_vlen, meta.chunklen, store, nfull, nleft,
                                     0 if new else meta.nbytes, 0 if new else meta.cbytes,
                                     cache_budget=cache_budget), meta.listtype)
    if meta.vlen is not None:
        if new:
            return VlenEngine(meta.vlen, meta.chunklen, store, cache_budget=cache_budget)
        nfull, nleft = divmod(meta.length, meta.chunklen)
        return VlenEngine(meta.vlen, meta.chunklen, store, nfull, nleft, meta.nbytes,
                          meta.cbytes, cache_budget=cache_budget)
    if storage_kind(meta.atom) == "pickle":
        return ObjectEngine(meta.cparams, meta.chunklen, store,
                            0 if new else meta.length, 0 if new else meta.cbytes)
    if new:
        return ChunkEngine(meta.atom, meta.cparams, meta.chunklen, store,
                           cache_budget=cache_budget)
    nfull, nleft = divmod(meta.length, meta.chunklen)
    return ChunkEngine(meta.atom, meta.cparams, meta.chunklen, store, nfull, nleft,
                       meta.cbytes, cache_budget=cache_budget)


def stage_stats(store, engine) -> None:
    """Stage ``meta/stats`` for the engine's chunks as they are now (chunks/stats.py)
    and bring its index up to date (chunks/index.py); nothing for a kind
    without statistics."""
    if isinstance(engine, DecimalEngine):
        engine = engine.values                  # its 16-byte integers (and validity)
    if isinstance(engine, NullableEngine):     # the validity, at the values' length
        validity = engine.validity
        stage_sizes(validity.store, (validity.length,), validity.length, validity.cbytes)
        engine = engine.values                  # statistics of the present items
    engine = engine.codes if isinstance(engine, CategoryEngine) else engine
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
    engine = new_engine(meta, store, cache_budget=0)
    engine = engine.codes if isinstance(engine, CategoryEngine) else engine
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
    engine = new_engine(meta, store, cache_budget=0)
    engine = engine.codes if isinstance(engine, CategoryEngine) else engine
    if getattr(engine, "index", None) is None:
        return f"{store.path(INDEX_META_KEY)}: a carray of {meta.atom} keeps no index"
    return _index_problem(store, engine)


def stage_storage(store, meta: CarrayMeta) -> None:
    """Stage ``meta/storage`` (bcolz's bytes) for the next commit.

    A vlen carray's ``dtype`` text names it by its folder (a ctable column by
    the column's name), so that bcolz's refusal to open it says which it is.
    """
    name = str(store.root).rstrip("/").replace("\\", "/").rpartition("/")[2] or "carray"
    if meta.composite is not None or meta.lists2 is not None:
        kind_of(meta).stage_storage(store, meta, name)
        return
    if meta.categorical is not None:    # the codes' storage, named for bcolz's refusal
        codes = meta.categorical.codes
        store.set("meta/storage", dump_storage(StorageMeta(
            codes, meta.cparams.to_dict(), meta.chunklen, meta.expectedlen,
            np.array(meta.dflt_code, dtype=codes), None, category_dtype_text(codes, name),
            meta.categorical)))
        return
    if meta.listtype is not None:
        store.set("meta/storage", dump_storage(StorageMeta(
            meta.atom, meta.cparams.to_dict(), meta.chunklen, meta.expectedlen, meta.dflt,
            None, list_dtype_text(name), lists=(meta.listtype, meta.listlevel))))
        return
    text = vlen_dtype_text(meta.vlen.kind, name) if meta.vlen is not None else None
    entries = {e.key: v for e in STORAGE_ENTRIES if (v := e.entry(meta)) is not None}
    store.set("meta/storage", dump_storage(StorageMeta(
        meta.atom.base, meta.cparams.to_dict(), meta.chunklen, meta.expectedlen, meta.dflt,
        meta.vlen, text, nullable=meta.nullable, entries=entries or None)))


def stage_sizes(store, shape: tuple, nbytes: int, cbytes: int) -> None:
    """Stage ``meta/sizes`` (bcolz's bytes) for the next commit."""
    store.set("meta/sizes", dump_sizes(SizesMeta(shape, nbytes, cbytes)))
