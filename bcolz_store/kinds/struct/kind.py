"""The struct column kind: named fields, each a carray of its own kind in a
sub-folder of the column's (layout: :mod:`bcolz_store.kinds.struct.meta`).

Arrow rows of a ``struct<...>`` type encode field by field into the fields'
engines (:mod:`.codec`), through each field's own kind where it has one, and
decode back into a struct's buffers the same way.  ``c[:]`` still gives
dicts (None for a missing struct), as the struct engine reads them.
"""

from __future__ import annotations

import numpy as np

from .meta import StructMeta
from ..nullable.meta import NullableLayout
from ..vlen.meta import VlenMeta
from .types import arrow_type_of, column_type_of_arrow, field_holds_nulls, struct_of
from .new import new_struct_meta, struct_request
from . import files  # noqa: F401  (registers how its carrays are read and written)
from ..base import kind_for_arrow, kind_of, register
from ..composite import CompositeKind
from ..buffers import ArrowBuffers
from .codec import decode_struct, encode_struct

__all__ = ["StructKind"]


def _plain_field(pa, typ) -> bool:
    """Whether a struct field of Arrow type ``typ`` is one the struct kind takes:
    fixed numbers, booleans, temporals, text, bytes, decimals, nested structs
    of those (dictionaries, lists and maps keep the items path)."""
    if pa.types.is_struct(typ):
        return all(_plain_field(pa, typ.field(i).type) for i in range(typ.num_fields))
    if pa.types.is_dictionary(typ) or pa.types.is_list(typ) or pa.types.is_large_list(typ) \
            or pa.types.is_map(typ) or pa.types.is_fixed_size_list(typ) or \
            pa.types.is_null(typ) or pa.types.is_float16(typ):
        return False
    if pa.types.is_timestamp(typ) and typ.tz is not None:
        return False
    return (pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_boolean(typ)
            or pa.types.is_timestamp(typ) or pa.types.is_duration(typ)
            or pa.types.is_decimal(typ) or pa.types.is_string(typ)
            or pa.types.is_large_string(typ) or pa.types.is_binary(typ)
            or pa.types.is_large_binary(typ) or pa.types.is_string_view(typ)
            or pa.types.is_binary_view(typ))


def _python_plain(smeta: StructMeta) -> bool:
    """Whether every field of a stored struct reads the same Python items through
    pyarrow's ``to_pylist`` as through numpy's ``tolist``."""
    for field in smeta.fields:
        meta = field.meta
        slot = getattr(meta, "kind", None)
        text = isinstance(slot, VlenMeta)
        if isinstance(slot, StructMeta):
            if not _python_plain(slot):
                return False
        elif slot is not None and not isinstance(slot, (VlenMeta, NullableLayout)):
            return False        # a decimal, list or categorical field
        elif not text and not (meta.atom.kind in "iub" or
                               (meta.atom.kind == "f" and meta.atom.itemsize >= 4)):
            return False
        elif not text and meta.atom.shape:
            return False
    return True


def _same_text(pa, typ, want) -> bool:
    """Whether ``typ`` and ``want`` are both text (or both bytes) types."""
    text = ("string", "large_string", "string_view")
    blob = ("binary", "large_binary", "binary_view")
    for group in (text, blob):
        if any(getattr(pa.types, f"is_{g}")(typ) for g in group) and \
                any(getattr(pa.types, f"is_{g}")(want) for g in group):
            return True
    return False


