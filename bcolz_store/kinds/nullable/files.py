"""The files of a nullable carray: a carray of bcolz's layout whose
``meta/storage`` has the ``nullable`` entry (kinds/nullable/meta.py) and its
validity, a carray of bool (True: present), in ``ROOT/valid``, read into a
:class:`~bcolz_store.kinds.nullable.engine.NullableEngine` whose values keep
the statistics of the present items (chunks/kind_stats.py; no index).

Registered in :data:`~bcolz_store.datasets.carray_files.KIND_FILES`.

Source: this library's own format (docs/format.md, "Nullable columns"),
inside bcolz format v1.0's folder layout (seeds/001).
"""

from __future__ import annotations

import numpy as np

from ...chunks.kind_stats import attach_kind_stats, kind_stats_kind
from ...chunks.stats import stats_kind
from ...errors import DatasetNotFoundError, FormatError
from ...format.meta import StorageMeta, dump_storage, storage_kind
from ...datasets.carray_files import (KIND_FILES, CarrayMeta, KindFiles, chunk_engine, check_plain,
                                      fixed_meta, load_carray, stage_sizes, stage_storage,
                                      storage_entries)
from .engine import NullableEngine
from .meta import VALIDITY_DIR, NullableLayout, NullableMeta, nullable_layout
from .meta_storage import NULLABLE_STORAGE

__all__ = ["NULLABLE_FILES", "load_validity", "new_validity_meta", "nullable_engine",
           "stage_validity"]


def load_validity(store, meta: CarrayMeta, nullable: NullableMeta) -> None:
    """The validity of a nullable carray (kinds/nullable/meta.py), checked, set
    in ``meta`` with its entry ``nullable`` (its ``kind``, a :class:`NullableLayout`).

    Raises
    ------
    FormatError
        Naming ``ROOT/valid``: missing, not a carray of bool, of another
        chunklen, or damaged; naming ``meta/storage``: an object carray.
    """
    where = store.path(VALIDITY_DIR)
    if storage_kind(meta.atom) == "pickle":
        raise FormatError(f"{store.path('meta/storage')}: an object carray cannot be nullable")
    try:
        validity = load_carray(store.sub(VALIDITY_DIR))
    except DatasetNotFoundError as err:
        raise FormatError(f"{where}: the validity of this nullable carray is missing "
                          f"({err})") from None
    if validity.atom != np.dtype(bool) or validity.kind is not None:
        raise FormatError(f"{where}: the validity of a nullable carray must be a carray of "
                          f"bool, not of {validity.atom}")
    if validity.chunklen != meta.chunklen:
        raise FormatError(f"{where}: chunklen {validity.chunklen} of the validity differs "
                          f"from the values' {meta.chunklen}")
    meta.kind = NullableLayout(nullable, validity)


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
    else:
        valid = meta.kind.validity
    return NullableEngine(chunk_engine(meta, store, cache_budget, new),
                          chunk_engine(valid, sub, cache_budget, new))


def stage_validity(engine: NullableEngine):
    """Stage the ``meta/sizes`` of ``engine``'s validity, at the values' length,
    and return its values engine (which keeps the statistics of the present
    items)."""
    validity = engine.validity
    stage_sizes(validity.store, (validity.length,), validity.length, validity.cbytes)
    return engine.values


class _NullableFiles(KindFiles):
    """How a nullable carray's files are read and written."""

    chunked = True

    def of_storage(self, storage) -> bool:
        return storage.kind is NULLABLE_STORAGE

    def of_meta(self, meta) -> bool:
        return nullable_layout(meta) is not None

    def of_engine(self, engine) -> bool:
        return isinstance(engine, NullableEngine)

    def stage_parts(self, store, engine):
        """Its validity's sizes; its values keep the statistics."""
        return stage_validity(engine)

    @staticmethod
    def load(store, data: bytes, storage, sizes) -> CarrayMeta:
        """The values' metadata, as a plain carray's, and the validity, checked
        (:func:`load_validity`)."""
        meta = fixed_meta(store, sizes, storage)
        load_validity(store, meta, storage.entry)
        check_plain(store, meta, data)
        return meta

    @staticmethod
    def engine(meta: CarrayMeta, store, cache_budget: int, new: bool) -> NullableEngine:
        """A NullableEngine whose values keep the statistics of the present items."""
        engine = nullable_engine(meta, store, cache_budget, new)
        if storage_kind(meta.atom) != "pickle":
            kind = kind_stats_kind(stats_kind(meta.atom), True)
            attach_kind_stats(engine.values, engine, kind, meta.chunklen, store, meta.length,
                              new)
        return engine

    @staticmethod
    def stage_storage(store, meta: CarrayMeta, name: str) -> None:
        """bcolz's keys, the ``nullable`` entry and the keys the kinds add."""
        store.set("meta/storage", dump_storage(StorageMeta(
            meta.atom.base, meta.cparams.to_dict(), meta.chunklen, meta.expectedlen, meta.dflt,
            kind=NULLABLE_STORAGE, entry=meta.kind.nullable, entries=storage_entries(meta))))


NULLABLE_FILES = _NullableFiles()
KIND_FILES.append(NULLABLE_FILES)
