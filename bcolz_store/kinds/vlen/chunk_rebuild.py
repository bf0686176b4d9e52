"""Items of a decoded vlen chunk payload, rebuilt into a numpy array.

Given the payload's bytes and the items' cumulative ends (from the
IndexedData manifest, see kinds/vlen/chunk.py), :func:`rebuild_items` makes the
array without a Python loop per item.  Items (the whole chunk, or blocks of
about 1 MiB) are padded with NULs into a fixed-width ``S`` array and cast in
one numpy call to ``StringDType`` (after checking their UTF-8: the data
region decodes, and no item starts on a continuation byte) or to bytes
objects; this keeps them exactly unless an item ends in NUL, and pays while
the padding stays within four times the data and str items are at most
4 KiB (numpy's ``S`` -> ``StringDType`` cast takes a buffer of 128 times the
width).  Other blocks get a separator
byte that does not occur in the block inserted between the items (numpy),
are decoded once (``codecs.utf_8_decode``, which validates) and split once
(``str.split``), and the list is assigned into the result in one call; a
block that holds every candidate byte is sliced item by item (rare).

Any item that is not valid UTF-8 (for 'str') is a FormatError naming it.
"""

from __future__ import annotations

import codecs

import numpy as np

from ...errors import FormatError

__all__ = ["rebuild_items"]

_BLOCK_NBYTES = 1 << 20         # items are rebuilt in ~1 MiB blocks (cache-sized)
_SHORT_MAX_PADDED = 1 << 26     # a fixed-width cast's padded copy takes up to 64 MiB
_LONG_ITEM = 1 << 12            # longer str items are not cast (numpy buffers 128 x their size)


def _free_byte(raw: bytes, u8: np.ndarray, start: int, stop: int, kind: str):
    """A byte absent from raw[start:stop] (ASCII for str) to split on, or None."""
    if raw.find(b"\0", start, stop) < 0:
        return 0
    counts = np.bincount(u8[start:stop], minlength=256)[:128 if kind == "str" else 256]
    free = np.flatnonzero(counts == 0)
    return int(free[0]) if free.size else None


def _utf8_whole(u8: np.ndarray, ends: np.ndarray, a: int, b: int, start: int, stop: int) -> bool:
    """Whether items a..b-1 are each valid UTF-8: the data region is (one C
    decode), and no item starts on a continuation byte (so no character is
    cut between two items)."""
    try:
        codecs.utf_8_decode(u8[start:stop], "strict", True)
    except UnicodeDecodeError:
        return False
    cuts = ends[a:b - 1]
    cuts = cuts[(cuts > start) & (cuts < stop)]
    return not ((u8[cuts] & 0xC0) == 0x80).any()


def _padded(u8: np.ndarray, ends: np.ndarray, a: int, start: int, lengths: np.ndarray,
            maxlen: int) -> np.ndarray:
    """Items a.. (``lengths`` of them, from byte ``start`` of ``u8``) as the rows
    of a new ``(n, maxlen)`` uint8 array, each padded with NULs: every row is
    the ``maxlen`` bytes from its item's start (a strided view, gathered in one
    call), its bytes past the item's length zeroed by one multiply."""
    starts = np.empty(lengths.size, dtype=np.int64)
    starts[0] = start
    starts[1:] = ends[a:a + lengths.size - 1]
    if int(starts[-1]) + maxlen > u8.size:       # the last rows' windows run past u8
        base = int(starts[0])
        u8 = np.concatenate((u8[base:int(starts[-1]) + int(lengths[-1])],
                             np.zeros(maxlen, dtype=np.uint8)))
        starts = starts - base
    rows = np.lib.stride_tricks.sliding_window_view(u8, maxlen)[starts]
    small = np.min_scalar_type(maxlen)
    keep = np.arange(maxlen, dtype=small) < lengths.astype(small)[:, None]
    np.multiply(rows, keep, out=rows)
    return rows


