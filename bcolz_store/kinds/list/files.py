"""The files of a list (or map) carray of layout version 2: the column's folder
is a plain bcolz carray of ``int64`` end offsets (row ``i`` spans child rows
``[ends[i-1], ends[i])``), with a bool carray ``valid/`` when lists may be
missing, and one complete carray folder per child column: ``items/`` for a
list, ``keys/`` and ``values/`` for a map (a plain fixed carray, a nullable
fixed carray for elements that may be missing, a vlen carray for str and
bytes)::

    ROOT/meta/storage   {"dtype": "<i8", "cparams": {...}, "chunklen": L,
                         "expectedlen": E, "dflt": 0,
                         "list": {"version": 2, "level": 6, "type": T,
                                  "children": ["items"], "validity": "valid",
                                  "dflt": null}}
    ROOT/meta/sizes     {"shape": [n], "nbytes": ..., "cbytes": ...}
    ROOT/data/__N.blp   the offsets' chunks (bcolz's own)
    ROOT/valid/         a bool carray (only for a nullable list type)
    ROOT/items/         (or keys/ and values/) the elements

The ``list`` entry's ``type`` is kinds/list/meta.py's; its ``dflt`` is the
fill value of ``resize`` (null, or the base64 of a version-1 encoded item).
bcolz reads the offsets, the validity and each child as plain carrays.
Version-1 list carrays (one vlen carray of encoded items, with a ``list``
entry of version 1 in ``meta/storage``) are read and written here too.  Both
are registered in :data:`~bcolz_store.datasets.carray_files.KIND_FILES`.

Source: this library's own format (docs/format.md, "List and map columns"),
inside bcolz format v1.0's folder layout (seeds/001).
"""

from __future__ import annotations

import json

import numpy as np

from ...chunks.engine import ChunkEngine
from .engine2 import ListV2Engine
from ..vlen.chunk_items import vlen_chunklen
from ...errors import FormatError
from ...format.kind_storage import dump_kind_storage, load_kind_storage
from ...format.layout import ATTRS_FILE
from .meta_items import decode_list_dflt, encode_list_dflt
from .engine import ListEngine
from .meta_storage import LIST_STORAGE
from .meta import (LIST_KEY, ListLayout, ListLayout2, ListType, MapType, list_dtype_text,
                   type_from_json, type_to_json)
from ...format.meta import StorageMeta, dump_storage, load_sizes
from ..nullable.meta import (VALIDITY_DIR, NullableLayout, NullableMeta, fill_kind,
                             nullable_layout)
from ..vlen.engine import VlenEngine
from ..vlen.files import load_vlen_carray
from ..vlen.meta import VlenMeta
from ..vlen.meta_storage import VLEN_STORAGE
from ...indexing import calc_chunklen
from ...datasets.carray_files import (KIND_FILES, CarrayMeta, KindFiles, stored_cparams,
                                      load_carray, new_engine, stage_sizes, stage_stats,
                                      stage_storage)

__all__ = ["LIST1_KIND", "LIST2_KIND", "LIST2_VERSION", "LIST_CODECS", "LIST_LAYOUT",
           "ListLayout2", "list2_element", "list2_layout", "new_list_layout"]

LIST2_VERSION = 2
#: Factories ``codec(listtype, where, children)`` (children: folder -> CarrayMeta) of the Python and Arrow rows of a list
#: carray (the list kind registers one; see kinds/list/engine2.py).
LIST_CODECS: list = []
#: The layout version new list and map carrays of elements version 2 holds
#: (:func:`list2_element`) are written in: 2, or 1 (one vlen carray of
#: encoded items) when set to 1.
LIST_LAYOUT = {"new": 2}

_MARK = b'"list": {"version": 2,'


def list2_element(item) -> bool:
    """Whether list elements of type ``item`` go in a child carray of version 2:
    fixed numbers, bools, datetimes and timedeltas (s..ns), str and bytes."""
    if item in ("str", "bytes"):
        return True
    if not isinstance(item, np.dtype) or item.kind not in "biufmM" or item.shape:
        return False
    if item.kind in "mM":
        return np.datetime_data(item)[0] in ("s", "ms", "us", "ns")
    return item.kind != "f" or item.itemsize in (2, 4, 8)


