"""IndexedData ("idata"): items packed end to end, with a progressive index.

An idata buffer holds ``n`` byte strings (the items) concatenated without
separators in a *data region*, followed by a *manifest* that records where
each item ends.  bcolz_store writes the manifest in POSTFIX order (the white
paper's default: the data region is written first and the manifest appended
after it, so a writer never has to know the index before the data), and with
the validation key always present.  A postfix manifest is read from the end
of the buffer backwards::

    0                       D                      D+I     D+I+2              L-1
    |----- data region -----|---- index values ----|-- vk -|---- counts ----|-fb-|
    | item 0 | item 1 | ... | e[0] e[1] ... e[n-1] | k1 k2 | rV(cW)..rV(c1) | fb |
                              \\_ c1 values of 1 byte, then c2 of 2 bytes, ...,
                                 cW of W bytes, each little-endian

    L    total buffer length
    fb   first byte of the manifest (the buffer's LAST byte):
           low nibble  (fb & 0x0f)  W, the widest index value in bytes (0..8)
           high nibble (fb & 0xf0)  flags; bcolz_store writes exactly 0x20
             0x10  explicit index size ([iso], extendable idata)  - refused
             0x20  validation key present                          - required
             0x40  homogeneous index width                         - refused
             0x80  nil aware                                       - refused
           fb == 0x00 is the paper's "future deviation" escape    - refused
    c_w  how many index values are stored in exactly w bytes (w = 1..W), each
         a VLQ written REVERSED (rV): reading backwards from fb one meets c1
         first, then c2, ... cW.
    vk   validation key, two bytes k1 k2 (see below), not reversed.
    e[i] cumulative end offset of item i in the data region (e[i] = sum of the
         lengths of items 0..i), unsigned little-endian in w bytes, where w is
         the fewest bytes that hold e[i] (at least 1, so 0 takes one byte).
         Values are non-decreasing, hence so are the widths: the first c1
         values take 1 byte, the next c2 take 2 bytes, and so on.
    D    data region length, equal to e[n-1] (0 when n == 0)
    I    index size in bytes, sum(w * c_w)

VLQ: the little-endian base-128 form (LEB128), forward or reversed, canonical
(format/vlq.py, which also holds Fletcher-16).

Validation key: Fletcher-16 (sum1 = sum of bytes mod 255, sum2 = sum of the
running sum1 mod 255, both starting at 0) of the byte string::

    fb || VLQ(c1) || ... || VLQ(cW) || VLQ(I) || e[n-1] as its W stored bytes

i.e. the fields the paper lists in 2.2.4 (first byte, index counts, index size
"explicit or implicit", last index value), each in its FORWARD encoding, in the
paper's field order.  It is stored as ``k1 = sum1, k2 = sum2`` (the 16-bit
checksum ``sum2 << 8 | sum1``, little-endian).  Both bytes are below 255 in
any valid key.  The key identifies the buffer as idata and guards the fields
needed to find the items; it does not cover the other index values or the
data (containers add their own checksum for that: see kinds/vlen/chunk.py).

Where the paper is ambiguous, decided here:

* Key coverage: the paper gives two descriptions (2.2.4: the four logical
  fields; the detailed view: "bytes trailing the [vk]").  The logical fields
  in forward encoding are used, so the key does not depend on the manifest's
  order, and a reader can tell prefix from postfix order by trying both
  (paper 2.4).  Unlike "the bytes trailing the vk", it also covers the size of
  the data region (the last end), the one value a reader must trust first.
* Width of a zero end (leading empty items): one byte, since the counts only
  name widths 1..W.
* Empty idata: W = 0, no counts, no index values; the manifest is three bytes,
  ``20 40 20`` (the key of ``20 00``, i.e. fb and VLQ(I=0), then fb).
* W is at most 8 (uint64 ends); the paper's nibble allows 15.
* Only canonical manifests are accepted: the count of the widest width is
  non-zero, every value is stored in its minimal width, VLQs have no
  redundant bytes, the buffer has no unused space (no [us]).  One set of
  items therefore has exactly one idata encoding.
* Missing items (the paper's 0x80 "nil aware" flag, an index value of 0 for
  a nil) are not used: that breaks the non-decreasing ends and cannot be told
  from an empty first item.  Containers keep missing items in their own
  bitmap (kinds/vlen/chunk.py).

Filtered index values (a bcolz_store extension, not in the paper; off unless
``filtered=True``): cumulative ends compress badly (their low bytes look
random to an LZ coder), so a container that compresses the whole idata may
store the index-values region as DELTAS, byte-shuffled within each width
group, and undo that before reading.  Everything else (counts, key, first
byte, group sizes) is unchanged and the key still covers the real last end::

    group w (c_w values):  d[i] = e[i] - e[i-1]   (e[-1] = 0), each in w bytes LE
                           stored as the c_w x w byte matrix transposed:
                           byte 0 of every d, then byte 1 of every d, ...

For 100,000 tickers of 1..5 letters this halves the zstd-compressed chunk.

Source: IndexedData white paper (seeds/002); checked by
tests/format/test_idata.py (golden bytes, every width 1..8, hostile input).

Pure functions: nothing here opens a file.
"""

