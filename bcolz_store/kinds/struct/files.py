"""The files of a struct carray: ``meta/storage`` with its ``struct`` entry,
``meta/sizes`` (the fields' sums), one complete carray folder per field and a
bool carray of validity when items may be missing, read into a
:class:`~bcolz_store.kinds.struct.engine.StructEngine`.

Registered in :data:`~bcolz_store.datasets.carray_files.KIND_FILES` (no
statistics, no index: its fields keep theirs).

Source: this library's own format (docs/format.md, "Struct columns"),
inside bcolz format v1.0's folder layout (seeds/001: nested columns).
"""

from __future__ import annotations

import numpy as np

from ...chunks.engine import ChunkEngine
from .engine import StructEngine
from ...errors import FormatError
from ...format.kind_storage import dump_kind_storage, load_kind_storage, storage_text_starts
from ...format.meta import load_sizes
from .meta import (STRUCT_KEY, StructMeta, VALIDITY_DIR, dump_struct,
                                  load_struct, struct_dtype_text)
from ..category.meta import CategoryLayout
from ...datasets.carray_files import (KIND_FILES, CarrayMeta, KindFiles, stored_cparams,
                                      load_carray, new_engine, stage_sizes, stage_stats,
                                      stage_storage)

__all__ = ["STRUCT_KIND", "field_fill", "struct_carray_meta", "validity_meta"]


def field_fill(meta: CarrayMeta):
    """The item a missing struct stores in a field of metadata ``meta``."""
    slot = meta.kind
    if isinstance(slot, StructMeta):
        return None if slot.nullable else {f.name: field_fill(f.meta) for f in slot.fields}
    value = meta.dflt[()] if meta.dflt is not None and meta.dflt.shape == () else None
    if isinstance(slot, CategoryLayout) and slot.dflt_code >= 0:
        return None
    return value


def struct_carray_meta(smeta: StructMeta, cparams, chunklen: int, expectedlen: int,
                       length: int = 0, cbytes: int = 0) -> CarrayMeta:
    """The :class:`CarrayMeta` of a struct carray (object atom; ``dflt`` the
    item growing fills in: None for a nullable struct, else the fields' fills)."""
    fill = np.empty((), dtype=object)
    fill[()] = None if smeta.nullable else {f.name: field_fill(f.meta) for f in smeta.fields}
    return CarrayMeta(np.dtype(object), cparams, int(chunklen), int(expectedlen), fill,
                      length, cbytes, kind=smeta)


def validity_meta(meta: CarrayMeta) -> CarrayMeta:
    """The metadata of a new struct's validity carray."""
    return CarrayMeta(np.dtype(bool), meta.cparams, meta.chunklen, meta.expectedlen,
                      np.array(True))


class _StructKind(KindFiles):
    """How a struct carray's files are read and written."""

    def of_data(self, data: bytes) -> bool:
        return storage_text_starts(data, ("struct:",))

    def of_meta(self, meta) -> bool:
        return isinstance(meta.kind, StructMeta)

    @staticmethod
    def load(store, data: bytes, storage=None, sizes=None) -> CarrayMeta:
        """The metadata of a stored struct carray and of its fields, checked.

        Raises
        ------
        FormatError
            Malformed metadata, or fields (or validity) of another length or
            chunklen than the struct.
        DatasetNotFoundError
            A field's folder is missing.
        """
        where = store.path("meta/storage")
        obj, storage = load_kind_storage(data, where)
        smeta = load_struct(obj.get(STRUCT_KEY), where)
        sizes = load_sizes(store.get("meta/sizes"), store.path("meta/sizes"))
        if len(sizes.shape) != 1:
            raise FormatError(f"{store.path('meta/sizes')}: a struct carray is "
                              f"one-dimensional")
        length = sizes.shape[0]
        parts = [(f.folder, f) for f in smeta.fields]
        if smeta.nullable:
            parts.append((VALIDITY_DIR, None))
        for folder, field in parts:
            meta = load_carray(store.sub(folder))
            if meta.length != length or meta.chunklen != storage.chunklen:
                raise FormatError(f"{store.path(folder)}: a field of {meta.length} items in "
                                  f"chunks of {meta.chunklen}; the struct has {length} in "
                                  f"chunks of {storage.chunklen}")
            if field is None:
                if meta.atom != np.dtype(bool):
                    raise FormatError(f"{store.path(folder)}: the validity is not bools")
            else:
                field.meta = meta
        out = struct_carray_meta(smeta, stored_cparams(store, storage), storage.chunklen,
                                 storage.expectedlen, length, sizes.cbytes)
        out.nbytes = sizes.nbytes
        return out

    @staticmethod
    def engine(meta: CarrayMeta, store, cache_budget: int, new: bool) -> StructEngine:
        """A StructEngine over its fields' engines (and validity's), each with
        its own statistics; new ones' ``meta/storage`` staged at once."""
        smeta = meta.kind
        fields = []
        folders = {}

        def open_part(folder, fmeta):
            sub = store.sub(folder) if store is not None else None
            if new and sub is not None:
                sub.makedirs("data", "meta")
                stage_storage(sub, fmeta)
            return new_engine(fmeta, sub, cache_budget, new=new)

        for f in smeta.fields:
            folders[f.name] = f.folder
            fields.append((f.name, open_part(f.folder, f.meta), field_fill(f.meta)))
        validity = None
        if smeta.nullable:
            vmeta = validity_meta(meta) if new else load_carray(store.sub(VALIDITY_DIR))
            validity = open_part(VALIDITY_DIR, vmeta)
            if not isinstance(validity, ChunkEngine):      # pragma: no cover - checked on load
                raise FormatError(f"{store.path(VALIDITY_DIR)}: the validity is not bools")

        def stage_field(name, engine, nbytes):
            if store is None:
                return
            sub = store.sub(folders[name] if name is not None else VALIDITY_DIR)
            atom = getattr(engine, "atom", None)
            shape = (engine.length,) + (atom.shape if isinstance(atom, np.dtype) else ())
            stage_sizes(sub, shape, nbytes, engine.cbytes)
            stage_stats(sub, engine)

        where = store.root if store is not None else "struct carray"
        return StructEngine(fields, validity, stage_field, where, meta.chunklen)

    @staticmethod
    def stage_storage(store, meta: CarrayMeta, name: str) -> None:
        """bcolz's keys, the ``dtype`` text naming the carray by its folder ``name``
        and the ``struct`` entry."""
        store.set("meta/storage", dump_kind_storage(
            struct_dtype_text(name), meta.cparams.to_dict(), meta.chunklen, meta.expectedlen,
            None, STRUCT_KEY, dump_struct(meta.kind)))


STRUCT_KIND = _StructKind()
KIND_FILES.append(STRUCT_KIND)
