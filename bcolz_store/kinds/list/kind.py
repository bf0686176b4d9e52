"""The list kind: list and map columns (``meta/storage``'s ``list`` entry,
kinds/list/meta.py): of layout version 2, end offsets and child carrays
(:class:`~bcolz_store.kinds.list.engine2.ListV2Engine`, rows through
:mod:`.layout2`), or of version 1, their items encoded per
kinds/list/meta_items.py in a vlen carray of bytes
(:class:`~bcolz_store.kinds.list.engine.ListEngine`).

Arrow rows encode and decode through :mod:`.codec`, all items at once with
numpy; the kind covers lists (``list``, ``large_list``) and maps whose
elements are fixed numbers, bools, timestamps and durations, str or bytes
(:func:`.codec.fast_type`).  Other list types (fixed-size lists, nested
lists, struct or decimal elements) have no kind (``kind_of``) and keep the
item-by-item path; the class still holds them (:meth:`ListKind.holds`) for
the carray's hooks.
"""

from __future__ import annotations

import numpy as np

from .engine2 import ListV2Engine
from .engine import PreparedLists
from .meta import ListType, MapType, list_layout
from .types import as_list_items
from ..arrow import from_pyarrow, to_pyarrow
from .types import list_request, new_list_meta
from . import files  # noqa: F401  (registers how its carrays are read and written)
from ..base import ColumnKind, register
from ..buffers import ArrowBuffers
from .arrow_types import arrow_list_type, list_arrow_type
from .codec import decode_raw, encode_raw, fast_type
from .layout2 import ListCodec2, as_arrow_buffers

__all__ = ["ListKind"]

_ARROW_ELEMENTS = ("integer", "floating", "boolean", "timestamp", "duration", "string",
                   "large_string", "binary", "large_binary")


def _arrow_element(pa, typ) -> bool:
    return any(getattr(pa.types, f"is_{name}")(typ) for name in _ARROW_ELEMENTS)


def _arrow_fast(pa, typ) -> bool:
    """Whether the Arrow type ``typ`` is a list or map of elements :mod:`.codec` takes."""
    if pa.types.is_map(typ):
        return _arrow_element(pa, typ.key_type) and _arrow_element(pa, typ.item_type)
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        return _arrow_element(pa, typ.value_type)
    return False


def _recorded_fast(typ) -> bool:
    """Whether a type read from Arrow (its ``arrow`` record) is still one the
    codec's buffers match (not a view type, a date32, a fixed-size binary...)."""
    if getattr(typ, "arrow", None) is None:
        return True
    try:
        import pyarrow as pa
    except ImportError:         # pragma: no cover - a record needs pyarrow to be made
        return True
    return _arrow_fast(pa, list_arrow_type(pa, typ))


@register
class ListKind(ColumnKind):
    """A list or map column: ``listtype`` its ListType or MapType."""

    key = "list"

    new_rank = 30

    @classmethod
    def new_request(cls, array, dtype, nullable):
        """A list or map ``dtype``, or a list carray's own type."""
        return list_request(array, dtype)

    @classmethod
    def new_meta(cls, request, making):
        return new_list_meta(request, making.array, making.cparams, making.dflt,
                             making.expectedlen, making.chunklen)

    def __init__(self, listtype):
        self.listtype = listtype

    @classmethod
    def of_meta(cls, meta) -> "ListKind | None":
        typ = getattr(list_layout(meta), "listtype", None)
        if isinstance(typ, (ListType, MapType)) and fast_type(typ) and _recorded_fast(typ):
            return cls(typ)
        return None

    @classmethod
    def holds(cls, meta) -> bool:
        """A list or map carray of any type (one the codec does not take as well)."""
        return list_layout(meta) is not None

    @classmethod
    def list_type(cls, meta):
        return meta.kind.listtype

    @classmethod
    def isnull(cls, engine, meta, length: int, items) -> np.ndarray:
        if isinstance(engine, ListV2Engine):
            return engine.missing(0, length)
        out = np.zeros(length, dtype=bool)     # a missing list: a missing encoded item
        step = max(int(engine.chunklen), 1)
        for start in range(0, length, step):
            raw = engine.inner.read_range(start, min(length, start + step))
            out[start:start + len(raw)] = [v is None for v in raw.tolist()]
        return out

    @classmethod
    def to_items(cls, value, dtype, meta, arrlen, where) -> np.ndarray:
        """One list item or several, as an object array (:func:`.types.as_list_items`).

        Raises
        ------
        ValueError
            Items not of the list type, or not broadcast to ``arrlen``.
        """
        return as_list_items(value, meta.kind.listtype, arrlen, where)

    variable_items = True
    ordered_items = False       # (no order: a table is not sorted by them)

    @classmethod
    def of_arrow(cls, pa, typ) -> "ListKind | None":
        if not _arrow_fast(pa, typ):
            return None
        listtype = arrow_list_type(pa, typ, True)
        return cls(listtype) if fast_type(listtype) else None

    def arrow_type(self, pa):
        return list_arrow_type(pa, self.listtype)

    def dtype(self):
        return self.listtype

    def _where(self, engine) -> str:
        store = getattr(engine, "store", None)
        return store.root if store is not None else "list carray"

    def encode(self, engine, buffers: ArrowBuffers) -> None:
        """Append the Arrow rows ``buffers`` to the list engine ``engine``.

        Raises
        ------
        ValueError
            A missing list in a type that is not nullable, a missing element
            where none may be (as :func:`.codec.encode_raw`), before anything
            changes; Arrow rows of another type whose values do not fit.
        TypeError
            Arrow rows of a type that does not cast to the kind's.
        """
        where = self._where(engine)
        if buffers.type is not None:
            buffers = self._cast(buffers, where)
        if isinstance(engine, ListV2Engine):        # layout 2: offsets and child columns
            engine.append(buffers)
            return
        engine.append(PreparedLists(encode_raw(buffers, self.listtype, where)))

    def _cast(self, buffers: ArrowBuffers, where: str) -> ArrowBuffers:
        """``buffers`` of another Arrow type (list<int64> rows for a list of
        int16...) cast to the kind's, refusing values that do not fit."""
        import pyarrow as pa        # (buffers with a type were made by pyarrow)
        own = self.arrow_type(pa)
        if buffers.type == own:
            return buffers
        try:
            arr = to_pyarrow(pa, buffers, buffers.type).cast(own)
        except pa.ArrowInvalid as err:
            raise ValueError(f"{where}: Arrow rows of {buffers.type} do not fit {own}: "
                             f"{err}") from None
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
            raise TypeError(f"{where}: Arrow rows of {buffers.type} cannot be rows of "
                            f"{own}: {err}") from None
        return from_pyarrow(pa, arr)

    def decode(self, engine, start: int, stop: int) -> ArrowBuffers:
        """Rows ``[start, stop)`` as Arrow buffers.

        Raises
        ------
        FormatError
            A damaged item.
        """
        if isinstance(engine, ListV2Engine):
            return as_arrow_buffers(engine.read_buffers(start, stop))
        raw = engine.inner.read_range(start, stop)
        return decode_raw(raw, self.listtype, self._where(engine))

    def to_python(self, buffers: ArrowBuffers):
        """The items as the carray's reads give them (arrays, lists of str,
        lists of ``(key, value)`` tuples; None where missing)."""
        return ListCodec2(self.listtype, "list rows").to_python(buffers)
