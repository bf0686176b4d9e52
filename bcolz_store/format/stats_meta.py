"""A carray's chunk statistics, ``meta/stats``: for every chunk (the leftover
last) its least and greatest item and how many of its items are missing.

::

    {"md5": "<hex>", "stats": 1, "kind": "<f8", "chunklen": 131072,
     "length": 20000000, "chunks": [[min, max, nulls], ...]}

- ``kind`` says how the values are written: the atom's dtype string for a
  fixed-size atom (``|b1``, ``<i8``, ``<u4``, ``<f8``, ``<M8[ns]``, ``<m8[s]``,
  ``|S12``, ``<U8``); ``vlen:str`` / ``vlen:bytes`` for variable-length
  items; ``category:<i4`` for the codes of a categorical carray (its
  statistics are those of the codes; ``-1``, a missing item, counts as
  missing and is neither min nor max).
- Version 2 (``"stats": 2``, written only for these kinds; version 1 files
  keep reading): ``nullable:<dtype>`` for a nullable carray of a fixed
  ``<dtype>`` above (``nulls`` counts its null items, whose stored fill is
  neither min nor max, plus NaN/NaT among the present ones), and
  ``decimal:<scale>`` for a decimal carray of 16-byte unscaled integers
  (min and max are the unscaled integers, exact JSON integers; the value is
  ``integer * 10**-scale``), ``nullable:decimal:<scale>`` when nullable.
- One ``[min, max, nulls]`` per chunk, ``ceil(length / chunklen)`` of them.
  Booleans are written 0/1, integers, datetimes and timedeltas as integers
  (their int64 value), floats as JSON numbers (``"inf"``/``"-inf"`` as
  strings), ``str`` as JSON strings, ``bytes`` as JSON strings of their
  latin-1 decoding.  ``nulls`` counts NaN (floats), NaT (datetimes,
  timedeltas), None (nullable vlen items) and ``-1`` (categorical codes);
  min and max ignore them and are ``null`` when every item is missing.
- ``[null, null, -1]``: the chunk's statistics are not kept, because its
  least or greatest item is a text longer than :data:`MAX_STATS_TEXT`
  characters (bytes for bytes); a query reads that chunk.
- ``md5`` is the md5 of the file's text written with ``"md5": ""``: a damaged
  file is told without the checksum file, and is then not used (queries
  read every chunk instead).

bcolz never reads this file (it opens ``meta/sizes`` and ``meta/storage`` by
name), so datasets carrying it stay bcolz datasets.  Statistics are kept for
carrays of at most :data:`MAX_STATS_CHUNKS` chunks whose file takes at most
:data:`MAX_STATS_BYTES`.

Pure functions: nothing here opens a file.
"""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np

from ..errors import FormatError
from .layout import MAX_META_BYTES

__all__ = ["MAX_STATS_BYTES", "MAX_STATS_CHUNKS", "MAX_STATS_TEXT", "NOT_KEPT", "STATS_KEY",
           "STATS_VERSION", "STATS_VERSION_KINDS", "decode_value", "dump_stats", "encode_value", "load_stats"]

STATS_KEY = "meta/stats"
STATS_VERSION = 1
# The version of a file whose kind is one of version 2's (nullable:, decimal:).
STATS_VERSION_KINDS = 2
# Statistics are written for carrays of at most this many chunks (about 40 MB
# of JSON at worst): beyond it a query reads every chunk.
MAX_STATS_CHUNKS = 1 << 20
# The most bytes a statistics file may take: what any metadata file may (a
# carray whose statistics would take more has none).
MAX_STATS_BYTES = MAX_META_BYTES
# A text statistic longer than this (characters, bytes for bytes) is not kept:
# its chunk's entry is [null, null, NOT_KEPT], so that a column of long texts
# in small chunks keeps a file of a few bytes per chunk.
MAX_STATS_TEXT = 256
NOT_KEPT = -1
_FIELDS = ("md5", "stats", "kind", "chunklen", "length", "chunks")


def stats_version(kind: str) -> int:
    """The version of a statistics file of ``kind``."""
    return STATS_VERSION_KINDS if kind.startswith(("nullable:", "decimal:")) else STATS_VERSION