from __future__ import annotations

import operator

import numpy as np

from ..errors import FormatError
from .vlq import (U64_MAX, decode_vlq, decode_vlq_reversed, encode_vlq, encode_vlq_reversed,
                  fletcher16)

__all__ = [
    "IDATA_FLAG_EXTENDABLE",
    "IDATA_FLAG_HOMOGENEOUS",
    "IDATA_FLAG_NIL_AWARE",
    "IDATA_FLAG_VALIDATION_KEY",
    "IDATA_MAX_WIDTH",
    "decode_vlq",             # re-exported from format/vlq.py
    "decode_vlq_reversed",
    "encode_vlq",
    "encode_vlq_reversed",
    "fletcher16",
    "index_widths",
    "pack_index",
    "parse_index",
    "validation_key",
]

IDATA_FLAG_EXTENDABLE = 0x10
IDATA_FLAG_VALIDATION_KEY = 0x20
IDATA_FLAG_HOMOGENEOUS = 0x40
IDATA_FLAG_NIL_AWARE = 0x80
IDATA_MAX_WIDTH = 8

# 256**w for w = 1..7: a value below _THRESHOLDS[w-1] fits in w bytes.
_THRESHOLDS = np.array([1 << (8 * w) for w in range(1, IDATA_MAX_WIDTH)], dtype=np.uint64)


def validation_key(first_byte: int, counts, last_end_bytes: bytes) -> bytes:
    """The two validation-key bytes of a manifest (see the module docstring).

    Parameters
    ----------
    first_byte : int
        The manifest's first byte (W and flags).
    counts : sequence of int
        ``c1 .. cW``.
    last_end_bytes : bytes
        The last index value as stored (W bytes, little-endian); empty when
        there are no items.

    Returns
    -------
    bytes
        ``bytes([sum1, sum2])``.
    """
    nbytes = sum(w * c for w, c in enumerate(counts, 1))
    msg = (bytes([first_byte]) + b"".join(map(encode_vlq, counts)) + encode_vlq(nbytes)
           + last_end_bytes)
    key = fletcher16(msg)
    return bytes([key & 0xFF, key >> 8])


# ------------------------------------------------------------------ pack

def _as_ends(ends) -> np.ndarray:
    """``ends`` as a 1-D uint64 array, checked: integers, >= 0, < 2**64."""
    arr = ends if isinstance(ends, np.ndarray) else np.asarray(ends)
    if arr.ndim != 1:
        raise ValueError(f"ends must be one-dimensional, not shape {arr.shape}")
    if arr.size == 0:
        return np.empty(0, dtype=np.uint64)
    if arr.dtype.kind == "u":
        return arr.astype(np.uint64, copy=False)
    if arr.dtype.kind == "i":
        if arr.min() < 0:
            raise ValueError(f"ends must be >= 0, found {arr.min()}")
        return arr.astype(np.uint64)
    if isinstance(ends, np.ndarray) and arr.dtype.kind != "O":
        raise ValueError(f"ends must be integers, not {arr.dtype}")
    # Python ints beyond int64 make numpy pick float64 or object: go exact.
    try:
        vals = list(map(operator.index, arr.tolist() if isinstance(ends, np.ndarray) else ends))
    except TypeError as err:
        raise ValueError(f"ends must be integers ({err})") from None
    if min(vals) < 0 or max(vals) > U64_MAX:
        raise ValueError("ends must be in [0, 2**64)")
    return np.array(vals, dtype=np.uint64)


def index_widths(ends) -> list:
    """Counts ``[c1, ..., cW]`` of index values by their minimal width in bytes.

    Parameters
    ----------
    ends : 1-D array-like of non-decreasing non-negative integers

    Returns
    -------
    list of int
        ``c_w`` = number of values needing exactly ``w`` bytes (0 needs 1);
        length W, the width of the last value; empty for no values.

    Examples
    --------
    >>> index_widths([20, 220, 280])
    [2, 1]
    """
    arr = _as_ends(ends)
    if arr.size == 0:
        return []
    below = np.searchsorted(arr, _THRESHOLDS, side="left").tolist()  # values < 256**w
    cum = below + [arr.size]
    counts = [cum[0]] + [cum[w] - cum[w - 1] for w in range(1, IDATA_MAX_WIDTH)]
    width = next(w for w in range(IDATA_MAX_WIDTH, 0, -1) if counts[w - 1])
    return counts[:width]


