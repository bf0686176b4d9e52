"""The type of a struct carray (or ctable column): named fields of any kind.

A struct carray reads ``dict`` items (``{field: value}``; None for a missing
struct), as pyarrow's ``to_pylist`` gives them, and stores each field as a
complete carray of its own kind in a sub-folder of the column's folder
(layout in :mod:`bcolz_store.kinds.struct.meta`)::

    >>> import bcolz_store as bcolz
    >>> c = bcolz.carray([{"a": 1, "b": "x"}, {"a": 2, "b": "yz"}],
    ...                  dtype=bcolz.struct([("a", "int32"), ("b", "str")]))
    >>> c[:].tolist()
    [{'a': 1, 'b': 'x'}, {'a': 2, 'b': 'yz'}]
    >>> c.field("b")[:].tolist()      # also c["b"]
    ['x', 'yz']

A field's type is a numpy dtype (or its name), ``'str'``/``'bytes'`` or a
:class:`~bcolz_store.vlen` (items of any length), a
:class:`~bcolz_store.category`, a :class:`~bcolz_store.decimal`, or another
:class:`struct`.
"""

from __future__ import annotations

import numpy as np

from ..category.types import category
from ..decimal.types import decimal
from ..category.meta import CategoryLayout
from ..list.meta import ListLayout, ListType, MapType
from ..decimal.meta import DecimalLayout
from ..nullable.meta import NullableLayout
from ..vlen.meta import VlenMeta
from ...format.names import check_name
from .meta import StructMeta
from ..vlen.types import vlen, vlen_of

__all__ = ["ARROW_TYPE_HOOKS", "KIND_OF_ARROW_HOOKS", "arrow_type_of", "column_type_of_arrow",
           "field_holds_nulls", "field_type", "struct", "struct_of"]

_VLEN_NAMES = {"str": "str", "bytes": "bytes", "vlen-str": "str", "vlen-bytes": "bytes",
               str: "str", bytes: "bytes"}


def field_type(kind, where: str = "struct field"):
    """A field's type as a struct keeps it: a numpy dtype, a vlen, category,
    decimal or struct type (or another object a carray accepts as ``dtype``).

    Raises
    ------
    TypeError
        A numpy dtype of objects, of several fields or of a sub-array shape
        (a struct field holds one scalar, text or nested item per row).
    """
    if isinstance(kind, (vlen, category, decimal, struct, ListType, MapType)):
        return kind
    if isinstance(kind, (str, type)) and kind in _VLEN_NAMES:
        return vlen(_VLEN_NAMES[kind], nullable=True)
    try:
        dtype = np.dtype(kind)
    except TypeError:
        return kind                    # another kind of column (its carray decides)
    if dtype.kind in "OV" or dtype.shape:
        raise TypeError(f"{where}: a struct field cannot be of dtype {dtype} (give a "
                        f"struct for nested fields, 'str' for text)")
    return dtype


class struct:
    """struct(fields, nullable=False)

    The dtype of a struct carray or ctable column.

    Parameters
    ----------
    fields : sequence of (name, type) or (name, type, nullable)
        The fields in order: a distinct str name each, a type (see
        :func:`field_type`) and whether Arrow marks the field nullable
        (default: True for text, categorical and struct types, as they
        may hold missing items; False otherwise).
    nullable : bool, default False
        Whether an item may be missing (None), kept in a validity carray.

    Raises
    ------
    ValueError
        No fields, repeated names, a malformed field.
    TypeError
        A field type no carray can hold.

    Notes
    -----
    Layout: this library's own format (docs/format.md, "Struct columns"),
    inside bcolz format v1.0's folder layout (seeds/001: nested columns as
    sub-folders); the real bcolz refuses such a column, naming it.
    """

    __slots__ = ("fields", "nullable")

    def __init__(self, fields, nullable=False):
        out, seen = [], set()
        for entry in fields:
            if not isinstance(entry, (tuple, list)) or len(entry) not in (2, 3):
                raise ValueError(f"a struct field is (name, type) or (name, type, "
                                 f"nullable), not {entry!r:.80}")
            name = check_name(entry[0], "struct field")
            if name in seen:
                raise ValueError(f"struct field names must be unique: {name!r} appears twice")
            seen.add(name)
            kind = field_type(entry[1], f"struct field {name!r}")
            flag = bool(entry[2]) if len(entry) == 3 else _default_nullable(kind)
            out.append((name, kind, flag))
        if not out:
            raise ValueError("a struct has at least one field")
        self.fields = tuple(out)
        self.nullable = bool(nullable)

    @property
    def names(self) -> list:
        """The field names, in order."""
        return [f[0] for f in self.fields]

    def __getitem__(self, name):
        for field in self.fields:
            if field[0] == name:
                return field[1]
        raise KeyError(f"no field named {name!r}; fields are {self.names}")

    def __repr__(self):
        inner = ", ".join(f"({n!r}, {_show(k)})" for n, k, _ in self.fields)
        return f"struct([{inner}]{', nullable=True' if self.nullable else ''})"

    def __eq__(self, other):
        return isinstance(other, struct) and (self.fields, self.nullable) == \
            (other.fields, other.nullable)

    def __hash__(self):
        return hash(("struct", self.nullable, tuple((n, str(k)) for n, k, _ in self.fields)))


def _default_nullable(kind) -> bool:
    """Whether a field of ``kind`` may hold nulls when its entry does not say."""
    if isinstance(kind, vlen):
        return kind.nullable is not False
    if isinstance(kind, (struct, ListType, MapType)):
        return bool(kind.nullable)
    if isinstance(kind, decimal):
        return kind.nullable is True
    return isinstance(kind, category)


