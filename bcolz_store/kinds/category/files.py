"""The files of a categorical carray: its codes, a carray of bcolz's layout
whose ``meta/storage`` has the ``categorical`` entry (kinds/category/meta.py),
and its categories, a vlen carray in ``ROOT/categories``, read into a
:class:`~bcolz_store.kinds.category.engine.CategoryEngine` whose codes keep
the chunk statistics and index.

Registered in :data:`~bcolz_store.datasets.carray_files.KIND_FILES`.

Source: this library's own format (docs/format.md, "Categorical columns"),
inside bcolz format v1.0's folder layout (seeds/001).
"""

from __future__ import annotations

import numpy as np

from ...chunks.stats import stats_kind
from ...errors import FormatError
from ...format.meta import StorageMeta, dump_storage
from ...datasets.carray_files import (KIND_FILES, CarrayMeta, KindFiles, attach_chunk_stats,
                                      chunk_engine, fixed_meta, load_carray, stage_sizes,
                                      stage_storage)
from ..vlen.engine import VlenEngine
from ..vlen.files import vlen_engine
from ..vlen.meta import VlenMeta
from .engine import CategoryEngine
from .meta import CATEGORIES_DIR, CategoryLayout, category_dtype_text
from .meta_storage import CATEGORY_STORAGE

__all__ = ["CATEGORY_FILES"]


def _load(store, sizes, storage: StorageMeta) -> CarrayMeta:
    """The metadata of a categorical carray: its codes, read as any carray's,
    and its categories, a vlen carray beside them.

    Raises
    ------
    FormatError
        Categories that are not a vlen carray without missing items, codes
        as :func:`~.carray_files.fixed_meta`, or a ``dflt`` that is not a code.
    DatasetNotFoundError
        The categories' folder is missing.
    """
    categories = load_carray(store.sub(CATEGORIES_DIR))
    where = store.path(CATEGORIES_DIR)
    if not isinstance(categories.kind, VlenMeta) or categories.kind.nullable:
        raise FormatError(f"{where}: the categories of a categorical carray must be a vlen "
                          f"carray without missing items")
    plain = StorageMeta(storage.dtype, storage.cparams, storage.chunklen, storage.expectedlen,
                        storage.dflt)
    codes = fixed_meta(store, sizes, plain, one_d="a categorical")
    items = VlenMeta(categories.kind.kind, nullable=True)
    atom = items.dtype
    dflt = np.empty((), dtype=atom)
    dflt[()] = None                 # the item of a code >= 0 is read when asked for
    code = int(storage.dflt)
    if not -1 <= code < categories.length:
        raise FormatError(f"{store.path('meta/storage')}: dflt {code} is not a code of the "
                          f"{categories.length} categories (nor -1)")
    return CarrayMeta(atom, codes.cparams, codes.chunklen, codes.expectedlen, dflt,
                      codes.length, codes.cbytes, codes.length * storage.dtype.itemsize,
                      CategoryLayout(storage.entry, categories, items, code))


def _engine(meta: CarrayMeta, store, cache_budget: int, new: bool) -> CategoryEngine:
    """A CategoryEngine: codes in a ChunkEngine, categories in a VlenEngine (when
    ``new``, the categories ``meta.kind.initial`` are staged at once)."""
    slot = meta.kind
    codes = slot.categorical.codes
    sub = store.sub(CATEGORIES_DIR) if store is not None else None
    cats = slot.categories
    if new:
        categories = VlenEngine(cats.kind, cats.chunklen, sub, cache_budget=cache_budget)
        categories.append(slot.initial)
        if sub is not None:
            sub.makedirs("data", "meta")
            stage_storage(sub, cats)
            categories.stage_leftover()
            stage_sizes(sub, (categories.length,), categories.nbytes, categories.cbytes)
    else:
        categories = vlen_engine(cats.kind, cats, sub, cache_budget, False)
    return CategoryEngine(chunk_engine(meta, store, cache_budget, new, codes), categories,
                          meta.atom)


class _CategoryFiles(KindFiles):
    """How a categorical carray's files are read and written."""

    chunked = True

    def of_storage(self, storage) -> bool:
        return storage.kind is CATEGORY_STORAGE

    def of_meta(self, meta) -> bool:
        return isinstance(meta.kind, CategoryLayout)

    def of_engine(self, engine) -> bool:
        return isinstance(engine, CategoryEngine)

    def stats_engine(self, engine):
        """Its codes keep the statistics and index."""
        return engine.codes

    @staticmethod
    def load(store, data: bytes, storage, sizes) -> CarrayMeta:
        """As ``_load``: codes and categories, checked."""
        return _load(store, sizes, storage)

    @staticmethod
    def engine(meta: CarrayMeta, store, cache_budget: int, new: bool) -> CategoryEngine:
        """A CategoryEngine whose codes keep their statistics (``category:``) and index."""
        engine = _engine(meta, store, cache_budget, new)
        kind = stats_kind(meta.kind.categorical.codes, categorical=True)
        attach_chunk_stats(engine.codes, kind, meta, store, new)
        return engine

    @staticmethod
    def stage_storage(store, meta: CarrayMeta, name: str) -> None:
        """The codes' ``meta/storage``, its ``dtype`` text naming the carray by its
        folder ``name`` for bcolz's refusal, ``dflt`` the code of the default."""
        slot = meta.kind
        codes = slot.categorical.codes
        store.set("meta/storage", dump_storage(StorageMeta(
            codes, meta.cparams.to_dict(), meta.chunklen, meta.expectedlen,
            np.array(slot.dflt_code, dtype=codes), category_dtype_text(codes, name),
            CATEGORY_STORAGE, slot.categorical)))


CATEGORY_FILES = _CategoryFiles()
KIND_FILES.append(CATEGORY_FILES)