def _cast_items(u8: np.ndarray, ends: np.ndarray, a: int, b: int, kind: str, out) -> bool:
    """Write items a..b-1 into ``out`` by one fixed-width cast; False when
    that would not keep them exactly (the caller then splits them).

    The items are padded with NULs into an ``S<maxlen>`` array and cast in
    one numpy call: to ``StringDType`` (numpy copies the bytes as UTF-8; they
    are checked here first, since numpy 2.4 does not) or to bytes objects.
    ``S`` drops trailing NULs, so an item ending in NUL takes the split
    path; so does a block whose padding would take more than four times its
    data (a few long items among short ones).
    """
    start = int(ends[a - 1]) if a else 0
    stop = int(ends[b - 1])
    lengths = np.diff(ends[a:b], prepend=start)
    maxlen = int(lengths.max())
    if maxlen == 0:
        out[...] = "" if kind == "str" else b""
        return True
    if kind == "str" and maxlen > _LONG_ITEM:
        return False                # numpy's S -> StringDType cast buffers 128 x maxlen
    padded_nbytes = lengths.size * maxlen
    if padded_nbytes > max(4 * (stop - start), 1 << 16) or padded_nbytes > _SHORT_MAX_PADDED:
        return False
    nonempty = lengths > 0
    if not u8[ends[a:b][nonempty] - 1].all():       # an item ends in NUL
        return False
    data = u8[start:stop]
    if kind == "str" and data.max() >= 0x80 and not _utf8_whole(u8, ends, a, b, start, stop):
        return False                                 # the split path names the bad item
    fixed = _padded(u8, ends, a, start, lengths, maxlen).view(f"S{maxlen}").ravel()
    if kind == "bytes":
        out[...] = fixed.astype(object)
    else:
        np.copyto(out, fixed, casting="unsafe")
    return True


def _split_items(raw, u8, ends, a, b, kind, where):
    """Items a..b-1 as a list: separators inserted, one decode, one split."""
    start = int(ends[a - 1]) if a else 0
    stop = int(ends[b - 1])
    if b - a == 1:  # one item (maybe a huge one): no separator, no mask, no copy
        if kind == "bytes":
            return [raw[start:stop]]
        try:
            return [codecs.utf_8_decode(memoryview(raw)[start:stop], "strict", True)[0]]
        except UnicodeDecodeError as err:
            raise FormatError(f"{where}: item {a} is not valid UTF-8 ({err.reason})") from None
    sep = _free_byte(raw, u8, start, stop, kind)
    if sep is None:  # every candidate byte occurs: slice item by item
        bounds = np.concatenate(([start], ends[a:b])).tolist()
        pieces = map(raw.__getitem__, map(slice, bounds[:-1], bounds[1:]))
        if kind == "bytes":
            return list(pieces)
        try:
            return list(map(bytes.decode, pieces))
        except UnicodeDecodeError as err:
            raise FormatError(f"{where}: an item among {a}..{b - 1} is not valid UTF-8 "
                              f"({err.reason})") from None
    inner = ends[a:b - 1] - start
    seps = inner + np.arange(inner.size)
    joined = np.empty(stop - start + inner.size, dtype=np.uint8)
    keep = np.ones(joined.size, dtype=bool)
    keep[seps] = False
    joined[keep] = u8[start:stop]
    joined[seps] = sep
    if kind == "bytes":
        return joined.tobytes().split(bytes([sep]))
    try:
        text = codecs.utf_8_decode(joined, "strict", True)[0]
    except UnicodeDecodeError as err:
        i = a + int(np.searchsorted(seps, err.start, side="right"))
        raise FormatError(f"{where}: item {i} is not valid UTF-8 ({err.reason})") from None
    return text.split(chr(sep))


def rebuild_items(raw: bytes, ends: np.ndarray, kind: str, dtype, where: str,
                   out=None) -> np.ndarray:
    """Every item, as an array of ``dtype`` (written into ``out`` when given).

    Items are rebuilt in one fixed-width cast when their padding is small,
    else in blocks of about 1 MiB (cache-sized), each cast or split.
    """
    n = ends.size
    u8 = np.frombuffer(raw, dtype=np.uint8)
    castable = kind == "bytes" or np.dtype(dtype).kind == "T"
    if out is None:
        out = np.empty(n, dtype=dtype)
    if n == 0 or (castable and _cast_items(u8, ends, 0, n, kind, out)):
        return out
    # Block by data bytes plus one per item (the separators to insert).
    cum = ends + np.arange(1, n + 1)
    cuts = np.searchsorted(cum, np.arange(_BLOCK_NBYTES, int(cum[-1]), _BLOCK_NBYTES),
                           side="right")
    cuts = np.unique(np.concatenate(([0], cuts, [n]))).tolist()
    for a, b in zip(cuts[:-1], cuts[1:]):
        if not (castable and _cast_items(u8, ends, a, b, kind, out[a:b])):
            out[a:b] = _split_items(raw, u8, ends, a, b, kind, where)
    return out