def _children(typ) -> list:
    """``[(folder, element type, nullable)]`` of a list or map type."""
    if isinstance(typ, MapType):
        return [("keys", typ.key, False), ("values", typ.value, bool(typ.value_nullable))]
    return [("items", typ.item, bool(typ.item_nullable))]


def _verify_part_attrs(store, folders) -> None:
    """With ``verify`` on, read the ``__attrs__`` each part folder holds (written
    so that the real bcolz opens the part on its own; nothing here reads them
    otherwise), so that a changed one is an IntegrityError like any file."""
    if not getattr(store, "verify", False):
        return
    for folder in folders:
        sub = store.sub(folder)
        if sub.exists("__attrs__"):
            sub.get("__attrs__")


def _child_meta(item, nullable: bool, cparams, expectedlen: int, level: int) -> CarrayMeta:
    """The metadata of a new child carray of elements ``item``."""
    if item in ("str", "bytes"):
        vlen = VlenMeta(item, level, nullable)
        fill = np.empty((), dtype=vlen.dtype)
        fill[()] = None if nullable else ("" if item == "str" else b"")
        return CarrayMeta(vlen.dtype, cparams, vlen_chunklen(expectedlen, 16), expectedlen,
                          fill, kind=vlen)
    meta = CarrayMeta(item, cparams, calc_chunklen(expectedlen, item.itemsize), expectedlen,
                      np.zeros((), dtype=item))
    if nullable:
        meta.kind = NullableLayout(NullableMeta(fill_kind(item), "null"))
    return meta


def new_list_layout(meta: CarrayMeta) -> bool:
    """Make the new list carray ``meta`` one of layout version 2 (its ``kind`` a
    :class:`ListLayout2`), when its type's elements all go in child carrays
    and new list carrays are written so; whether it did."""
    typ = meta.kind.listtype
    if LIST_LAYOUT["new"] != LIST2_VERSION or not isinstance(typ, (ListType, MapType)):
        return False
    if isinstance(typ, ListType) and typ.size is not None:
        return False
    parts = _children(typ)
    if not all(list2_element(t) for _, t, _ in parts):
        return False
    expected = max(int(meta.expectedlen), 1) * 8
    level = meta.kind.level
    layout = ListLayout2(typ, level, nullable=bool(typ.nullable))
    for folder, item, nullable in parts:
        layout.children[folder] = _child_meta(item, nullable, meta.cparams, expected, level)
    meta.kind = layout
    return True


def list2_layout(meta) -> "ListLayout2 | None":
    """The version-2 layout of a carray's metadata, or None."""
    slot = getattr(meta, "kind", None)
    return slot if isinstance(slot, ListLayout2) else None


def _load_entry(obj, where: str) -> tuple:
    if not isinstance(obj, dict) or obj.get("version") != LIST2_VERSION:
        raise FormatError(f"{where}: the list entry of a version-2 list carray is malformed")
    level = obj.get("level")
    if not isinstance(level, int) or isinstance(level, bool) or not 1 <= level <= 22:
        raise FormatError(f"{where}: list level {level!r:.20} is outside 1..22")
    typ = type_from_json(obj.get("type"), where)
    if not isinstance(typ, (ListType, MapType)):
        raise FormatError(f"{where}: the type of a list carray is a list or map type")
    want = [f for f, _, _ in _children(typ)]
    if obj.get("children") != want:
        raise FormatError(f"{where}: the children of a {type(typ).__name__} are {want}, "
                          f"not {obj.get('children')!r:.80}")
    if obj.get("validity") != (VALIDITY_DIR if typ.nullable else None):
        raise FormatError(f"{where}: the validity entry {obj.get('validity')!r:.40} does not "
                          f"fit a list type of nullable={typ.nullable}")
    return typ, level


