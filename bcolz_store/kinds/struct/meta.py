"""Struct carrays: what ``meta/storage`` says about them.

A struct carray is a folder of carrays, one per field, as the bcolz format
document draws nested columns (seeds/001: first-level columns, and nested
columns in their folders)::

    ROOT/meta/storage     {"dtype": "struct: column 'NAME' holds ...",
                           "cparams": {...}, "chunklen": L, "expectedlen": E,
                           "dflt": null,
                           "struct": {"fields": [{"name": "a", "nullable": false}, ...],
                                      "dirs": {"x.y": "__f0_x_y"}, "nullable": true}}
    ROOT/meta/sizes       {"shape": [n], "nbytes": N, "cbytes": C}: the fields' sums
    ROOT/a/               a complete carray folder of field "a" (any kind)
    ROOT/__f0_x_y/        field "x.y": a name that is not a plain name gets a
                          made-up folder (format/names.py, prefix "f")
    ROOT/__valid-/        when "nullable": a bool carray, True where the item is present
    ROOT/__attrs__

Every field carray has the struct's length and ``chunklen``.  Field names
``meta``, ``data``, ``index`` and ``categories`` (folders of the carray
itself) get made-up folders too.  The ``dtype`` text makes the real bcolz
refuse the carray, naming the column.

Source: this library's own format (docs/format.md, "Struct columns"),
inside bcolz format v1.0's folder layout (seeds/001).

Pure functions: nothing here opens a file.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import FormatError
from ...format.names import assign_folders, load_names

__all__ = ["FieldMeta", "STRUCT_KEY", "StructMeta", "VALIDITY_DIR", "dump_struct",
           "field_folders", "load_struct", "struct_dtype_text"]

STRUCT_KEY = "struct"
VALIDITY_DIR = "__valid-"
STRUCT_PREFIX = "struct:"
# folders of a carray itself, never a field's
_OWN_FOLDERS = ("meta", "data", "index", "categories")


@dataclass
class FieldMeta:
    """One field: its name, folder, Arrow nullability flag and carray metadata
    (a ``CarrayMeta``; None until loaded)."""

    name: str
    folder: str
    nullable: bool
    meta: object = None


@dataclass
class StructMeta:
    """The ``struct`` entry of ``meta/storage``: the fields in order and
    whether an item may be missing (a validity carray in ``__valid-``)."""

    fields: list
    nullable: bool = False


def field_folders(names) -> dict:
    """``{name: folder}`` of the fields whose folder is made up (format/names.py)."""
    return assign_folders(list(names), prefix="f", reserved=_OWN_FOLDERS)


def struct_dtype_text(name: str) -> str:
    """The ``dtype`` text of ``meta/storage`` for a struct carray called ``name``."""
    shown = "".join(c if c.isprintable() and c != "," else "?" for c in str(name))[:200]
    return (f"{STRUCT_PREFIX} column '{shown}' holds struct items (nested columns) that bcolz "
            f"cannot read; its fields are carrays in its folder")


def dump_struct(meta: StructMeta) -> dict:
    """The JSON value of the ``struct`` key."""
    dirs = {f.name: f.folder for f in meta.fields if f.folder != f.name}
    return {"fields": [{"name": f.name, "nullable": bool(f.nullable)} for f in meta.fields],
            "dirs": dirs, "nullable": bool(meta.nullable)}


def load_struct(obj, where: str = "meta/storage") -> StructMeta:
    """Parse the ``struct`` key of ``meta/storage`` (fields' metadata not loaded).

    Raises
    ------
    FormatError
        A missing or malformed entry: no fields, names that are not unique
        strs, unsafe or shared folders, flags that are not bools.
    """
    if not isinstance(obj, dict) or not isinstance(obj.get("fields"), list) \
            or not obj["fields"]:
        raise FormatError(f"{where}: the dtype names a struct carray but the 'struct' entry "
                          f"is missing or has no fields")
    entries = obj["fields"]
    if not all(isinstance(e, dict) and isinstance(e.get("nullable"), bool) for e in entries):
        raise FormatError(f"{where}: a struct field is {{'name': str, 'nullable': bool}}")
    if not isinstance(obj.get("nullable"), bool):
        raise FormatError(f"{where}: struct 'nullable' must be true or false")
    names, dirs = load_names({"names": [e.get("name") for e in entries],
                              "dirs": obj.get("dirs", {})}, where)
    for name in names:
        folder = dirs.get(name, name)
        if folder in _OWN_FOLDERS or folder == VALIDITY_DIR:
            raise FormatError(f"{where}: struct field {name!r:.80} in the folder {folder!r}, "
                              f"which is the carray's own")
    return StructMeta([FieldMeta(name, dirs.get(name, name), e["nullable"])
                       for name, e in zip(names, entries)], obj["nullable"])
