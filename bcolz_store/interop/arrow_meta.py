"""The schema metadata with which bcolz_store records, in an Arrow schema, what
Arrow's types cannot say: the exact numpy dtype of each column, the kind
(carray or ctable), the attrs and column attrs, and the type of vlen and
categorical columns.

The schema metadata key ``b"bcolz_store"`` holds one JSON object::

    {"version": 1, "kind": "ctable" | "carray", "attrs": {...},
     "columns": {"<name>": {"dtype": "<numpy descr>", "attrs": {...}}}}

A vlen column records ``"dtype": "vlen"`` and ``"vlen": {"kind", "level",
"nullable", "dictionary"}`` (the dictionary as base64, or null); a
categorical column, written as its items, ``"dtype": "category"`` and
``"category": {"kind", "categories", "ordered"}``.

Pure functions over JSON and numpy dtypes: pyarrow is not imported here.
"""

from __future__ import annotations

import json

import numpy as np

from ..kinds.category.types import category_from_json, category_to_json
from ..errors import FormatError
from ..kinds.vlen.types import vlen_from_json, vlen_to_json
from .columns import column_attrs, columns_of, kind_of

__all__ = ["META_KEY", "META_VERSION", "read_metadata", "recorded_dtype", "recorded_vlen",
           "schema_metadata"]

META_KEY = b"bcolz_store"
META_VERSION = 1


def schema_metadata(obj) -> dict:
    """The schema metadata recording ``obj``'s kind, attrs and column dtypes.

    Parameters
    ----------
    obj : carray or ctable

    Returns
    -------
    dict of bytes to bytes
        ``{META_KEY: JSON}``, the object drawn in the module's docstring.

    Raises
    ------
    TypeError
        When ``obj`` is not a carray or ctable, or its attrs are not JSON.
    """
    colattrs = column_attrs(obj)
    columns = {}
    for name, col in columns_of(obj):
        vlen_, cat = getattr(col, "vlen", None), getattr(col, "category", None)
        if cat is not None:
            entry = {"dtype": "category", "category": category_to_json(cat)}
        elif vlen_ is not None:
            entry = {"dtype": "vlen", "vlen": vlen_to_json(vlen_)}
        elif getattr(col, "column_type", None) is not None:    # the Arrow type tells it
            entry = {"dtype": repr(col.column_type).partition("(")[0]}
        elif getattr(col, "listtype", None) is not None:    # its type is the Arrow type's
            entry = {"dtype": "list"}
        else:
            entry = {"dtype": np.lib.format.dtype_to_descr(col.dtype)}
            if getattr(col, "nullable", False):
                entry["nullable"] = True        # (kinds/nullable/interop_arrow.py)
        if name in colattrs:
            entry["attrs"] = colattrs[name]
        columns[name] = entry
    meta = {"version": META_VERSION, "kind": kind_of(obj), "attrs": obj.attrs.getall(),
            "columns": columns}
    return {META_KEY: json.dumps(meta).encode()}


# --- reading it

def read_metadata(schema, where: str) -> dict:
    """The bcolz_store metadata of an Arrow schema ({} when it has none).

    Parameters
    ----------
    schema : pyarrow.Schema
    where : str
        The source, for messages.

    Returns
    -------
    dict
        The JSON object drawn in the module's docstring, checked to have
        ``columns`` and ``attrs`` objects where present.

    Raises
    ------
    FormatError
        When the metadata is not such a JSON object.
    """
    raw = (schema.metadata or {}).get(META_KEY)
    if raw is None:
        return {}
    try:
        meta = json.loads(raw)
        if not isinstance(meta, dict) or not isinstance(meta.get("columns", {}), dict) \
                or not isinstance(meta.get("attrs", {}), dict):
            raise ValueError("expected a JSON object with 'columns' and 'attrs' objects")
    except ValueError as err:
        raise FormatError(f"{where}: malformed {META_KEY.decode()} schema metadata: {err}") \
            from err
    except RecursionError:
        raise FormatError(f"{where}: malformed {META_KEY.decode()} schema metadata: JSON "
                          f"nested too deeply") from None
    return meta


def _tuples(descr):
    return tuple(_tuples(d) for d in descr) if isinstance(descr, list) else descr


def recorded_dtype(meta: dict, name: str, where: str):
    """The numpy dtype that ``meta`` records for column ``name``, if any.

    Parameters
    ----------
    meta : dict
        From :func:`read_metadata`.
    name : str
        The column.
    where : str
        The source, for messages.

    Returns
    -------
    numpy.dtype or None
        None when ``meta`` records no dtype for the column.

    Raises
    ------
    FormatError
        When the recorded dtype is not a numpy descr, or holds objects.
    """
    entry = meta.get("columns", {}).get(name)
    if not isinstance(entry, dict) or "dtype" not in entry or \
            entry["dtype"] in ("vlen", "category", "decimal", "struct", "list"):
        return None
    descr = entry["dtype"]
    try:
        dtype = np.lib.format.descr_to_dtype(list(_tuples(descr)) if isinstance(descr, list)
                                             else descr)
    except (TypeError, ValueError) as err:
        raise FormatError(f"{where}: column {name!r}: bad recorded dtype {descr!r}") from err
    if dtype.hasobject:
        raise FormatError(f"{where}: column {name!r}: recorded dtype {descr!r} holds objects")
    return dtype


def recorded_vlen(meta: dict, name: str, where: str):
    """The :class:`~bcolz_store.vlen` (or :class:`~bcolz_store.category`) type
    ``meta`` records for column ``name``, if any.

    Raises
    ------
    FormatError
        When the record is not a vlen type's fields.
    """
    entry = meta.get("columns", {}).get(name)
    if not isinstance(entry, dict) or entry.get("dtype") not in ("vlen", "category"):
        return None
    fields = entry.get(entry["dtype"])
    try:
        if entry["dtype"] == "category":
            return category_from_json(fields)
        return vlen_from_json(fields)
    except (TypeError, ValueError) as err:
        raise FormatError(f"{where}: column {name!r}: bad recorded vlen type {fields!r:.200} "
                          f"({err})") from err

