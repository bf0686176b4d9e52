"""The 32-byte header of a vlen chunk (variable-length ``str``/``bytes`` items).

A vlen chunk is a 32-byte header followed by one zstd frame::

    |-0-|-1-|-2-|-3-|-4-|-5-|-6-|-7-|-8-|-9-|-A-|-B-|-C-|-D-|-E-|-F-|
    | b   v   l   c | ^ | ^ | ^ | ^ |            nitems             |
                      |   |   |   +-- codec (1 = zstd)
                      |   |   +------ flags (0x01 validity bitmap, 0x02 index filtered)
                      |   +---------- kind (1 = str as UTF-8, 2 = bytes)
                      +-------------- format version (1)
    |-10|-11|-12|-13|-14|-15|-16|-17|-18|-19|-1A|-1B|-1C|-1D|-1E|-1F|
    |           rawbytes            |    dict_id    |    cbytes     |

    nitems    uint64 LE  items in the chunk, missing ones included
    rawbytes  uint64 LE  size of the payload once decompressed, at most 2 GiB
    dict_id   uint32 LE  id of the zstd dictionary used, 0 for none
    cbytes    uint32 LE  size of the zstd frame, which is the rest of the chunk

Every field is checked by :func:`parse_vlen_header` against its allowed
values and against the others: ``cbytes`` against the chunk length,
``rawbytes`` against 2 GiB and against the most a zstd frame of ``cbytes``
bytes can expand to (32768 times: a block of at most 128 KiB takes at least 4
bytes), ``nitems`` against ``rawbytes``.  The payload the header describes is
in kinds/vlen/chunk.py.

Source: this library's own format (docs/format.md), built on the
IndexedData white paper (seeds/002) and RFC 8878 (zstd); checked by
tests/chunks/test_vlen_codec.py (golden bytes, hostile headers).

Pure functions: nothing here opens a file.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ...errors import FormatError

__all__ = [
    "VLEN_CODEC_ZSTD",
    "VLEN_FLAG_INDEX_FILTER",
    "VLEN_FLAG_VALIDITY",
    "VLEN_FORMAT_VERSION",
    "VLEN_HEADER_LENGTH",
    "VLEN_KINDS",
    "VLEN_MAGIC",
    "VLEN_MAX_RAWBYTES",
    "VlenHeader",
    "ZSTD_MAX_RATIO",
    "kind_code",
    "pack_vlen_header",
    "parse_vlen_header",
]

VLEN_MAGIC = b"bvlc"
VLEN_FORMAT_VERSION = 1
VLEN_HEADER_LENGTH = 32
VLEN_KINDS = {"str": 1, "bytes": 2}
VLEN_FLAG_VALIDITY = 0x01
VLEN_FLAG_INDEX_FILTER = 0x02
VLEN_CODEC_ZSTD = 1
VLEN_MAX_RAWBYTES = 2 ** 31

ZSTD_MAX_RATIO = 32768          # 128 KiB block / 4-byte RLE block
_MIN_MANIFEST = 3               # empty idata: key (2) + first byte
_HEADER = struct.Struct("<4sBBBBQQII")
_KIND_NAMES = {code: name for name, code in VLEN_KINDS.items()}


@dataclass(frozen=True)
class VlenHeader:
    """The fields of a vlen chunk header (sizes in bytes)."""

    version: int
    kind: str
    flags: int
    codec: int
    nitems: int
    rawbytes: int
    dict_id: int
    cbytes: int

    @property
    def has_validity(self) -> bool:
        """True when the payload ends with a validity bitmap (some item is missing)."""
        return bool(self.flags & VLEN_FLAG_VALIDITY)

    @property
    def index_filtered(self) -> bool:
        """True when the idata index values are stored delta-coded and byte-shuffled."""
        return bool(self.flags & VLEN_FLAG_INDEX_FILTER)

    @property
    def bitmap_nbytes(self) -> int:
        """Size of the validity bitmap, 0 when there is none."""
        return (self.nitems + 7) // 8 if self.has_validity else 0


def pack_vlen_header(header: VlenHeader) -> bytes:
    """Return the 32 header bytes of a vlen chunk (layout in the module docstring).

    Raises
    ------
    ValueError
        If ``header.kind`` is not ``'str'`` or ``'bytes'``.
    struct.error
        If a field does not fit its width.
    """
    return _HEADER.pack(VLEN_MAGIC, header.version, kind_code(header.kind), header.flags,
                        header.codec, header.nitems, header.rawbytes, header.dict_id,
                        header.cbytes)


def parse_vlen_header(buf, where: str = "vlen chunk") -> VlenHeader:
    """Parse and check the header of a whole vlen chunk.

    Parameters
    ----------
    buf : bytes-like
        The whole chunk: header and zstd frame.
    where : str
        Names the file or chunk in error messages.

    Returns
    -------
    VlenHeader

    Raises
    ------
    FormatError
        If the chunk is shorter than 32 bytes; the magic, version, kind,
        flags or codec are unknown; ``cbytes`` is not the length of the rest
        of the chunk; ``rawbytes`` is above 2 GiB, above what ``cbytes`` of
        zstd can expand to, or too small for ``nitems`` items.
    """
    size = len(buf)
    if size < VLEN_HEADER_LENGTH:
        raise FormatError(f"{where}: truncated vlen header ({size} of {VLEN_HEADER_LENGTH} bytes)")
    (magic, version, kind, flags, codec, nitems, rawbytes, dict_id,
     cbytes) = _HEADER.unpack_from(buf)
    if magic != VLEN_MAGIC:
        raise FormatError(f"{where}: bad magic {magic!r}, expected {VLEN_MAGIC!r}")
    if version != VLEN_FORMAT_VERSION:
        raise FormatError(f"{where}: vlen format version {version}, expected {VLEN_FORMAT_VERSION}")
    if kind not in _KIND_NAMES:
        raise FormatError(f"{where}: unknown vlen kind code {kind}, expected 1 (str) or 2 (bytes)")
    if flags & ~(VLEN_FLAG_VALIDITY | VLEN_FLAG_INDEX_FILTER):
        raise FormatError(f"{where}: unknown vlen flags 0x{flags:02x}")
    if codec != VLEN_CODEC_ZSTD:
        raise FormatError(f"{where}: unknown vlen codec {codec}, expected 1 (zstd)")
    if cbytes != size - VLEN_HEADER_LENGTH:
        raise FormatError(f"{where}: header says the zstd frame holds {cbytes} bytes, "
                          f"found {size - VLEN_HEADER_LENGTH}")
    if rawbytes > VLEN_MAX_RAWBYTES:
        raise FormatError(f"{where}: header claims {rawbytes} raw bytes, above the "
                          f"{VLEN_MAX_RAWBYTES}-byte limit")
    if rawbytes > ZSTD_MAX_RATIO * cbytes:
        raise FormatError(f"{where}: header claims {rawbytes} raw bytes, more than a "
                          f"{cbytes}-byte zstd frame can hold")
    hdr = VlenHeader(version, _KIND_NAMES[kind], flags, codec, nitems, rawbytes, dict_id, cbytes)
    if nitems + _MIN_MANIFEST + hdr.bitmap_nbytes > rawbytes:
        raise FormatError(f"{where}: {nitems} items cannot fit in {rawbytes} raw bytes")
    if hdr.has_validity and nitems == 0:
        raise FormatError(f"{where}: validity bitmap flagged for an empty chunk")
    return hdr


def kind_code(kind) -> int:
    """The header code of ``kind`` ('str' -> 1, 'bytes' -> 2).

    Raises
    ------
    ValueError
        For any other kind.
    """
    try:
        return VLEN_KINDS[kind]
    except (KeyError, TypeError):
        raise ValueError(f"kind must be 'str' or 'bytes', not {kind!r}") from None