def decimal_scale(kind: str):
    """The scale of a decimal statistics kind (``decimal:<scale>``, nullable or
    not), or None for another kind."""
    if kind.startswith("nullable:"):
        kind = kind[len("nullable:"):]
    if not kind.startswith("decimal:"):
        return None
    scale = kind[len("decimal:"):]
    if not scale.lstrip("-").isdigit() or len(scale) > 4:
        raise FormatError(f"unknown statistics kind {kind!r}")
    return int(scale)


_DECIMAL_LIMIT = 2 ** 127


def _kind_type(kind: str):
    """The numpy dtype of the values of ``kind`` (object for text and decimals)."""
    if kind in ("vlen:str", "vlen:bytes") or decimal_scale(kind) is not None:
        return np.dtype(object)
    if kind.startswith("nullable:"):
        kind = kind[len("nullable:"):]
    if kind.startswith("category:"):
        kind = kind[len("category:"):]
    try:
        dtype = np.dtype(kind)
    except TypeError as err:
        raise FormatError(f"unknown statistics kind {kind!r}") from err
    if dtype.kind not in "biufMmSU" or dtype.shape:
        raise FormatError(f"unknown statistics kind {kind!r}")
    return dtype


def encode_value(value, kind: str):
    """A statistic (a numpy or Python scalar of ``kind``) as JSON."""
    if value is None:
        return None
    dtype = _kind_type(kind)
    if dtype.kind == "O" and decimal_scale(kind) is not None:
        return int(value)
    if kind == "vlen:bytes" or dtype.kind == "S":
        return bytes(value).decode("latin-1")
    if kind == "vlen:str" or dtype.kind == "U":
        return str(value)
    if dtype.kind == "f":
        value = float(value)
        return value if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    if dtype.kind in "Mm":
        return int(np.asarray(value, dtype=dtype).view(np.int64))
    return int(value)


def decode_value(raw, kind: str, where: str):
    """A JSON statistic of ``kind`` back as a Python value (datetimes as
    ``numpy.datetime64``/``timedelta64``), checked.

    Raises
    ------
    FormatError
        A value of the wrong JSON type or out of the kind's range.
    """
    if raw is None:
        return None
    dtype = _kind_type(kind)
    if dtype.kind == "O" and decimal_scale(kind) is not None:
        if isinstance(raw, bool) or not isinstance(raw, int) or \
                not -_DECIMAL_LIMIT <= raw < _DECIMAL_LIMIT:
            raise FormatError(f"{where}: statistic {str(raw)[:40]!r} is not a 128-bit integer")
        return raw
    if kind in ("vlen:str", "vlen:bytes") or dtype.kind in "SU":
        if not isinstance(raw, str):
            raise FormatError(f"{where}: statistic {raw!r} is not a string")
        if kind == "vlen:bytes" or dtype.kind == "S":
            try:
                return raw.encode("latin-1")
            except UnicodeEncodeError as err:
                raise FormatError(f"{where}: statistic {raw!r} is not latin-1 text") from err
        return raw
    if dtype.kind == "f":
        if raw in ("inf", "-inf"):
            return float(raw)
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or \
                isinstance(raw, int) and abs(raw) > 2 ** 1024 or math.isnan(raw):
            raise FormatError(f"{where}: statistic {str(raw)[:40]!r} is not a number of {kind}")
        return float(raw)
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise FormatError(f"{where}: statistic {raw!r} is not an integer")
    if dtype.kind in "Mm":
        if not -2 ** 63 < raw < 2 ** 63:
            raise FormatError(f"{where}: statistic {raw} is out of range")
        return np.int64(raw).view(dtype)
    info = np.iinfo(dtype) if dtype.kind in "iu" else None
    if info is not None and not info.min <= raw <= info.max or \
            dtype.kind == "b" and raw not in (0, 1):
        raise FormatError(f"{where}: statistic {raw} is out of the range of {kind}")
    return bool(raw) if dtype.kind == "b" else raw


def _text(body: dict) -> bytes:
    return (json.dumps(body, ensure_ascii=True) + "\n").encode("ascii")