class _ListKind2(KindFiles):
    """How a version-2 list carray's files are read and written (no statistics,
    no index: its children keep theirs)."""

    def of_data(self, data: bytes) -> bool:
        return _MARK in bytes(data[:4096])

    def of_meta(self, meta) -> bool:
        return isinstance(meta.kind, ListLayout2)

    @staticmethod
    def load(store, data: bytes, storage=None, sizes=None) -> CarrayMeta:
        """The metadata of a stored version-2 list carray and of its parts, checked.

        Raises
        ------
        FormatError
            Malformed metadata, offsets that are not ``int64``, a validity or
            child that is missing or of another length than the offsets say.
        DatasetNotFoundError
            A child's folder is missing.
        """
        where = store.path("meta/storage")
        obj, storage = load_kind_storage(data, where)
        if obj.get("dtype") != "<i8":
            raise FormatError(f"{where}: the offsets of a list carray are int64 ('<i8'), not "
                              f"{obj.get('dtype')!r:.40}")
        entry = obj.get(LIST_KEY)
        typ, level = _load_entry(entry, where)
        sizes = load_sizes(store.get("meta/sizes"), store.path("meta/sizes"))
        if len(sizes.shape) != 1:
            raise FormatError(f"{store.path('meta/sizes')}: a list carray is one-dimensional")
        length = sizes.shape[0]
        layout = ListLayout2(typ, level, nullable=bool(typ.nullable))
        for folder, _, _ in _children(typ):
            layout.children[folder] = load_carray(store.sub(folder))
        _verify_part_attrs(store, [f for f, _, _ in _children(typ)] +
                           ([VALIDITY_DIR] if typ.nullable else []))
        if typ.nullable:
            valid = load_carray(store.sub(VALIDITY_DIR))
            if valid.atom != np.dtype(bool) or valid.length != length or \
                    valid.chunklen != storage.chunklen:
                raise FormatError(f"{store.path(VALIDITY_DIR)}: the validity of a list carray "
                                  f"is {length} bools in chunks of {storage.chunklen}")
        fill = np.empty((), dtype=object)
        fill[()] = decode_list_dflt(entry.get("dflt"), typ, where)
        return CarrayMeta(np.dtype(object), stored_cparams(store, storage), storage.chunklen,
                          storage.expectedlen, fill, length, sizes.cbytes, sizes.nbytes, layout)

    @staticmethod
    def engine(meta: CarrayMeta, store, cache_budget: int, new: bool) -> ListV2Engine:
        """A ListV2Engine over its offsets, validity and children's engines (each
        child with its own statistics); new parts' ``meta/storage`` staged at once.

        Raises
        ------
        FormatError
            No codec of version-2 list carrays is installed.
        """
        layout = meta.kind
        where = store.root if store is not None else "list carray"

        def open_part(folder, pmeta):
            sub = store.sub(folder) if store is not None else None
            if new and sub is not None:
                sub.makedirs("data", "meta")
                stage_storage(sub, pmeta)
                sub.set(ATTRS_FILE, b"{}\n")     # (bcolz opens a carray with its attrs)
            return new_engine(pmeta, sub, cache_budget, new=new)

        children = [(folder, open_part(folder, cmeta))
                    for folder, cmeta in layout.children.items()]
        if new:
            offsets = ChunkEngine(np.dtype("<i8"), meta.cparams, meta.chunklen, store,
                                  cache_budget=cache_budget)
        else:
            nfull, nleft = divmod(meta.length, meta.chunklen)
            offsets = ChunkEngine(np.dtype("<i8"), meta.cparams, meta.chunklen, store, nfull,
                                  nleft, _offsets_cbytes(store, meta), cache_budget=cache_budget)
        validity = None
        if layout.nullable:
            vmeta = CarrayMeta(np.dtype(bool), meta.cparams, meta.chunklen, meta.expectedlen,
                               np.array(True)) if new else load_carray(store.sub(VALIDITY_DIR))
            validity = open_part(VALIDITY_DIR, vmeta)

        def stage_part(folder, engine):
            if store is None:
                return
            sub = store.sub(folder if folder is not None else VALIDITY_DIR)
            nbytes = ListV2Engine.part_nbytes(engine)
            stage_sizes(sub, (engine.length,), nbytes, engine.cbytes)
            stage_stats(sub, engine)

        if not LIST_CODECS:                 # pragma: no cover - the list kind registers one
            raise FormatError(f"{where}: no codec of version-2 list carrays is installed")
        codec = LIST_CODECS[0](layout.listtype, where, layout.children)
        return ListV2Engine(offsets, validity, children, codec, stage_part, where)

    @staticmethod
    def stage_storage(store, meta: CarrayMeta, name: str) -> None:
        """The offsets' bcolz keys (``<i8``, which bcolz reads) and the ``list``
        entry of version 2."""
        layout = meta.kind
        typ = layout.listtype
        dflt = meta.dflt[()] if meta.dflt is not None else None
        entry = {"version": LIST2_VERSION, "level": int(layout.level),
                 "type": type_to_json(typ), "children": list(layout.children),
                 "validity": VALIDITY_DIR if layout.nullable else None,
                 "dflt": encode_list_dflt(dflt, typ)}
        store.set("meta/storage", dump_kind_storage(
            "<i8", meta.cparams.to_dict(), meta.chunklen, meta.expectedlen, 0, LIST_KEY,
            entry))