def _pack_values(arr: np.ndarray, counts, filtered: bool) -> bytes:
    vals = np.diff(arr, prepend=np.uint64(0)) if filtered else arr
    parts = []
    start = 0
    for w, c in enumerate(counts, 1):
        group = vals[start:start + c]
        start += c
        if c == 0:
            continue
        if filtered:
            matrix = group.astype("<u8").view(np.uint8).reshape(c, 8)[:, :w]
            parts.append(np.ascontiguousarray(matrix.T).tobytes())
        elif w in (1, 2, 4, 8):
            parts.append(group.astype(f"<u{w}").tobytes())
        else:
            parts.append(group.astype("<u8").view(np.uint8).reshape(c, 8)[:, :w].tobytes())
    return b"".join(parts)


def pack_index(ends, filtered: bool = False) -> bytes:
    """Build the postfix idata manifest for items ending at ``ends``.

    The idata buffer is ``data_region + pack_index(ends)`` where the data
    region is the items concatenated (``ends[-1]`` bytes).

    Parameters
    ----------
    ends : 1-D array-like of int, shape (n,)
        Cumulative end offsets in bytes: ``ends[i]`` is the data region's
        length after item ``i``.  Non-decreasing, each in [0, 2**64).
    filtered : bool, default False
        Store the index values delta-coded and byte-shuffled (module
        docstring); read them back with ``parse_index(..., filtered=True)``.

    Returns
    -------
    bytes
        ``index values || vk || rVLQ(cW) .. rVLQ(c1) || fb`` (module
        docstring), with ``fb = W | 0x20``.

    Raises
    ------
    ValueError
        If ``ends`` is not one-dimensional, holds non-integers, negative
        values, values of 2**64 or more, or is not non-decreasing.

    Examples
    --------
    >>> pack_index([20, 220, 280]).hex()    # 14 dc | 1801 | key 4218 | c2=01 c1=02 | fb 22
    '14dc18014218010222'
    """
    arr = _as_ends(ends)
    if arr.size > 1 and bool(np.any(arr[1:] < arr[:-1])):
        bad = int(np.flatnonzero(arr[1:] < arr[:-1])[0]) + 1
        raise ValueError(f"ends must be non-decreasing: ends[{bad}] = {arr[bad]} "
                         f"< ends[{bad - 1}] = {arr[bad - 1]}")
    counts = index_widths(arr)
    width = len(counts)
    first_byte = width | IDATA_FLAG_VALIDATION_KEY
    values = _pack_values(arr, counts, filtered)
    last = int(arr[-1]).to_bytes(width, "little") if width else b""
    key = validation_key(first_byte, counts, last)
    rcounts = b"".join(encode_vlq_reversed(c) for c in reversed(counts))
    return values + key + rcounts + bytes([first_byte])


# ----------------------------------------------------------------- parse

def _fail(where, what):
    return FormatError(f"{where}: idata manifest: {what}")


def _read_header(mv, where):
    """fb, counts and the offset where the counts start (reading backwards)."""
    size = len(mv)
    if size < 1:
        raise _fail(where, "empty buffer, no first byte")
    fb = mv[size - 1]
    width, flags = fb & 0x0F, fb & 0xF0
    if fb == 0:
        raise _fail(where, f"first byte 0x00 (format extension) at byte {size - 1} is not "
                           "supported")
    if width > IDATA_MAX_WIDTH:
        raise _fail(where, f"index width {width} bytes in first byte 0x{fb:02x} is above "
                           f"{IDATA_MAX_WIDTH}")
    if flags != IDATA_FLAG_VALIDATION_KEY:
        raise _fail(where, f"flags 0x{flags:02x} in first byte 0x{fb:02x}, expected 0x20 "
                           "(validation key only)")
    counts = []
    pos = size - 1
    for _ in range(width):
        count, pos = decode_vlq_reversed(mv, pos, limit=size, where=where)
        counts.append(count)
    if width and counts[-1] == 0:
        raise _fail(where, f"index width {width} but no value stored in {width} bytes")
    return fb, counts, pos


def _read_values(buf, start: int, counts, filtered: bool) -> np.ndarray:
    out = np.empty(sum(counts), dtype=np.uint64)
    i = 0
    for w, c in enumerate(counts, 1):
        if c == 0:
            continue
        raw = np.frombuffer(buf, dtype=np.uint8, count=c * w, offset=start)
        start += c * w
        if w in (1, 2, 4, 8) and not filtered:
            out[i:i + c] = raw.view(f"<u{w}")
        else:
            wide = np.zeros((c, 8), dtype=np.uint8)
            wide[:, :w] = raw.reshape(w, c).T if filtered else raw.reshape(c, w)
            out[i:i + c] = wide.view("<u8").ravel()
        i += c
    if filtered:
        np.cumsum(out, out=out)  # wraps on hostile deltas: the checks below catch it
    return out


