"""Byte layouts of a chunk file: the bloscpack header and the Blosc-1 header.

A chunk file ``data/__N.blp`` is a 16-byte bloscpack header followed by
exactly one Blosc-1 chunk::

    |-0-|-1-|-2-|-3-|-4-|-5-|-6-|-7-|-8-|-9-|-A-|-B-|-C-|-D-|-E-|-F-|
    | b   l   p   k | ^ | RESERVED  |           nchunks             |
                      |
                      +-- format version (1)

    nchunks: signed 64-bit little-endian, always 1 in bcolz 1.x.

The Blosc-1 chunk starts with its own 16-byte header::

    |-0-|-1-|-2-|-3-|-4-|-5-|-6-|-7-|-8-|-9-|-A-|-B-|-C-|-D-|-E-|-F-|
      ^   ^   ^   ^ |     nbytes    |   blocksize   |    ctbytes    |
      |   |   |   +-- typesize
      |   |   +------ flags
      |   +---------- versionlz (codec format version)
      +-------------- version (Blosc format version)

    nbytes, blocksize, ctbytes: unsigned 32-bit little-endian.  ctbytes counts
    the whole Blosc chunk, header included.

Source: bcolz format v1.0 (seeds/001) and the C-Blosc 1.x header description;
checked by tests/format/test_bloscpack.py against every fixture chunk of
bcolz 1.13 (each starts ``626c706b 01000000 01000000 00000000``).

Pure functions: nothing here opens a file.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import FormatError

__all__ = [
    "BLOSCPACK_FORMAT_VERSION",
    "BLOSCPACK_HEADER_LENGTH",
    "BLOSCPACK_MAGIC",
    "BLOSC_HEADER_LENGTH",
    "BLOSC_MAX_OVERHEAD",
    "BloscHeader",
    "chunk_file_nbytes",
    "pack_bloscpack_header",
    "parse_blosc_header",
    "parse_bloscpack_header",
    "split_chunk_file",
]

BLOSCPACK_MAGIC = b"blpk"
BLOSCPACK_FORMAT_VERSION = 1
BLOSCPACK_HEADER_LENGTH = 16
BLOSC_HEADER_LENGTH = 16
BLOSC_MAX_OVERHEAD = 16
# Flags bit 1 (0x02) marks a chunk stored without compression (memcpyed).
BLOSC_MEMCPYED = 0x02

_BLOSCPACK = struct.Struct("<4sB3sq")
_BLOSC = struct.Struct("<BBBBIII")
_CHUNK_FILE = struct.Struct("<4sB3sqBBBBIII")  # both headers, as they start a chunk file


def pack_bloscpack_header(nchunks: int = 1) -> bytes:
    """Return the 16-byte bloscpack header that starts every chunk file.

    Parameters
    ----------
    nchunks : int, default 1
        Number of Blosc chunks that follow (bcolz 1.x always writes 1).

    Returns
    -------
    bytes
        16 bytes: ``b"blpk"``, version 1, three zero bytes, ``nchunks`` as int64 LE.
    """
    return _BLOSCPACK.pack(BLOSCPACK_MAGIC, BLOSCPACK_FORMAT_VERSION, b"\0\0\0", nchunks)


def parse_bloscpack_header(data: bytes, where: str = "chunk file") -> int:
    """Check a bloscpack header and return its ``nchunks``.

    Raises
    ------
    FormatError
        If fewer than 16 bytes are given, the magic is not ``blpk``, the
        version is not 1 or ``nchunks`` is not 1.
    """
    if len(data) < BLOSCPACK_HEADER_LENGTH:
        raise FormatError(
            f"{where}: truncated bloscpack header ({len(data)} of {BLOSCPACK_HEADER_LENGTH} bytes)")
    magic, version, _reserved, nchunks = _BLOSCPACK.unpack_from(data)
    if magic != BLOSCPACK_MAGIC:
        raise FormatError(f"{where}: bad magic {magic!r}, expected {BLOSCPACK_MAGIC!r}")
    if version != BLOSCPACK_FORMAT_VERSION:
        raise FormatError(f"{where}: bloscpack format version {version}, expected 1")
    if nchunks != 1:
        raise FormatError(f"{where}: bloscpack header announces {nchunks} chunks, expected 1")
    return nchunks


@dataclass(frozen=True)
class BloscHeader:
    """The fields of a Blosc-1 chunk header (all sizes in bytes)."""

    version: int
    versionlz: int
    flags: int
    typesize: int
    nbytes: int
    blocksize: int
    ctbytes: int

    @property
    def memcpyed(self) -> bool:
        """True when the payload is stored uncompressed."""
        return bool(self.flags & BLOSC_MEMCPYED)


def parse_blosc_header(data: bytes, where: str = "chunk", partial: bool = False) -> BloscHeader:
    """Parse and sanity-check the 16-byte header of a Blosc-1 chunk.

    Parameters
    ----------
    data : bytes-like
        At least the whole Blosc chunk (header and payload).
    where : str
        Named in error messages (usually the chunk file path).
    partial : bool, default False
        ``data`` is only the start of the chunk (a ranged read): its length
        is not compared with ``ctbytes``.

    Returns
    -------
    BloscHeader

    Raises
    ------
    FormatError
        If the header is truncated, its version is unknown, ``ctbytes`` does
        not equal the length of ``data``, or the sizes are inconsistent (a
        lying header), so that C never sees a buffer it could overrun.
    """
    size = len(data)
    if size < BLOSC_HEADER_LENGTH:
        raise FormatError(f"{where}: truncated Blosc header ({size} of {BLOSC_HEADER_LENGTH} bytes)")
    hdr = BloscHeader(*_BLOSC.unpack_from(data))
    if hdr.version not in (1, 2):
        raise FormatError(f"{where}: unknown Blosc format version {hdr.version}")
    if hdr.typesize == 0:
        raise FormatError(f"{where}: Blosc header has typesize 0")
    if hdr.ctbytes != size and not partial:
        raise FormatError(
            f"{where}: Blosc header says the chunk holds {hdr.ctbytes} bytes, found {size}")
    if hdr.ctbytes < BLOSC_HEADER_LENGTH:
        raise FormatError(f"{where}: Blosc header ctbytes {hdr.ctbytes} is below the header size")
    if hdr.memcpyed:
        if hdr.ctbytes != hdr.nbytes + BLOSC_MAX_OVERHEAD:
            raise FormatError(
                f"{where}: uncompressed Blosc chunk of {hdr.nbytes} bytes has ctbytes {hdr.ctbytes}")
    elif hdr.nbytes:
        if hdr.blocksize == 0:
            raise FormatError(f"{where}: Blosc header has blocksize 0 for {hdr.nbytes} bytes")
        nblocks = -(-hdr.nbytes // hdr.blocksize)
        if BLOSC_HEADER_LENGTH + 4 * nblocks > hdr.ctbytes:
            raise FormatError(
                f"{where}: Blosc chunk of {hdr.ctbytes} bytes cannot hold {nblocks} block offsets")
    return hdr


def split_chunk_file(data: bytes, where: str = "chunk file") -> memoryview:
    """Check a whole chunk file and return a view of its Blosc chunk.

    Raises
    ------
    FormatError
        If the bloscpack header or the Blosc header is invalid, or the file
        holds more or fewer bytes than the Blosc header's ``ctbytes``.
    """
    parse_bloscpack_header(data, where)
    view = memoryview(data)[BLOSCPACK_HEADER_LENGTH:]
    parse_blosc_header(view, where)
    return view


def chunk_file_nbytes(data: bytes, where: str = "chunk file") -> int:
    """Check a whole chunk file and return the uncompressed size of its Blosc chunk.

    The same checks as :func:`split_chunk_file` followed by
    :func:`parse_blosc_header`, in one ``struct`` call for the common case of
    a valid compressed chunk (the per-chunk cost of every read).

    Raises
    ------
    FormatError
        As :func:`split_chunk_file`.
    """
    if len(data) >= BLOSCPACK_HEADER_LENGTH + BLOSC_HEADER_LENGTH:
        (magic, version, _reserved, nchunks, bversion, _versionlz, flags, typesize, nbytes,
         blocksize, ctbytes) = _CHUNK_FILE.unpack_from(data)
        if (magic == BLOSCPACK_MAGIC and version == BLOSCPACK_FORMAT_VERSION and nchunks == 1
                and bversion in (1, 2) and typesize and not flags & BLOSC_MEMCPYED
                and ctbytes == len(data) - BLOSCPACK_HEADER_LENGTH and nbytes and blocksize
                and BLOSC_HEADER_LENGTH + 4 * -(-nbytes // blocksize) <= ctbytes):
            return nbytes
    # Anything unusual (uncompressed or empty chunks, or an error) takes the
    # path that checks field by field and names what is wrong.
    return parse_blosc_header(split_chunk_file(data, where), where).nbytes
