"""The files of a decimal carray: ``meta/storage`` with its ``decimal`` entry,
``meta/sizes`` and Blosc chunks of 16- or 32-byte items, read into a
:class:`~bcolz_store.kinds.decimal.engine.DecimalEngine`.

Registered in :data:`~bcolz_store.datasets.carray_files.KIND_FILES`, so that
opening, creating and committing any carray of this kind goes through here.
A 128-bit decimal's integers keep chunk statistics (chunks/kind_stats.py);
no decimal keeps an index.

Source: this library's own format (docs/format.md, "Decimal columns"),
inside bcolz format v1.0's folder layout (seeds/001).
"""

from __future__ import annotations

import dataclasses
import decimal as _dec

import numpy as np

from .engine import DecimalEngine
from ...chunks.kind_stats import attach_kind_stats, kind_stats_kind
from ...errors import FormatError
from .meta import (DECIMAL_KEY, DecimalLayout, DecimalMeta, decimal_dtype_text,
                                   dump_decimal, load_decimal, to_decimal)
from ...format.kind_storage import dump_kind_storage, load_kind_storage, storage_text_starts
from ...format.meta import StorageMeta, load_sizes
from ..nullable.engine import NullableEngine
from ..nullable.files import load_validity, nullable_engine, stage_validity
from ..nullable.meta import NullableMeta
from ...datasets.carray_files import (KIND_FILES, CarrayMeta, KindFiles, chunk_engine,
                                      fixed_meta, stored_cparams)

__all__ = ["DECIMAL_KIND", "decimal_carray_meta"]


def decimal_carray_meta(meta: DecimalMeta, cparams, chunklen: int, expectedlen: int,
                        dflt=None, length: int = 0, cbytes: int = 0) -> CarrayMeta:
    """The :class:`CarrayMeta` of a decimal carray: object atom, Decimal ``dflt``.

    Raises
    ------
    TypeError, ValueError
        A ``dflt`` that is not a decimal item of ``meta``.
    """
    value = _dec.Decimal(0) if dflt is None else dflt
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    unscaled = to_decimal(value, meta, "dflt")
    fill = np.empty((), dtype=object)
    fill[()] = _dec.Decimal(unscaled).scaleb(-meta.scale)
    out = CarrayMeta(np.dtype(object), cparams, int(chunklen), int(expectedlen), fill,
                     length, cbytes, kind=DecimalLayout(meta))
    out.nbytes = length * meta.itemsize
    return out


class _DecimalKind(KindFiles):
    """How a decimal carray's files are read and written."""

    def of_data(self, data: bytes) -> bool:
        return storage_text_starts(data, ("decimal128-", "decimal256-"))

    def of_meta(self, meta) -> bool:
        return isinstance(meta.kind, DecimalLayout)

    def of_engine(self, engine) -> bool:
        return isinstance(engine, DecimalEngine)

    def stage_parts(self, store, engine):
        """Its validity's sizes (a nullable decimal's); its integers keep the
        statistics."""
        values = engine.values
        return stage_validity(values) if isinstance(values, NullableEngine) else values

    @staticmethod
    def load(store, data: bytes, storage=None, sizes=None) -> CarrayMeta:
        """The metadata of a stored decimal carray, checked.

        Raises
        ------
        FormatError
            Malformed ``meta/storage`` or ``meta/sizes``, or sizes that do
            not describe items of the decimal's width.
        """
        where = store.path("meta/storage")
        obj, storage = load_kind_storage(data, where)
        meta = load_decimal(obj.get(DECIMAL_KEY), obj["dtype"], where)
        sizes = load_sizes(store.get("meta/sizes"), store.path("meta/sizes"))
        plain = StorageMeta(meta.storage, storage.cparams, storage.chunklen,
                            storage.expectedlen, np.zeros((), dtype=meta.storage))
        values = fixed_meta(store, sizes, plain, one_d="a decimal")
        dflt = obj.get("dflt")
        try:
            out = decimal_carray_meta(meta, stored_cparams(store, storage), values.chunklen,
                                      values.expectedlen, "0" if dflt is None else dflt,
                                      values.length, values.cbytes)
        except (TypeError, ValueError) as err:
            raise FormatError(f"{where}: dflt {dflt!r:.60} is not an item of the carray "
                              f"({err})") from None
        if meta.nullable:           # its validity, checked as a nullable carray's
            values = dataclasses.replace(out, atom=meta.storage)
            load_validity(store, values, NullableMeta("zeros", "dflt"))
            out.kind.nulls = values.kind
        return out

    @staticmethod
    def engine(meta: CarrayMeta, store, cache_budget: int, new: bool) -> DecimalEngine:
        """A DecimalEngine over its integers (and validity); a 128-bit decimal's
        integers keep chunk statistics."""
        engine = _engine(meta, store, cache_budget, new)
        dec = meta.kind.decimal
        if dec.bits == 128:
            values = engine.values
            nullable = values if isinstance(values, NullableEngine) else None
            kind = kind_stats_kind(None, nullable is not None, dec.scale)
            attach_kind_stats(values if nullable is None else values.values, nullable, kind,
                              meta.chunklen, store, meta.length, new)
        return engine

    @staticmethod
    def stage_storage(store, meta: CarrayMeta, name: str) -> None:
        """bcolz's keys, the ``dtype`` text naming the carray by its folder ``name``
        and the ``decimal`` entry."""
        dec = meta.kind.decimal
        store.set("meta/storage", dump_kind_storage(
            decimal_dtype_text(dec, name), meta.cparams.to_dict(), meta.chunklen,
            meta.expectedlen, str(meta.dflt[()]), DECIMAL_KEY, dump_decimal(dec)))


def _engine(meta: CarrayMeta, store, cache_budget: int, new: bool) -> DecimalEngine:
    """A DecimalEngine over a ChunkEngine of its integers, or a NullableEngine of
    them and a validity (a nullable decimal's)."""
    dec = meta.kind.decimal
    where = store.root if store is not None else "decimal carray"
    if dec.nullable:        # V16/V32 values and a validity, as a nullable carray's
        values = nullable_engine(dataclasses.replace(meta, atom=dec.storage, kind=meta.kind.nulls),
                                 store, cache_budget, new)
    else:
        values = chunk_engine(meta, store, cache_budget, new, dec.storage)
    return DecimalEngine(values, dec, where)


DECIMAL_KIND = _DecimalKind()
KIND_FILES.append(DECIMAL_KIND)
