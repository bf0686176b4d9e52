"""What ``meta/storage`` says about a carray of variable-length items (a *vlen* carray).

A vlen carray keeps bcolz's folder layout; only the ``dtype`` text, one extra
key and the chunk files differ::

    ROOT/__attrs__         user attributes (JSON), as for any carray
    ROOT/meta/sizes        {"shape": [n], "nbytes": N, "cbytes": C}
    ROOT/meta/storage      {"dtype": "vlen-str: 'NAME' holds ...",
                            "cparams": {...}, "chunklen": L, "expectedlen": E,
                            "dflt": "", "vlen": {...}}
    ROOT/data/__N.vlen     chunk N, a vlen chunk (kinds/vlen/chunk_header.py,
                           kinds/vlen/chunk.py); the leftover is chunk n // L

``dtype`` starts with ``vlen-str`` or ``vlen-bytes``; a ``:`` and a sentence
naming the column follow.  The real bcolz passes that text to
``numpy.dtype()``, which refuses it with ``TypeError: data type "vlen-str:
'name' holds variable-length ..." not understood``: opening such a carray, or
a ctable with such a column, in bcolz fails, and the message names the column
(checked against bcolz 1.13 by tests/vlen/test_vlen_compat.py).  The text holds no
comma, so numpy reads it as one type name.

``vlen`` (this library's key; bcolz never reads it)::

    {"kind": "str",          'str' (UTF-8 text) or 'bytes'
     "codec": "zstd",        the only codec
     "level": 3,             zstd level of new chunks, 1..22
     "nullable": false,      whether items may be missing (None)
     "dictionary": null}     a zstd dictionary (base64 of its bytes) used by
                             every chunk of the carray, or null

``dflt`` is the fill value of ``resize``: a string for 'str', the bytes as
latin-1 text for 'bytes' (as bcolz writes ``S`` defaults), or null for a
missing item (nullable carrays only).  ``meta/sizes`` counts ``nbytes`` as
the bytes of the chunks' payloads once decompressed (items, index and
bitmap; the leftover's items as UTF-8) and ``cbytes`` as the chunk files
plus the leftover's item bytes.

Source: this library's own format (docs/format.md, "Variable-length
columns"), inside bcolz format v1.0's folder layout (seeds/001).

Pure functions: nothing here opens a file.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

import numpy as np

from ...errors import FormatError

__all__ = [
    "VLEN_CHUNK_SUFFIX",
    "VLEN_DEFAULT_LEVEL",
    "VLEN_KEY",
    "VlenMeta",
    "decode_vlen_dflt",
    "dump_vlen",
    "encode_vlen_dflt",
    "load_vlen",
    "vlen_dtype_text",
    "vlen_kind_of_text",
    "vlen_result_dtype",
]

VLEN_KEY = "vlen"
VLEN_CHUNK_SUFFIX = ".vlen"
VLEN_DEFAULT_LEVEL = 1             # of columns: Parquet's zstd level (pyarrow's default)
VLEN_CODEC = "zstd"
MAX_DICTIONARY_BYTES = 16 << 20         # a zstd dictionary larger than this is refused
_PREFIX = "vlen-"
_KINDS = ("str", "bytes")
_HAS_STRINGDTYPE = hasattr(np.dtypes, "StringDType")


@dataclass(frozen=True)
class VlenMeta:
    """The ``vlen`` entry of ``meta/storage``.

    Attributes
    ----------
    kind : {'str', 'bytes'}
    level : int
        zstd level of new chunks, 1..22.
    nullable : bool
        Whether items may be missing (None).
    dictionary : bytes or None
        The zstd dictionary every chunk is compressed with (it carries its
        own non-zero dictionary id), or None.
    """

    kind: str
    level: int = VLEN_DEFAULT_LEVEL
    nullable: bool = False
    dictionary: bytes | None = None

    @property
    def dtype(self) -> np.dtype:
        """The dtype of what reads return (see :func:`vlen_result_dtype`)."""
        return vlen_result_dtype(self.kind, self.nullable)


def vlen_result_dtype(kind: str, nullable: bool) -> np.dtype:
    """The dtype of arrays read from a vlen carray.

    ``StringDType()`` for 'str' items on numpy >= 2 (``StringDType(na_object=None)``
    when items may be missing); ``object`` for 'bytes' items, and for 'str'
    items on numpy 1.x.
    """
    if kind == "str" and _HAS_STRINGDTYPE:
        return np.dtypes.StringDType(na_object=None) if nullable else np.dtypes.StringDType()
    return np.dtype(object)


def vlen_dtype_text(kind: str, name: str) -> str:
    """The ``dtype`` text of ``meta/storage`` for a vlen carray called ``name``.

    Examples
    --------
    >>> vlen_dtype_text("str", "city")[:23]
    "vlen-str: column 'city'"
    """
    shown = "".join(c if c.isprintable() and c != "," else "?" for c in str(name))[:200]
    return (f"{_PREFIX}{kind}: column '{shown}' holds variable-length {kind} items that "
            f"bcolz cannot read; bcolz-store convert --strings fixed writes a copy it can")


def vlen_kind_of_text(text) -> str | None:
    """'str' or 'bytes' when ``text`` is the dtype text of a vlen carray, else None."""
    if not isinstance(text, str) or not text.startswith(_PREFIX):
        return None
    kind, sep, _rest = text[len(_PREFIX):].partition(":")
    if kind in _KINDS and (sep or not _rest):
        return kind
    return None


def dump_vlen(meta: VlenMeta) -> dict:
    """The JSON value of the ``vlen`` key (key order as documented)."""
    return {
        "kind": meta.kind,
        "codec": VLEN_CODEC,
        "level": int(meta.level),
        "nullable": bool(meta.nullable),
        "dictionary": (base64.b64encode(meta.dictionary).decode("ascii")
                       if meta.dictionary is not None else None),
    }


def _field(obj: dict, key: str, kinds: tuple, where: str):
    if key not in obj:
        raise FormatError(f"{where}: vlen: missing key {key!r}")
    value = obj[key]
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise FormatError(f"{where}: vlen: {key!r} has the wrong type ({type(value).__name__})")
    return value


def load_vlen(obj, kind: str, where: str = "meta/storage") -> VlenMeta:
    """Parse the ``vlen`` key of ``meta/storage``.

    Parameters
    ----------
    obj : object
        The JSON value of the key.
    kind : {'str', 'bytes'}
        The kind the ``dtype`` text names; the key must agree.
    where : str
        The file, for messages.

    Raises
    ------
    FormatError
        If the value is not an object; a key is missing or of the wrong
        type; the kind disagrees with the dtype text; the codec is not
        'zstd'; the level is outside 1..22; the dictionary is not base64 or
        larger than 16 MiB.
    """
    if not isinstance(obj, dict):
        raise FormatError(f"{where}: the dtype names a vlen carray but the 'vlen' entry is "
                          f"{'missing' if obj is None else type(obj).__name__}")
    found = _field(obj, "kind", (str,), where)
    if found != kind:
        raise FormatError(f"{where}: vlen kind {found!r:.40} disagrees with the dtype ({kind})")
    codec = _field(obj, "codec", (str,), where)
    if codec != VLEN_CODEC:
        raise FormatError(f"{where}: unknown vlen codec {codec!r:.40}, expected 'zstd'")
    level = _field(obj, "level", (int,), where)
    if not 1 <= level <= 22:
        raise FormatError(f"{where}: vlen level {level} is outside 1..22")
    nullable = _field(obj, "nullable", (bool,), where)
    text = obj.get("dictionary")
    dictionary = None
    if text is not None:
        if not isinstance(text, str):
            raise FormatError(f"{where}: vlen dictionary must be base64 text or null")
        if len(text) > MAX_DICTIONARY_BYTES * 4 // 3 + 4:
            raise FormatError(f"{where}: vlen dictionary larger than {MAX_DICTIONARY_BYTES} "
                              f"bytes")
        try:
            dictionary = base64.b64decode(text.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError) as err:
            raise FormatError(f"{where}: vlen dictionary is not base64 ({err})") from err
    return VlenMeta(kind, level, nullable, dictionary)


def encode_vlen_dflt(value, kind: str):
    """The JSON ``dflt`` of a vlen carray: str, latin-1 text of bytes, or None."""
    if value is None:
        return None
    return value.decode("latin-1") if kind == "bytes" else str(value)


def decode_vlen_dflt(value, meta: VlenMeta, where: str = "meta/storage"):
    """The fill value the JSON ``dflt`` of a vlen carray stands for.

    Raises
    ------
    FormatError
        If it is not a string (or null, for a nullable carray), is not
        latin-1 text for 'bytes', or not encodable as UTF-8 for 'str'.
    """
    if value is None:
        if not meta.nullable:
            raise FormatError(f"{where}: dflt null for a vlen carray without missing items")
        return None
    if not isinstance(value, str):
        raise FormatError(f"{where}: dflt of a vlen carray must be a string, found "
                          f"{type(value).__name__}")
    if meta.kind == "bytes":
        try:
            return value.encode("latin-1")
        except UnicodeEncodeError as err:
            raise FormatError(f"{where}: dflt {value!r:.40} is not latin-1 text") from err
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise FormatError(f"{where}: dflt {value!r:.40} cannot be stored as UTF-8") from err
    return value
