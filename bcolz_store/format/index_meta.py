"""The files of a carray's secondary index: ``index/meta`` and its segments
``index/__A.idx``.

::

    ROOT/index/meta      {"md5": "<hex>", "index": 1, "kind": "sorted", "dtype": "<i8",
                          "length": 20000000,
                          "segments": [[A, B, "<md5 of the segment's header>"], ...]}
    ROOT/index/__A.idx   the segment of rows [A, B)

A segment file is ``b"BCIX"``, the length of its header (uint32,
little-endian), the header (ASCII JSON), then blocks of Blosc-compressed
data::

    {"rows": [A, B], "dtype": "<i8", "n": N, "block": 16384,
     "runs": [[value, count], ...] or null,
     "values": [[offset, nbytes, crc32, first value], ...] or null,
     "positions": [[offset, nbytes, crc32], ...]}

The ``N`` items of rows ``[A, B)`` that are not missing, sorted by value
(ties in row order), are stored as their row numbers (int64, in
``positions`` blocks of ``block`` entries) and their values: either as runs
(each distinct value and how many items hold it: a *bitmap* index, whose
rows of one value are one sorted run of ``positions``) or as ``values``
blocks whose first values let a lookup read only the blocks it needs (a
*sorted* index).  Offsets count from the end of the header.  ``md5`` in
``index/meta`` is that of its text written with ``"md5": ""``; each
segment's header md5 and each block's crc32 are checked when read, so a
damaged index is noticed (and not used) without the checksum file.

Values are written as in ``meta/stats`` (:mod:`.stats_meta`).  bcolz never
reads these files.

Pure functions: nothing here opens a file.
"""

from __future__ import annotations

import hashlib
import json
import struct

from ..errors import FormatError
from .stats_meta import decode_value, encode_value

__all__ = ["INDEX_KINDS", "INDEX_META_KEY", "SEGMENT_MAGIC", "dump_index_meta",
           "dump_segment_header", "load_index_meta", "load_segment_header", "segment_key"]

INDEX_META_KEY = "index/meta"
INDEX_KINDS = ("sorted", "bitmap")
SEGMENT_MAGIC = b"BCIX"
MAX_HEADER_BYTES = 64 << 20
_META_FIELDS = ("md5", "index", "kind", "dtype", "length", "segments")
_HEADER_FIELDS = ("rows", "dtype", "n", "block", "runs", "values", "positions")


def segment_key(first: int) -> str:
    """The key of the segment whose first row is ``first``."""
    return f"index/__{int(first)}.idx"


def _text(body: dict) -> bytes:
    return (json.dumps(body, ensure_ascii=True) + "\n").encode("ascii")


