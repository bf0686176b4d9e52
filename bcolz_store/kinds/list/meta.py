"""What ``meta/storage`` says about a list or map carray: the type of its items.

A list carray (each item a variable-length list of elements of one type, or
None) is a vlen carray of ``bytes`` items (kinds/vlen/meta.py) whose items
are the encoded lists (kinds/list/meta_items.py), with the list type described in
its own key::

    ROOT/meta/storage     {"dtype": "list: column 'NAME' holds lists ...",
                           "cparams": {...}, "chunklen": L, "expectedlen": E,
                           "dflt": null, "list": {...}}
    ROOT/meta/sizes       {"shape": [n], "nbytes": N, "cbytes": C}, as a vlen carray's
    ROOT/data/__N.vlen    chunk N, a vlen chunk of the encoded items

``dtype`` starts with ``list:`` and names the column; the real bcolz passes
it to ``numpy.dtype()``, which refuses it (``data type "list: 'NAME' ..." not
understood``), as it refuses vlen and categorical columns.  ``dflt`` is the
fill value of ``resize``: null (a missing list) or the base64 text of an
encoded item.  ``list`` (this library's key; bcolz never reads it)::

    {"version": 1,           the item encoding (kinds/list/meta_items.py)
     "level": 6,             zstd level of new vlen chunks, 1..22
     "type": T}              the type of the items, below

A type ``T`` is a JSON object with ``"type"`` one of:

- ``"list"``: ``item`` (a T), ``nullable`` (a whole list may be missing),
  ``item_nullable`` (elements may be missing), ``size`` (null, or the length
  of every list: Arrow's fixed_size_list), ``large`` (Arrow large_list),
  ``field`` (the name of Arrow's item field), and optionally ``arrow``;
- ``"map"``: ``key`` and ``value`` (T), ``nullable``, ``value_nullable``,
  ``keys_sorted``, ``names`` (Arrow's entries, key and value field names),
  and optionally ``arrow`` (for both: the base64 of the Arrow IPC schema of
  the Arrow type a column came from, written back as it was);
- ``"struct"``: ``fields``, a list of ``[name, T, nullable]`` (at least one);
- ``"fixed"``: ``dtype``, the text of a little-endian numpy dtype
  (``"<i8"``, ``"<M8[ns]"``, ``"|b1"``, ``"<U4"``...);
- ``"str"`` (UTF-8), ``"bytes"``;
- ``"decimal"``: ``precision`` (1..38) and ``scale`` (decimal128 values).

Lists, maps and struct elements nest at most ``MAX_LIST_DEPTH`` (32) deep:
a type is refused when it is made, and a stored type when it is read.

Source: this library's own format (docs/format.md, "List and map columns
(bcolz_store only)"), inside bcolz format v1.0's folder layout (seeds/001).

Pure functions: nothing here opens a file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field as _field

import numpy as np

from ...errors import FormatError, LimitError

__all__ = ["DecimalItems", "LIST_KEY", "LIST_VERSION", "ListLayout", "ListLayout2", "ListType",
           "MAX_LIST_DEPTH", "MapType", "StructItems", "dump_list", "item_type", "list_dtype_text",
           "list_layout", "list_type_of_text", "load_list", "nesting", "type_from_json",
           "type_to_json"]

LIST_KEY = "list"
LIST_VERSION = 1
_PREFIX = "list:"
_FIXED_KINDS = "biufcMmSU"
#: Levels of lists, maps and struct elements one type may nest.
MAX_LIST_DEPTH = 32
_MAX_FIELDS = 4096
_DECIMAL = re.compile(r"decimal128\((\d+),\s*(-?\d+)\)$")


@dataclass(frozen=True)
class DecimalItems:
    """Elements that are decimal128 numbers of ``precision`` digits, ``scale``
    of them after the point (read as ``decimal.Decimal``)."""

    precision: int
    scale: int

    def __post_init__(self):
        if not (isinstance(self.precision, int) and 1 <= self.precision <= 38):
            raise ValueError(f"decimal precision must be in 1..38, not {self.precision!r}")
        if not isinstance(self.scale, int) or abs(self.scale) > 38:
            raise ValueError(f"decimal scale must be an integer in -38..38, not {self.scale!r}")


@dataclass(frozen=True)
class StructItems:
    """Elements that are structs (read as dicts): ``fields`` is a tuple of
    ``(name, type, nullable)``."""

    fields: tuple

    def __post_init__(self):
        fields = []
        for entry in self.fields:
            if len(entry) == 2:
                entry = (entry[0], entry[1], True)
            name, typ, nullable = entry
            if not isinstance(name, str):
                raise TypeError(f"a struct field name must be a str, not {name!r}")
            if not isinstance(nullable, bool):
                raise TypeError(f"field {name!r}: nullable must be True or False")
            fields.append((name, item_type(typ), nullable))
        if not fields or len(fields) > _MAX_FIELDS:
            raise ValueError(f"a struct has 1..{_MAX_FIELDS} fields, not {len(fields)}")
        if len({f[0] for f in fields}) != len(fields):
            raise ValueError("struct field names repeat")
        object.__setattr__(self, "fields", tuple(fields))
        _check_nesting(self)


@dataclass(frozen=True)
class ListType:
    """A list type: ``item`` the type of the elements (see :func:`item_type`).

    ``nullable``: whether a whole list may be missing (None);
    ``item_nullable``: whether elements may be; ``size``: the length of
    every list (None: any); ``large`` and ``field``: Arrow's large_list and
    item field name, kept for export.
    """

    item: object
    nullable: bool = True
    item_nullable: bool = True
    size: int | None = None
    large: bool = False
    field: str = "item"
    arrow: str | None = _field(default=None, compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "item", item_type(self.item))
        for name in ("nullable", "item_nullable", "large"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False, not {getattr(self, name)!r}")
        if self.size is not None and (isinstance(self.size, bool) or
                                      not isinstance(self.size, (int, np.integer)) or
                                      not 0 <= self.size < 2 ** 31):
            raise ValueError(f"size must be None or an integer in 0..2**31-1, not {self.size!r}")
        if self.size is not None:
            object.__setattr__(self, "size", int(self.size))
        if not isinstance(self.field, str):
            raise TypeError(f"field must be a str, not {self.field!r}")
        _check_nesting(self)


@dataclass(frozen=True)
class MapType:
    """A map type: each item a list of (key, value) entries, keys never missing."""

    key: object
    value: object
    nullable: bool = True
    value_nullable: bool = True
    keys_sorted: bool = False
    names: tuple = ("entries", "key", "value")
    arrow: str | None = _field(default=None, compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "key", item_type(self.key))
        object.__setattr__(self, "value", item_type(self.value))
        for name in ("nullable", "value_nullable", "keys_sorted"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False, not {getattr(self, name)!r}")
        names = tuple(self.names)
        if len(names) != 3 or not all(isinstance(n, str) for n in names):
            raise ValueError(f"names must be three str (entries, key, value), not {names!r}")
        object.__setattr__(self, "names", names)
        _check_nesting(self)

    @property
    def entries(self) -> StructItems:
        """The entries as struct elements (key never missing)."""
        return StructItems(((self.names[1], self.key, False),
                            (self.names[2], self.value, self.value_nullable)))


@dataclass
class ListLayout:
    """What a list carray's metadata (a ``CarrayMeta`` of object atoms) keeps in
    its ``kind`` slot: its list type and the zstd level of its chunks.  This
    class describes one of layout version 1 (a vlen carray of the encoded
    items); its subclass :class:`ListLayout2` one of version 2.

    Attributes
    ----------
    listtype : ListType or MapType
        The type of its items.
    level : int
        The zstd level of its vlen chunks (of text children, version 2).
    """

    listtype: object
    level: int = 6


@dataclass
class ListLayout2(ListLayout):
    """A version-2 list carray's layout (its metadata's ``kind``): its type,
    zstd level of text children, children (folder -> CarrayMeta: kinds/list/files.py)
    and whether it has a validity (its type's lists may be missing)."""

    children: dict = _field(default_factory=dict)
    nullable: bool = True


def list_layout(meta) -> ListLayout | None:
    """The :class:`ListLayout` of a carray's metadata (a ``CarrayMeta``), or None
    when it is not a list carray."""
    slot = getattr(meta, "kind", None)
    return slot if isinstance(slot, ListLayout) else None


def nesting(typ) -> int:
    """Levels of lists, maps and struct elements in the type ``typ`` (0 for
    an element type that holds none)."""
    if isinstance(typ, ListType):
        return 1 + nesting(typ.item)
    if isinstance(typ, MapType):
        return 1 + max(nesting(typ.key), nesting(typ.value))
    if isinstance(typ, StructItems):
        return 1 + max(nesting(t) for _, t, _ in typ.fields)
    return 0


def _check_nesting(typ) -> None:
    levels = nesting(typ)
    if levels > MAX_LIST_DEPTH:
        raise LimitError(f"a list type that nests {levels} levels of lists, maps and "
                         f"structs: at most {MAX_LIST_DEPTH} can be stored and read back")


def _fixed(dtype: np.dtype) -> np.dtype:
    if dtype.kind not in _FIXED_KINDS or dtype.shape or dtype.names is not None:
        raise TypeError(f"list elements of dtype {dtype} are not supported (numbers, bools, "
                        f"datetimes, timedeltas and fixed-width text are; struct_items() for "
                        f"records, list_() for nested lists)")
    if dtype.itemsize == 0:
        raise TypeError(f"list elements of dtype {dtype} have no size")
    return dtype.newbyteorder("<") if dtype.byteorder == ">" else dtype


def item_type(item):
    """The element type ``item`` stands for.

    Parameters
    ----------
    item : numpy dtype (or anything ``numpy.dtype`` takes), 'str', 'bytes',
        ``str``, ``bytes``, 'decimal128(P,S)', a ListType, MapType,
        StructItems, DecimalItems, or an object with ``fields``, a list of
        ``(name, type)`` (a struct type).

    Raises
    ------
    TypeError
        An element type that is not supported (objects, records, sub-arrays).
    """
    if isinstance(item, (ListType, MapType, StructItems, DecimalItems)):
        return item
    if isinstance(item, (str, type)) and item in ("str", str):
        return "str"
    if isinstance(item, (str, type)) and item in ("bytes", bytes):
        return "bytes"
    if isinstance(item, str):
        found = _DECIMAL.match(item.replace(" ", ""))
        if found:
            return DecimalItems(int(found.group(1)), int(found.group(2)))
    fields = getattr(item, "fields", None)
    if isinstance(fields, (list, tuple)) and not isinstance(item, np.dtype):
        return StructItems(tuple(tuple(f) for f in fields))
    try:
        dtype = np.dtype(item)
    except TypeError as err:
        raise TypeError(f"{item!r:.60} is not a list element type ({err})") from None
    return _fixed(dtype)


def type_to_json(typ) -> dict:
    """The JSON of a type (see the module's docstring)."""
    if isinstance(typ, ListType):
        return {"type": "list", "item": type_to_json(typ.item), "nullable": typ.nullable,
                "item_nullable": typ.item_nullable, "size": typ.size, "large": typ.large,
                "field": typ.field, **_arrow(typ)}
    if isinstance(typ, MapType):
        return {"type": "map", "key": type_to_json(typ.key), "value": type_to_json(typ.value),
                "nullable": typ.nullable, "value_nullable": typ.value_nullable,
                "keys_sorted": typ.keys_sorted, "names": list(typ.names), **_arrow(typ)}
    if isinstance(typ, StructItems):
        return {"type": "struct",
                "fields": [[n, type_to_json(t), nl] for n, t, nl in typ.fields]}
    if isinstance(typ, DecimalItems):
        return {"type": "decimal", "precision": typ.precision, "scale": typ.scale}
    if typ in ("str", "bytes"):
        return {"type": typ}
    return {"type": "fixed", "dtype": typ.str}


def _arrow(typ) -> dict:
    return {} if typ.arrow is None else {"arrow": typ.arrow}


def _arrow_of(obj: dict, where: str):
    text = obj.get("arrow")
    if text is not None and (not isinstance(text, str) or len(text) > 1 << 20):
        raise FormatError(f"{where}: list type: 'arrow' must be base64 text of at most 1 MiB")
    return text


def _get(obj: dict, key: str, kinds: tuple, where: str):
    if key not in obj:
        raise FormatError(f"{where}: list type: missing key {key!r}")
    value = obj[key]
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise FormatError(f"{where}: list type: {key!r} has the wrong type "
                          f"({type(value).__name__})")
    return value


def type_from_json(obj, where: str = "meta/storage", depth: int = 0):
    """The type a JSON object describes.

    Raises
    ------
    FormatError
        Not such an object: unknown ``type``, a missing or mistyped key, a
        dtype that is not a canonical little-endian fixed dtype, a struct
        without fields, types nested more than 32 deep.
    """
    if depth > MAX_LIST_DEPTH:
        raise FormatError(f"{where}: list type nested more than {MAX_LIST_DEPTH} deep")
    if not isinstance(obj, dict):
        raise FormatError(f"{where}: a list type is a JSON object, not {type(obj).__name__}")
    kind = _get(obj, "type", (str,), where)
    sub = (lambda key: type_from_json(obj.get(key), where, depth + 1))
    try:
        if kind == "list":
            size = obj.get("size")
            if size is not None and (not isinstance(size, int) or isinstance(size, bool)):
                raise FormatError(f"{where}: list type: size must be an integer or null")
            return ListType(sub("item"), _get(obj, "nullable", (bool,), where),
                            _get(obj, "item_nullable", (bool,), where), size,
                            _get(obj, "large", (bool,), where), _get(obj, "field", (str,), where),
                            _arrow_of(obj, where))
        if kind == "map":
            names = _get(obj, "names", (list,), where)
            return MapType(sub("key"), sub("value"), _get(obj, "nullable", (bool,), where),
                           _get(obj, "value_nullable", (bool,), where),
                           _get(obj, "keys_sorted", (bool,), where), tuple(names),
                           _arrow_of(obj, where))
        if kind == "struct":
            fields = _get(obj, "fields", (list,), where)
            if not fields or len(fields) > _MAX_FIELDS:
                raise FormatError(f"{where}: a struct type has 1..{_MAX_FIELDS} fields")
            out = []
            for f in fields:
                if not (isinstance(f, list) and len(f) == 3 and isinstance(f[0], str)
                        and isinstance(f[2], bool)):
                    raise FormatError(f"{where}: a struct field is [name, type, nullable]")
                out.append((f[0], type_from_json(f[1], where, depth + 1), f[2]))
            return StructItems(tuple(out))
        if kind == "decimal":
            return DecimalItems(_get(obj, "precision", (int,), where),
                                _get(obj, "scale", (int,), where))
        if kind in ("str", "bytes"):
            return kind
        if kind == "fixed":
            text = _get(obj, "dtype", (str,), where)
            if len(text) > 32:
                raise FormatError(f"{where}: list element dtype {text!r:.40} is too long")
            dtype = np.dtype(text)
            if _fixed(dtype) != dtype or dtype.str != text:
                raise FormatError(f"{where}: list element dtype {text!r} is not a canonical "
                                  f"little-endian dtype")
            return dtype
    except (TypeError, ValueError) as err:
        if isinstance(err, FormatError):
            raise
        raise FormatError(f"{where}: bad list type ({err})") from None
    raise FormatError(f"{where}: unknown list type {kind!r:.40}")


def list_dtype_text(name: str) -> str:
    """The ``dtype`` text of ``meta/storage`` for a list carray called ``name``.

    Examples
    --------
    >>> list_dtype_text("tags")[:19]
    "list: column 'tags'"
    """
    shown = "".join(c if c.isprintable() and c != "," else "?" for c in str(name))[:200]
    return (f"{_PREFIX} column '{shown}' holds variable-length lists that bcolz cannot "
            f"read; only bcolz_store reads it")


def list_type_of_text(text) -> bool:
    """Whether ``text`` is the dtype text of a list carray."""
    return isinstance(text, str) and text.startswith(_PREFIX)


def dump_list(typ, level: int) -> dict:
    """The JSON value of the ``list`` key."""
    return {"version": LIST_VERSION, "level": int(level), "type": type_to_json(typ)}


def load_list(obj, where: str = "meta/storage") -> tuple:
    """``(type, level)`` from the ``list`` key of ``meta/storage``.

    Raises
    ------
    FormatError
        A missing or malformed key, an unknown version, a level outside
        1..22, a type that is neither a list nor a map type.
    """
    if not isinstance(obj, dict):
        raise FormatError(f"{where}: the dtype names a list carray but the 'list' entry is "
                          f"{'missing' if obj is None else type(obj).__name__}")
    version = _get(obj, "version", (int,), where)
    if version != LIST_VERSION:
        raise FormatError(f"{where}: list item encoding version {version} is not known (this "
                          f"version of bcolz_store reads {LIST_VERSION})")
    level = _get(obj, "level", (int,), where)
    if not 1 <= level <= 22:
        raise FormatError(f"{where}: list level {level} is outside 1..22")
    typ = type_from_json(obj.get("type"), where)
    if not isinstance(typ, (ListType, MapType)):
        raise FormatError(f"{where}: the type of a list carray is a list or map type")
    return typ, level
