"""The files of a vlen carray: ``meta/storage`` with its ``vlen`` entry
(kinds/vlen/meta.py), ``meta/sizes`` and vlen chunk files ``data/__N.vlen``,
read into a :class:`~bcolz_store.kinds.vlen.engine.VlenEngine` with its
chunk statistics (no index).

Registered in :data:`~bcolz_store.datasets.carray_files.KIND_FILES`.

Source: this library's own format (docs/format.md, "Variable-length
columns"), inside bcolz format v1.0's folder layout (seeds/001).
"""

from __future__ import annotations

from ...chunks.stats import attach_stats, stats_kind
from ...errors import CodecError, FormatError
from ...format.meta import StorageMeta, dump_storage
from ...datasets.carray_files import (KIND_FILES, CarrayMeta, KindFiles, check_end_files,
                                      storage_entries, stored_cparams)
from .chunk import dictionary_id
from .chunk_files import vlen_chunk_key
from .engine import VlenEngine
from .meta import VlenMeta, vlen_dtype_text
from .meta_storage import VLEN_STORAGE

__all__ = ["MAX_VLEN_CHUNKLEN", "VLEN_FILES", "load_vlen_carray", "vlen_engine"]

# Items per vlen chunk at most (the leftover buffer takes 16 bytes per item).
MAX_VLEN_CHUNKLEN = 1 << 24


def load_vlen_carray(store, sizes, storage: StorageMeta) -> CarrayMeta:
    """The metadata of a vlen carray (kinds/vlen/meta.py), checked.

    Raises
    ------
    FormatError
        Naming ``meta/sizes`` or ``meta/storage``: more than one dimension, a
        chunklen above :data:`MAX_VLEN_CHUNKLEN`, a dictionary that is not
        zstd's, or cparams as :func:`~.carray_files.stored_cparams`.
    ChunkNotFoundError
        As :func:`~.carray_files.check_end_files`.
    """
    where = store.path("meta/sizes")
    if len(sizes.shape) != 1:
        raise FormatError(f"{where}: shape {list(sizes.shape)} for a vlen carray, which is "
                          f"one-dimensional")
    if storage.chunklen > MAX_VLEN_CHUNKLEN:
        raise FormatError(f"{store.path('meta/storage')}: chunklen {storage.chunklen} is above "
                          f"{MAX_VLEN_CHUNKLEN}, the most items a vlen chunk may hold")
    cparams = stored_cparams(store, storage)
    vlen = storage.entry
    if vlen.dictionary is not None:
        try:
            dictionary_id(vlen.dictionary)
        except CodecError as err:
            raise FormatError(f"{store.path('meta/storage')}: the vlen dictionary is not a "
                              f"zstd dictionary ({err})") from err
    meta = CarrayMeta(storage.dtype, cparams, storage.chunklen, storage.expectedlen,
                      storage.dflt, sizes.shape[0], sizes.cbytes, sizes.nbytes, vlen)
    check_end_files(store, meta, -(-meta.length // meta.chunklen), vlen_chunk_key)
    return meta


def vlen_engine(vlen, meta: CarrayMeta, store, cache_budget: int, new: bool) -> VlenEngine:
    """A VlenEngine of items of ``vlen`` (a VlenMeta) in the chunks of ``meta``:
    empty when ``new``, else over its stored chunks."""
    if new:
        return VlenEngine(vlen, meta.chunklen, store, cache_budget=cache_budget)
    nfull, nleft = divmod(meta.length, meta.chunklen)
    return VlenEngine(vlen, meta.chunklen, store, nfull, nleft, meta.nbytes, meta.cbytes,
                      cache_budget=cache_budget)


class _VlenFiles(KindFiles):
    """How a vlen carray's files are read and written."""

    chunked = True

    def of_storage(self, storage) -> bool:
        return storage.kind is VLEN_STORAGE

    def of_meta(self, meta) -> bool:
        return isinstance(meta.kind, VlenMeta)

    def of_engine(self, engine) -> bool:
        return isinstance(engine, VlenEngine)

    @staticmethod
    def load(store, data: bytes, storage, sizes) -> CarrayMeta:
        """As :func:`load_vlen_carray`."""
        return load_vlen_carray(store, sizes, storage)

    @staticmethod
    def engine(meta: CarrayMeta, store, cache_budget: int, new: bool) -> VlenEngine:
        """A VlenEngine with the statistics of its items (``vlen:`` kinds: no index)."""
        vlen = meta.kind
        engine = vlen_engine(vlen, meta, store, cache_budget, new)
        attach_stats(engine, stats_kind(meta.atom, vlen.kind), meta.chunklen, store,
                     meta.length, new)
        return engine

    @staticmethod
    def stage_storage(store, meta: CarrayMeta, name: str) -> None:
        """bcolz's keys, the ``dtype`` text naming the carray by its folder ``name``
        (so that bcolz's refusal to open it says which it is) and the ``vlen`` entry."""
        vlen = meta.kind
        store.set("meta/storage", dump_storage(StorageMeta(
            meta.atom.base, meta.cparams.to_dict(), meta.chunklen, meta.expectedlen, meta.dflt,
            vlen_dtype_text(vlen.kind, name), VLEN_STORAGE, vlen,
            entries=storage_entries(meta))))


VLEN_FILES = _VlenFiles()
KIND_FILES.append(VLEN_FILES)