def _offsets_cbytes(store, meta: CarrayMeta) -> int:
    """The compressed bytes of the offsets' chunks (the column's sizes less its parts')."""
    total = int(meta.cbytes)
    for folder, cmeta in meta.kind.children.items():
        total -= int(cmeta.cbytes)
        valid = getattr(nullable_layout(cmeta), "validity", None)
        if valid is not None:
            total -= int(valid.cbytes)
    if meta.kind.nullable and store is not None:
        try:
            total -= int(json.loads(bytes(store.sub(VALIDITY_DIR).get("meta/sizes")))["cbytes"])
        except (ValueError, KeyError, TypeError):
            pass
    return max(total, 0)


class _ListKind1(KindFiles):
    """How a version-1 list carray's files are read and written: a vlen carray
    of encoded items (no statistics, no index)."""

    def of_storage(self, storage) -> bool:
        return storage.kind is LIST_STORAGE

    def of_meta(self, meta) -> bool:
        return isinstance(meta.kind, ListLayout) and not isinstance(meta.kind, ListLayout2)

    @staticmethod
    def load(store, data: bytes, storage, sizes) -> CarrayMeta:
        """The metadata of its vlen carray of encoded items, checked
        (:func:`~bcolz_store.kinds.vlen.files.load_vlen_carray`), with the list type
        and level of the ``list`` entry."""
        plain = StorageMeta(storage.dtype, storage.cparams, storage.chunklen,
                            storage.expectedlen, storage.dflt, kind=VLEN_STORAGE,
                            entry=VlenMeta("bytes", nullable=True))
        meta = load_vlen_carray(store, sizes, plain)
        meta.kind = ListLayout(*storage.entry)
        return meta

    @staticmethod
    def engine(meta: CarrayMeta, store, cache_budget: int, new: bool) -> ListEngine:
        """A ListEngine over a VlenEngine of the encoded items (bytes, missing allowed)."""
        nfull, nleft = divmod(0 if new else meta.length, meta.chunklen)
        layout = meta.kind
        items = VlenMeta("bytes", layout.level, True)
        return ListEngine(VlenEngine(items, meta.chunklen, store, nfull, nleft,
                                     0 if new else meta.nbytes, 0 if new else meta.cbytes,
                                     cache_budget=cache_budget), layout.listtype)

    @staticmethod
    def stage_storage(store, meta: CarrayMeta, name: str) -> None:
        """bcolz's keys, the ``dtype`` text naming the carray by its folder
        ``name``, the ``dflt`` and ``list`` entry of its type."""
        store.set("meta/storage", dump_storage(StorageMeta(
            meta.atom, meta.cparams.to_dict(), meta.chunklen, meta.expectedlen, meta.dflt,
            list_dtype_text(name), LIST_STORAGE, (meta.kind.listtype, meta.kind.level))))


LIST2_KIND = _ListKind2()
KIND_FILES.append(LIST2_KIND)
LIST1_KIND = _ListKind1()
KIND_FILES.append(LIST1_KIND)
