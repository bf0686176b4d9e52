"""Variable-length quantities (VLQ) and the Fletcher-16 checksum, for IndexedData.

VLQ here is the little-endian base-128 form (LEB128: the IndexedData paper's
detailed view says VLQs are "LE" in prefix order and "BE" in postfix order,
i.e. the same bytes reversed; the Wikipedia page it links to leads with the
big-endian MIDI form, so this is a decision too): 7 bits per byte, least
significant group first, the high bit set on every byte except the last::

    300 = 0b10_0101100  ->  forward  ac 02   (0x80 | 0x2c, then 0x02)
                            reversed 02 ac   (read backwards: ac first)

The reversed form (:func:`encode_vlq_reversed`) is the same bytes in reverse
order, so a reader walking backwards from the end of a postfix manifest meets
the low group first and stops at the byte whose high bit is clear.  Encodings
are canonical: no redundant zero high group, at most 10 bytes (any uint64);
the decoders refuse anything else.

Fletcher-16 is the checksum the paper proposes for the manifest's validation
key (2.2.4); see format/idata.py for what it covers.

Source: IndexedData white paper (seeds/002);
https://en.wikipedia.org/wiki/Variable-length_quantity and
https://en.wikipedia.org/wiki/Fletcher%27s_checksum#Fletcher-16; checked by
tests/format/test_idata.py.

Pure functions: nothing here opens a file.
"""

from __future__ import annotations

import numpy as np

from ..errors import FormatError

__all__ = ["U64_MAX", "decode_vlq", "decode_vlq_reversed", "encode_vlq", "encode_vlq_reversed",
           "fletcher16"]

_VLQ_MAX_NBYTES = 10  # ceil(64 / 7): enough for any uint64
U64_MAX = (1 << 64) - 1
_FLETCHER_BLOCK = 1 << 16


# --------------------------------------------------------------------- VLQ

def encode_vlq(value: int) -> bytes:
    """Encode a non-negative integer as a forward VLQ (LEB128).

    Parameters
    ----------
    value : int
        0 <= value < 2**64.

    Returns
    -------
    bytes
        1 to 10 bytes, least significant 7-bit group first, high bit set on
        all bytes but the last.

    Raises
    ------
    ValueError
        If ``value`` is negative or does not fit in 64 bits.

    Examples
    --------
    >>> encode_vlq(300).hex()
    'ac02'
    """
    value = int(value)
    if not 0 <= value <= U64_MAX:
        raise ValueError(f"VLQ value must be in [0, 2**64), not {value}")
    out = bytearray()
    while value > 0x7F:
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_vlq_reversed(value: int) -> bytes:
    """Encode a VLQ to be read backwards: :func:`encode_vlq` with its bytes reversed.

    Raises
    ------
    ValueError
        As :func:`encode_vlq`.

    Examples
    --------
    >>> encode_vlq_reversed(300).hex()
    '02ac'
    """
    return encode_vlq(value)[::-1]


def _vlq_error(where, what, pos):
    return FormatError(f"{where}: idata manifest: {what} at byte {pos}")


def decode_vlq(buf, offset: int = 0, limit: int = U64_MAX, where: str = "idata"):
    """Decode a forward VLQ starting at ``buf[offset]``.

    Parameters
    ----------
    buf : bytes-like
        The buffer.
    offset : int, default 0
        Position of the first (least significant) byte.
    limit : int, default 2**64 - 1
        Largest value accepted; decoding stops as soon as the value exceeds it.
    where : str
        Named in error messages.

    Returns
    -------
    value : int
    next_offset : int
        Position just after the VLQ.

    Raises
    ------
    FormatError
        If the buffer ends inside the VLQ, the VLQ is longer than 10 bytes or
        has a redundant zero high group, or its value exceeds ``limit``.

    Examples
    --------
    >>> decode_vlq(bytes.fromhex("ac02"))
    (300, 2)
    """
    mv = memoryview(buf).cast("B")
    value = shift = 0
    pos = offset
    for nread in range(1, _VLQ_MAX_NBYTES + 1):
        if pos >= len(mv):
            raise _vlq_error(where, "truncated VLQ", pos)
        byte = mv[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if value > limit:
            raise _vlq_error(where, f"VLQ value above the limit {limit}", offset)
        if not byte & 0x80:
            if byte == 0 and nread > 1:
                raise _vlq_error(where, "non-canonical VLQ (zero high group)", offset)
            return value, pos
    raise _vlq_error(where, f"VLQ longer than {_VLQ_MAX_NBYTES} bytes", offset)


def decode_vlq_reversed(buf, end: int, limit: int = U64_MAX, where: str = "idata"):
    """Decode a reversed VLQ that ends just before ``buf[end]``, reading backwards.

    Parameters
    ----------
    buf : bytes-like
        The buffer.
    end : int
        Position just after the VLQ's last byte (its least significant group
        is ``buf[end - 1]``).
    limit : int, default 2**64 - 1
        Largest value accepted.
    where : str
        Named in error messages.

    Returns
    -------
    value : int
    start : int
        Position of the VLQ's first byte (the new ``end`` for the next field).

    Raises
    ------
    FormatError
        As :func:`decode_vlq`, when the start of the buffer is reached inside
        the VLQ, it is too long, non-canonical, or above ``limit``.

    Examples
    --------
    >>> decode_vlq_reversed(bytes.fromhex("ff02ac"), 3)
    (300, 1)
    """
    mv = memoryview(buf).cast("B")
    value = shift = 0
    pos = end
    for nread in range(1, _VLQ_MAX_NBYTES + 1):
        if pos <= 0:
            raise _vlq_error(where, "truncated reversed VLQ", pos)
        pos -= 1
        byte = mv[pos]
        value |= (byte & 0x7F) << shift
        shift += 7
        if value > limit:
            raise _vlq_error(where, f"VLQ value above the limit {limit}", end - 1)
        if not byte & 0x80:
            if byte == 0 and nread > 1:
                raise _vlq_error(where, "non-canonical VLQ (zero high group)", end - 1)
            return value, pos
    raise _vlq_error(where, f"VLQ longer than {_VLQ_MAX_NBYTES} bytes", end - 1)


# ------------------------------------------------------------- Fletcher-16

def fletcher16(data) -> int:
    """Fletcher-16 checksum of a bytes-like object, vectorised.

    Parameters
    ----------
    data : bytes-like

    Returns
    -------
    int
        ``sum2 << 8 | sum1`` where ``sum1 = sum(b) mod 255`` and ``sum2`` is
        the sum of the running ``sum1`` values mod 255 (both start at 0).

    Notes
    -----
    ``sum2 = sum((n - i) * b[i]) mod 255``, computed with numpy in blocks.
    Source: https://en.wikipedia.org/wiki/Fletcher%27s_checksum#Fletcher-16

    Examples
    --------
    >>> hex(fletcher16(b"abcde"))
    '0xc8f0'
    """
    b = np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8)
    n = b.size
    sum1 = sum2 = 0
    for start in range(0, n, _FLETCHER_BLOCK):
        block = b[start:start + _FLETCHER_BLOCK].astype(np.int64)
        weights = (n - start - np.arange(block.size, dtype=np.int64)) % 255
        sum1 += int(block.sum())
        sum2 += int((block * weights).sum())
    return (sum2 % 255) << 8 | (sum1 % 255)