def dump_stats(kind: str, chunklen: int, length: int, chunks: list) -> bytes:
    """The bytes of ``meta/stats``: ``chunks`` is one ``(min, max, nulls)`` of
    JSON values (see :func:`encode_value`) per chunk."""
    body = {"md5": "", "stats": stats_version(kind), "kind": kind, "chunklen": int(chunklen),
            "length": int(length), "chunks": [list(c) for c in chunks]}
    text = _text(body)              # "md5" first: its value goes in once the md5 is known
    return text.replace(b'"md5": ""', b'"md5": "%s"' % hashlib.md5(text).hexdigest().encode(),
                        1)


def load_stats(data: bytes, where: str) -> dict:
    """Parse and check ``meta/stats``.

    Returns
    -------
    dict
        ``kind``, ``chunklen``, ``length``, ``chunks``: one tuple
        ``(min, max, nulls)`` per chunk, the values decoded
        (:func:`decode_value`), and ``written``: each chunk's JSON list.

    Raises
    ------
    FormatError
        Not JSON, wrong fields or types, an md5 that does not match the text,
        a count of chunks that does not match ``length`` and ``chunklen``, a
        null count over the chunk's items, ``min > max``, or min/max missing
        in a chunk whose items are not all missing.
    """
    try:
        body = json.loads(bytes(data).decode("ascii"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise FormatError(f"{where}: not a statistics file ({err})") from err
    if not isinstance(body, dict) or set(body) != set(_FIELDS):
        raise FormatError(f"{where}: a statistics file has the fields {list(_FIELDS)}")
    md5 = body["md5"]
    body["md5"] = ""
    if not isinstance(md5, str) or hashlib.md5(_text(body)).hexdigest() != md5:
        raise FormatError(f"{where}: the statistics do not match their md5 (damaged)")
    kind, chunklen, length, chunks = body["kind"], body["chunklen"], body["length"], body["chunks"]
    if not isinstance(kind, str):
        raise FormatError(f"{where}: kind {kind!r} is not a string")
    if body["stats"] not in (STATS_VERSION, STATS_VERSION_KINDS) or \
            type(body["stats"]) is not int or body["stats"] != stats_version(kind):
        raise FormatError(f"{where}: statistics version {body['stats']!r} is not "
                          f"{stats_version(kind)} (kind {kind!r})")
    try:
        _kind_type(kind)
    except FormatError as err:
        raise FormatError(f"{where}: {err}") from None
    for name, value in (("chunklen", chunklen), ("length", length)):
        if isinstance(value, bool) or not isinstance(value, int) or value < (name == "chunklen"):
            raise FormatError(f"{where}: {name} {value!r} is not a count")
    if not isinstance(chunks, list) or len(chunks) != -(-length // chunklen) or \
            len(chunks) > MAX_STATS_CHUNKS + 1:
        raise FormatError(f"{where}: {length} items in chunks of {chunklen} need "
                          f"{-(-length // chunklen)} statistics")
    out = []
    for n, entry in enumerate(chunks):
        count = min(chunklen, length - n * chunklen)
        if not isinstance(entry, list) or len(entry) != 3:
            raise FormatError(f"{where}: chunk {n}: not [min, max, nulls]")
        lo, hi, nulls = (decode_value(entry[0], kind, where), decode_value(entry[1], kind, where),
                         entry[2])
        if isinstance(nulls, bool) or not isinstance(nulls, int) or \
                not (0 <= nulls <= count or nulls == NOT_KEPT):
            raise FormatError(f"{where}: chunk {n}: {nulls!r} missing of {count} items")
        if nulls == NOT_KEPT:
            if (lo, hi) != (None, None):
                raise FormatError(f"{where}: chunk {n}: min and max of statistics not kept "
                                  f"must be null")
            out.append((None, None, NOT_KEPT))
            continue
        if (lo is None or hi is None) != (nulls == count) or lo is not None and hi < lo:
            raise FormatError(f"{where}: chunk {n}: min {entry[0]!r} and max {entry[1]!r} do "
                              f"not fit its {count - nulls} items")
        out.append((lo, hi, nulls))
    return {"kind": kind, "chunklen": chunklen, "length": length, "chunks": out,
            "written": chunks}