def _check_values(ends: np.ndarray, counts, data_nbytes: int, where: str) -> None:
    i = 0
    for w, c in enumerate(counts, 1):
        if c and w > 1 and int(ends[i]) < 1 << (8 * (w - 1)):
            raise _fail(where, f"index value {i} = {int(ends[i])} is stored in {w} bytes but "
                               f"fits in fewer (non-canonical)")
        if c and int(ends[i + c - 1]) >> (8 * w):
            raise _fail(where, f"index value {i + c - 1} = {int(ends[i + c - 1])} does not fit "
                               f"in its {w} bytes")
        i += c
    if ends.size > 1:
        drops = ends[1:] < ends[:-1]
        if bool(drops.any()):
            j = int(np.flatnonzero(drops)[0]) + 1
            raise _fail(where, f"index values decrease: end[{j}] = {int(ends[j])} < "
                               f"end[{j - 1}] = {int(ends[j - 1])}")
    last = int(ends[-1]) if ends.size else 0
    if last != data_nbytes:
        raise _fail(where, f"last index value {last} does not match the data region of "
                           f"{data_nbytes} bytes")


def _check_key(mv, key_at: int, fb: int, counts, last: bytes, where: str) -> None:
    key = validation_key(fb, counts, last)
    found = bytes(mv[key_at:key_at + 2])
    if found != key:
        raise _fail(where, f"validation key {found.hex()} at byte {key_at} does not match "
                           f"{key.hex()} (not idata, or corrupted)")


def parse_index(buf, where: str = "idata", data_nbytes: int | None = None,
                filtered: bool = False) -> np.ndarray:
    """Parse a postfix idata buffer and return the items' end offsets.

    Safe on hostile input: every size is checked against the buffer before
    anything is allocated, so memory use is bounded by ``8 * len(buf)``.

    Parameters
    ----------
    buf : bytes-like
        A whole idata buffer: data region followed by the manifest; or, when
        ``data_nbytes`` is given, the manifest alone.
    where : str, default "idata"
        Names the file or chunk in error messages.
    data_nbytes : int, optional
        Length of a data region kept elsewhere (a reader that fetched only
        the tail of a file).  ``buf`` must then be exactly the manifest.
    filtered : bool, default False
        The index values are stored delta-coded and byte-shuffled, as
        ``pack_index(..., filtered=True)`` writes them.

    Returns
    -------
    numpy.ndarray, shape (n,), dtype int64
        ``ends[i]`` is the end of item ``i`` in the data region; item ``i`` is
        ``buf[ends[i-1]:ends[i]]`` (``ends[-1]`` starts at 0).  The data region
        is ``buf[:ends[-1]]`` (empty when n == 0).  The dtype is uint64 when
        ``data_nbytes`` is 2**63 or more.

    Raises
    ------
    FormatError
        If the buffer is empty or truncated; the first byte is 0x00, names a
        width above 8 or flags other than 0x20; a count VLQ is truncated,
        over-long, non-canonical or larger than the buffer; the widest count
        is zero; the index does not fit in the buffer; the validation key
        does not match; an index value is not in its minimal width (or,
        filtered, overflows it); the
        values decrease; the last value is not the data region's length; or
        ``data_nbytes`` is given and bytes precede the manifest.

    Examples
    --------
    >>> parse_index(b"abc" + pack_index([1, 3])).tolist()
    [1, 3]
    >>> parse_index(pack_index([1, 3]), data_nbytes=3).tolist()
    [1, 3]
    """
    mv = memoryview(buf).cast("B")
    size = len(mv)
    fb, counts, pos = _read_header(mv, where)
    index_nbytes = sum(w * c for w, c in enumerate(counts, 1))
    key_at = pos - 2
    values_at = key_at - index_nbytes
    if values_at < 0:
        raise _fail(where, f"truncated: {len(counts)} counts {counts} need {index_nbytes} index "
                           f"bytes and a 2-byte key before byte {pos}, buffer is {size} bytes")
    if data_nbytes is not None and values_at:
        raise _fail(where, f"{values_at} bytes precede a manifest whose data region is elsewhere")
    width = len(counts)
    if not filtered:  # the stored last value is the real one: check the key first
        _check_key(mv, key_at, fb, counts, bytes(mv[key_at - width:key_at]), where)
    ends = _read_values(mv, values_at, counts, filtered)
    _check_values(ends, counts, values_at if data_nbytes is None else data_nbytes, where)
    if filtered:
        _check_key(mv, key_at, fb, counts,
                   int(ends[-1]).to_bytes(width, "little") if width else b"", where)
    return ends if ends.size and int(ends[-1]) >> 63 else ends.view(np.int64)
