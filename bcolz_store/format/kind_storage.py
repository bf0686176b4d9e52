"""``meta/storage`` of a carray of a kind with a layout of its own (a kind's
``files.py`` reads and writes it: decimal, struct, list of version 2):
bcolz's keys, a ``dtype`` text of the kind's (one bcolz refuses; a list's ``<i8``, its
offsets), and one
more key describing the kind.

::

    {"dtype": "<text naming the column>", "cparams": {...}, "chunklen": L,
     "expectedlen": E, "dflt": <the kind's JSON>, "<key>": {...}}

``cparams``, ``chunklen`` and ``expectedlen`` are checked as any carray's
(:func:`~.meta.load_storage`).

Source: this library's own format (docs/format.md, "Decimal columns",
"Struct columns"), inside bcolz format v1.0's folder layout (seeds/001).

Pure functions: nothing here opens a file.
"""

from __future__ import annotations

import json

from ..errors import FormatError
from .meta import load_json, load_storage

__all__ = ["dump_kind_storage", "load_kind_storage", "storage_text_starts"]


def dump_kind_storage(text: str, cparams: dict, chunklen: int, expectedlen: int, dflt,
                      key: str, value) -> bytes:
    """The bytes of such a ``meta/storage`` (one line, ASCII, as bcolz writes JSON)."""
    obj = {"dtype": text,
           "cparams": {"clevel": int(cparams["clevel"]), "shuffle": int(cparams["shuffle"]),
                       "cname": str(cparams["cname"]), "quantize": int(cparams["quantize"])},
           "chunklen": int(chunklen), "expectedlen": int(expectedlen), "dflt": dflt, key: value}
    return json.dumps(obj, ensure_ascii=True).encode("ascii") + b"\n"


def load_kind_storage(data: bytes, where: str):
    """``(obj, storage)``: the parsed JSON object and its bcolz keys checked, as
    a :class:`~.meta.StorageMeta` of ``V1`` items (the kind's own keys are
    the caller's to check).

    Raises
    ------
    FormatError
        Invalid JSON, or bcolz's keys malformed.
    """
    obj = load_json(data, where)
    if not isinstance(obj, dict) or not isinstance(obj.get("dtype"), str):
        raise FormatError(f"{where}: expected an object with a dtype text")
    plain = dict(obj, dtype="|V1", dflt=None)
    storage = load_storage(json.dumps(plain).encode("ascii"), where)
    return obj, storage


def storage_text_starts(data: bytes, prefixes: tuple) -> bool:
    """Whether the ``dtype`` text in the bytes of a ``meta/storage`` starts with
    one of ``prefixes`` (a quick look; the file is parsed by its reader)."""
    head = bytes(data[:64]).lstrip()
    return any(head.startswith(b'{"dtype": "' + p.encode("ascii")) for p in prefixes)