def _count(value, what: str, where: str, least: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise FormatError(f"{where}: {what} {value!r} is not a count")
    return value


def dump_index_meta(kind: str, dtype: str, length: int, segments: list) -> bytes:
    """The bytes of ``index/meta``; ``segments`` is ``[(A, B, header_md5), ...]``."""
    body = {"md5": "", "index": 1, "kind": kind, "dtype": dtype, "length": int(length),
            "segments": [[int(a), int(b), md5] for a, b, md5 in segments]}
    body["md5"] = hashlib.md5(_text(body)).hexdigest()
    return _text(body)


def load_index_meta(data: bytes, where: str) -> dict:
    """Parse and check ``index/meta``.

    Raises
    ------
    FormatError
        Not JSON, wrong fields, an md5 that does not match, an unknown kind,
        segments that do not cover ``[0, length)`` in order.
    """
    try:
        body = json.loads(bytes(data).decode("ascii"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise FormatError(f"{where}: not an index ({err})") from err
    if not isinstance(body, dict) or set(body) != set(_META_FIELDS):
        raise FormatError(f"{where}: an index has the fields {list(_META_FIELDS)}")
    md5, body["md5"] = body["md5"], ""
    if not isinstance(md5, str) or hashlib.md5(_text(body)).hexdigest() != md5:
        raise FormatError(f"{where}: the index does not match its md5 (damaged)")
    if body["index"] != 1 or body["kind"] not in INDEX_KINDS or \
            not isinstance(body["dtype"], str):
        raise FormatError(f"{where}: unknown index version, kind or dtype")
    length = _count(body["length"], "length", where)
    segments, expect = [], 0
    if not isinstance(body["segments"], list):
        raise FormatError(f"{where}: segments is not a list")
    for seg in body["segments"]:
        if not isinstance(seg, list) or len(seg) != 3 or not isinstance(seg[2], str):
            raise FormatError(f"{where}: a segment is [first, stop, md5]")
        a, b = _count(seg[0], "first row", where), _count(seg[1], "stop row", where)
        if a != expect or b <= a:
            raise FormatError(f"{where}: segment [{a}, {b}) does not follow row {expect}")
        segments.append((a, b, seg[2]))
        expect = b
    if expect != length:
        raise FormatError(f"{where}: the segments cover {expect} rows, not {length}")
    return {"kind": body["kind"], "dtype": body["dtype"], "length": length,
            "segments": segments}


def dump_segment_header(rows: tuple, dtype: str, n: int, block: int, runs, values,
                        positions) -> bytes:
    """The magic, length and header of a segment file (values encoded as in
    ``meta/stats``: ``runs`` is ``[(value, count)]``, ``values`` is
    ``[(offset, nbytes, crc, first value)]``)."""
    body = {"rows": [int(rows[0]), int(rows[1])], "dtype": dtype, "n": int(n),
            "block": int(block),
            "runs": None if runs is None else [[encode_value(v, dtype), int(c)]
                                               for v, c in runs],
            "values": None if values is None else [[int(o), int(s), int(c), encode_value(v, dtype)]
                                                   for o, s, c, v in values],
            "positions": [[int(o), int(s), int(c)] for o, s, c in positions]}
    text = _text(body)
    return SEGMENT_MAGIC + struct.pack("<I", len(text)) + text


def load_segment_header(data: bytes, where: str) -> tuple:
    """``(header, header_bytes_length)`` of a segment file starting with ``data``
    (which must hold the whole header); values decoded, everything checked.

    Raises
    ------
    FormatError
        A wrong magic, a header longer than ``data`` or than 64 MB, wrong
        fields, blocks that do not add up to ``n`` entries.
    """
    if len(data) < 8 or bytes(data[:4]) != SEGMENT_MAGIC:
        raise FormatError(f"{where}: not an index segment")
    (size,) = struct.unpack("<I", bytes(data[4:8]))
    if size > MAX_HEADER_BYTES or 8 + size > len(data):
        raise FormatError(f"{where}: index header of {size} bytes runs past the data")
    try:
        body = json.loads(bytes(data[8:8 + size]).decode("ascii"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise FormatError(f"{where}: not an index segment ({err})") from err
    if not isinstance(body, dict) or set(body) != set(_HEADER_FIELDS):
        raise FormatError(f"{where}: an index segment has the fields {list(_HEADER_FIELDS)}")
    dtype, n = body["dtype"], _count(body["n"], "n", where)
    block = _count(body["block"], "block", where, 1)
    rows = body["rows"]
    if not isinstance(rows, list) or len(rows) != 2 or \
            _count(rows[1], "stop", where) - _count(rows[0], "first", where) < n:
        raise FormatError(f"{where}: rows {rows!r} cannot hold {n} entries")
    nblocks = -(-n // block)

    def blocks(name, width):
        items = body[name]
        if not isinstance(items, list) or len(items) != nblocks or \
                any(not isinstance(b, list) or len(b) != width for b in items):
            raise FormatError(f"{where}: {name} is not {nblocks} blocks")
        for b in items:
            for v in b[:3]:
                _count(v, name, where)
        return items
    positions = [tuple(b) for b in blocks("positions", 3)]
    runs = values = None
    if body["runs"] is not None:
        if not isinstance(body["runs"], list) or \
                any(not isinstance(r, list) or len(r) != 2 for r in body["runs"]):
            raise FormatError(f"{where}: runs is not a list of [value, count]")
        runs = [(decode_value(v, dtype, where), _count(c, "count", where, 1))
                for v, c in body["runs"]]
        if sum(c for _, c in runs) != n:
            raise FormatError(f"{where}: the runs do not count {n} entries")
    elif body["values"] is not None:
        values = [(o, s, c, decode_value(v, dtype, where))
                  for o, s, c, v in blocks("values", 4)]
    else:
        raise FormatError(f"{where}: an index segment has runs or values")
    return {"rows": (rows[0], rows[1]), "dtype": dtype, "n": n, "block": block,
            "runs": runs, "values": values, "positions": positions}, 8 + size