def field_holds_nulls(meta) -> bool:
    """Whether the carray of metadata ``meta`` (a struct's field) may hold nulls."""
    slot = getattr(meta, "kind", None)
    if isinstance(slot, (NullableLayout, CategoryLayout)):
        return True
    if isinstance(slot, DecimalLayout):
        return bool(slot.decimal.nullable)
    if isinstance(slot, ListLayout):
        return bool(getattr(slot.listtype, "nullable", False))
    return isinstance(slot, (VlenMeta, StructMeta)) and bool(slot.nullable)


def _show(kind) -> str:
    return repr(str(kind)) if isinstance(kind, np.dtype) else repr(kind)


def struct_of(meta, engine=None):
    """The :class:`struct` type of a carray's metadata (None unless a struct
    carray); with its engine, the categories of categorical fields too.  A
    field that may hold nulls (its carray's kind allows them) is nullable,
    whatever its entry says, so that its Arrow field says so."""
    found = getattr(meta, "kind", None)
    if not isinstance(found, StructMeta):
        return None
    engines = [f[1] for f in engine.fields] if engine is not None else [None] * len(found.fields)
    return struct([(f.name, _kind_of_meta(f.meta, e), f.nullable or field_holds_nulls(f.meta))
                   for f, e in zip(found.fields, engines)], found.nullable)


def _kind_of_meta(meta, engine=None):
    """The type of a field from its carray metadata (and engine)."""
    slot = getattr(meta, "kind", None)
    if isinstance(slot, DecimalLayout):
        dec = slot.decimal
        return decimal(dec.precision, dec.scale, dec.nullable)
    if isinstance(slot, StructMeta):
        return struct_of(meta, engine)
    if isinstance(slot, CategoryLayout):
        cats = engine.lookup()[:-1].tolist() if engine is not None else None
        return category(cats, slot.categorical.ordered)
    if isinstance(slot, VlenMeta):
        return vlen_of(slot)
    if isinstance(slot, ListLayout):
        return slot.listtype
    return meta.atom


# --- Arrow types (pyarrow imported here, when asked) ------------------------------

#: ``hook(kind) -> Arrow type or None`` and ``hook(pa, typ, nullable) -> kind or None``:
#: the Arrow types of kinds defined above this module (lists and maps, registered
#: by :mod:`bcolz_store.kinds.struct.interop_arrow` when it is first imported)
ARROW_TYPE_HOOKS: list = []
KIND_OF_ARROW_HOOKS: list = []


def arrow_type_of(kind):
    """The Arrow type of a column or field of type ``kind``.

    Raises
    ------
    TypeError
        A kind with no Arrow type here.
    """
    import pyarrow as pa
    for hook in ARROW_TYPE_HOOKS:
        found = hook(kind)
        if found is not None:
            return found
    if isinstance(kind, decimal):
        return (pa.decimal128 if kind.bits == 128 else pa.decimal256)(kind.precision,
                                                                      kind.scale)
    if isinstance(kind, struct):
        return pa.struct([pa.field(n, arrow_type_of(k), nullable=flag)
                          for n, k, flag in kind.fields])
    if isinstance(kind, vlen):
        return pa.large_string() if kind.kind == "str" else pa.large_binary()
    if isinstance(kind, category):
        return pa.dictionary(pa.int32(), pa.large_string() if kind.kind != "bytes"
                             else pa.large_binary(), ordered=bool(kind.ordered))
    if isinstance(kind, np.dtype):
        return pa.from_numpy_dtype(kind)
    raise TypeError(f"no Arrow type for a field of {kind!r}")


def column_type_of_arrow(typ, nullable: bool = True):
    """The decimal or struct type of a column of Arrow type ``typ``, else None
    (a struct is ``nullable`` as given: an Arrow column may hold nulls; a
    nested struct as its field's flag says).

    Raises
    ------
    TypeError
        A struct with a field of a type no column kind holds.
    """
    import pyarrow as pa
    if pa.types.is_decimal(typ):
        return decimal(typ.precision, typ.scale)
    if pa.types.is_struct(typ):
        return struct([(typ.field(i).name,
                         _field_of_arrow(pa, typ.field(i).type, typ.field(i).nullable),
                         typ.field(i).nullable) for i in range(typ.num_fields)],
                      nullable=nullable)
    return None


def _is(pa, typ, *names) -> bool:
    return any(getattr(pa.types, f"is_{name}", lambda t: False)(typ) for name in names)


def _field_of_arrow(pa, typ, nullable: bool):
    found = column_type_of_arrow(typ, nullable)
    if found is not None:
        return found
    for hook in KIND_OF_ARROW_HOOKS:       # a list or map field
        found = hook(pa, typ, nullable)
        if found is not None:
            return found
    if _is(pa, typ, "string", "large_string", "string_view"):
        return vlen("str", nullable=True)
    if _is(pa, typ, "binary", "large_binary", "binary_view"):
        return vlen("bytes", nullable=True)
    if pa.types.is_dictionary(typ):
        return category(None, typ.ordered)
    try:
        dtype = np.dtype(typ.to_pandas_dtype())
    except (NotImplementedError, TypeError):
        dtype = np.dtype(object)
    if dtype.kind in "OV":
        raise TypeError(f"no struct field kind holds Arrow type {typ}")
    return dtype