@register
class StructKind(CompositeKind):
    """A struct column: its :class:`~bcolz_store.struct` type, and (for a stored
    carray) its fields' metadata, through which each field's kind is found."""

    key = "struct"

    new_rank = 10           # a struct dtype first: its fields are of any kind

    @classmethod
    def new_request(cls, array, dtype, nullable):
        """A :class:`~.types.struct` ``dtype``, or a struct carray's own type."""
        return struct_request(array, dtype)

    @classmethod
    def new_meta(cls, request, making):
        return new_struct_meta(request, making)

    def __init__(self, stype, smeta: StructMeta | None = None):
        self.stype = stype
        self._smeta = smeta

    @classmethod
    def of_meta(cls, meta):
        smeta = getattr(meta, "kind", None)
        if not isinstance(smeta, StructMeta):
            return None
        return cls(struct_of(meta), smeta)

    # ------------------------------------------------------------ its carrays
    has_fields = True

    @classmethod
    def field_of(cls, meta, engine, name: str):
        """``(engine, meta)`` of field ``name``: its engine inside ``engine``
        (a StructEngine) and its carray's metadata.

        Raises
        ------
        KeyError
            No such field.
        """
        found = engine.field_engine(name)     # (KeyError naming the fields)
        return found, next(f.meta for f in meta.kind.fields if f.name == name)

    @classmethod
    def column_type(cls, meta, engine):
        """The carray's :class:`~.types.struct` type (its categorical fields'
        categories read from ``engine``)."""
        return struct_of(meta, engine)

    @classmethod
    def isnull(cls, engine, meta, length: int, items) -> np.ndarray:
        if engine.validity is None:
            return np.zeros(length, dtype=bool)
        return ~np.asarray(engine.validity.read_range(0, length), dtype=bool)

    ordered_items = False       # (no order: a table is not sorted by them)

    @classmethod
    def of_arrow(cls, pa, typ):
        if not pa.types.is_struct(typ) or not _plain_field(pa, typ):
            return None
        try:
            stype = column_type_of_arrow(typ, True)
        except TypeError:
            return None
        return cls(stype)

    # ------------------------------------------------------------ types

    def _field_metas(self) -> list:
        if self._smeta is None:
            raise TypeError("the struct kind of an Arrow type has no stored fields; use the "
                            "carray's kind (carray.kind)")
        return [f.meta for f in self._smeta.fields]

    def _field_types(self, pa) -> list:
        """Each field's Arrow type: its kind's, else its type's."""
        out = []
        metas = [f.meta for f in self._smeta.fields] if self._smeta is not None else \
            [None] * len(self.stype.fields)
        for (_, ftype, _), fmeta in zip(self.stype.fields, metas):
            fkind = kind_of(fmeta) if fmeta is not None else None
            out.append(fkind.arrow_type(pa) if fkind is not None else arrow_type_of(ftype))
        return out

    def arrow_type(self, pa):
        flags = [flag or (f.meta is not None and field_holds_nulls(f.meta))
                 for (_, _, flag), f in zip(self.stype.fields, self._smeta.fields)] \
            if self._smeta is not None else [flag for _, _, flag in self.stype.fields]
        return pa.struct([pa.field(name, ftype, nullable=flag)
                          for (name, _, _), ftype, flag in
                          zip(self.stype.fields, self._field_types(pa), flags)])

    def dtype(self):
        return self.stype

    def accepts(self, pa, typ) -> bool:
        """Whether Arrow rows of ``typ`` encode as they are: a struct of the same
        field names, in order, each of a type its field takes (its kind's, the
        same fixed type, or text for text and bytes for bytes)."""
        if not pa.types.is_struct(typ) or typ.num_fields != len(self.stype.fields):
            return False
        metas = [f.meta for f in self._smeta.fields] if self._smeta is not None else \
            [None] * typ.num_fields
        for i, ((name, _, _), want, fmeta) in enumerate(zip(self.stype.fields,
                                                            self._field_types(pa), metas)):
            field = typ.field(i)
            if field.name != name:
                return False
            fkind = kind_of(fmeta) if fmeta is not None else kind_for_arrow(pa, field.type)
            if fkind is not None:
                if not fkind.accepts(pa, field.type):
                    return False
            elif field.type != want and not _same_text(pa, field.type, want):
                return False
        return True

    # ------------------------------------------------------------ rows

    def encode(self, engine, buffers: ArrowBuffers) -> None:
        import pyarrow as pa
        encode_struct(pa, engine, buffers, self._field_metas(), self._field_types(pa))

    def decode(self, engine, start: int, stop: int) -> ArrowBuffers:
        import pyarrow as pa
        return decode_struct(pa, engine, int(start), int(stop), self._field_metas(),
                             self._field_types(pa), self.arrow_type(pa))

    def to_python(self, buffers: ArrowBuffers) -> np.ndarray:
        """Dicts (None for a missing struct), as pyarrow's ``to_pylist`` gives them."""
        import pyarrow as pa
        from ..arrow import to_pyarrow
        items = to_pyarrow(pa, buffers, self.arrow_type(pa)).to_pylist()
        return np.fromiter(items, dtype=object, count=len(items))

    def read_python(self, engine, start: int, stop: int) -> np.ndarray | None:
        """Rows ``[start, stop)`` as ``c[:]`` gives them (dicts, None for a
        missing struct), through Arrow, when pyarrow is installed and every
        field's items are the same either way (numbers, booleans, text,
        bytes, structs of them); else None (the engine reads them)."""
        if self._smeta is None or not _python_plain(self._smeta):
            return None
        try:
            import pyarrow as pa
        except ImportError:                         # pragma: no cover - pyarrow is optional
            return None
        return self.to_python(self.decode(engine, start, stop))

    # equal when of the same struct type (the stored fields are not compared)
    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.stype == other.stype

    def __hash__(self) -> int:
        return hash((type(self), self.stype))

    def __repr__(self) -> str:
        return f"StructKind({self.stype!r})"
