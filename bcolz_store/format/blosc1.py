"""The inside of a Blosc-1 chunk: its block-start table, its blocks and their streams.

After the 16-byte header (:mod:`bcolz_store.format.bloscpack`) a Blosc-1
chunk that is not stored raw ("memcpyed") holds a table of ``nblocks``
signed 32-bit little-endian offsets, one per block, each counted from the
start of the chunk, then the blocks' compressed bytes::

    | header (16) | bstarts: nblocks x int32 | block ... | block ... |

``nblocks = ceil(nbytes / blocksize)``; every block holds ``blocksize``
uncompressed bytes but the last, which holds the rest (the "leftover
block").  A block is ``nsplits`` streams one after another, each an int32
compressed size followed by that many bytes; a stream whose size equals its
uncompressed size (``blocksize / nsplits``) is stored raw.  ``nsplits`` is
the typesize when the chunk's flags do not forbid splitting (bit 0x10), the
typesize is at most 16, the block holds at least 128 typesize-units and the
block is not the leftover block; otherwise 1.  The streams, concatenated,
are the block after its filter: byte shuffle (flag 0x01, typesize > 1;
byte ``k`` of element ``i`` at ``k * n + i`` for the ``n`` whole elements,
any rest raw at the end), bitshuffle (0x04), or none.  The codec is
``flags >> 5``: 0 blosclz, 1 lz4 (lz4 and lz4hc), 2 snappy, 3 zlib, 4 zstd.

Blocks are not necessarily stored in order (c-blosc's threads append them
as they finish), so a block's compressed extent runs from its start to the
next start in byte order, or to ``ctbytes``.

Source: c-blosc 1.x ``README_CHUNK_FORMAT.rst`` and the decoder's rules for
the number of splits (blosc.c ``blosc_d``); checked against python-blosc's
own decoding of every codec, filter and typesize by
tests/format/test_blosc1.py.

Pure functions: nothing here opens a file or decompresses.  Every offset and
size is checked before it is used, so a lying table raises
:class:`~bcolz_store.errors.FormatError` instead of reading out of bounds.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import FormatError
from .bloscpack import BLOSC_HEADER_LENGTH, BloscHeader, parse_blosc_header

__all__ = ["BLOSC_BITSHUFFLE", "BLOSC_DONT_SPLIT", "BLOSC_SHUFFLE", "BlockTable", "CODECS",
           "block_table", "block_table_prefix", "stream_sizes"]

BLOSC_SHUFFLE = 0x01
BLOSC_BITSHUFFLE = 0x04
BLOSC_DONT_SPLIT = 0x10
# Codec format numbers (flags >> 5) and their names.
CODECS = {0: "blosclz", 1: "lz4", 2: "snappy", 3: "zlib", 4: "zstd"}
_MAX_SPLITS = 16
_MIN_BUFFERSIZE = 128
_INT32 = struct.Struct("<i")


@dataclass(frozen=True)
class BlockTable:
    """Where each block of one Blosc-1 chunk is, checked against the chunk's size.

    Attributes
    ----------
    header : BloscHeader
    starts : tuple of int
        Offset of each block's first stream size, from the start of the chunk.
    ends : tuple of int
        Offset just past each block's compressed bytes.
    where : str
        Named in error messages.
    """

    header: BloscHeader
    starts: tuple
    ends: tuple
    where: str

    @property
    def nblocks(self) -> int:
        return len(self.starts)

    @property
    def codec(self) -> str:
        """Name of the codec of every stream (``"blosclz"``, ``"lz4"``, ...)."""
        return CODECS.get(self.header.flags >> 5, f"codec {self.header.flags >> 5}")

    @property
    def filter(self) -> str:
        """``"shuffle"``, ``"bitshuffle"`` or ``"none"``, as the decoder applies it."""
        flags, typesize = self.header.flags, self.header.typesize
        if flags & BLOSC_SHUFFLE and typesize > 1:
            return "shuffle"
        if flags & BLOSC_BITSHUFFLE:
            return "bitshuffle"
        return "none"

    def block_nbytes(self, block: int) -> int:
        """Uncompressed bytes of ``block``."""
        hdr = self.header
        if block == self.nblocks - 1:
            return hdr.nbytes - block * hdr.blocksize
        return hdr.blocksize

    def nsplits(self, block: int) -> int:
        """Streams in ``block`` (the typesize, or 1)."""
        hdr = self.header
        leftover = block == self.nblocks - 1 and hdr.nbytes % hdr.blocksize
        if (not hdr.flags & BLOSC_DONT_SPLIT and hdr.typesize <= _MAX_SPLITS
                and hdr.blocksize // hdr.typesize >= _MIN_BUFFERSIZE and not leftover):
            return hdr.typesize
        return 1


def block_table_prefix(data, where: str = "chunk") -> int:
    """Bytes at the start of a Blosc-1 chunk that hold its header and block table.

    Parameters
    ----------
    data : bytes-like
        At least the chunk's first 16 bytes.

    Returns
    -------
    int
        16 for a chunk stored raw or empty, else ``16 + 4 * nblocks``.

    Raises
    ------
    FormatError
        If the header is truncated, of an unknown version, or its sizes
        cannot describe a chunk.
    """
    if len(data) < BLOSC_HEADER_LENGTH:
        raise FormatError(f"{where}: truncated Blosc header ({len(data)} of "
                          f"{BLOSC_HEADER_LENGTH} bytes)")
    hdr = parse_blosc_header(memoryview(data)[:BLOSC_HEADER_LENGTH], where, partial=True)
    if hdr.memcpyed or not hdr.nbytes:
        return BLOSC_HEADER_LENGTH
    return BLOSC_HEADER_LENGTH + 4 * -(-hdr.nbytes // hdr.blocksize)


def block_table(data, where: str = "chunk", partial: bool = False) -> BlockTable:
    """Parse and check the header and block-start table of a Blosc-1 chunk.

    Parameters
    ----------
    data : bytes-like
        The whole chunk, or (with ``ctbytes``) at least its first
        :func:`block_table_prefix` bytes.
    where : str
        Named in error messages.
    partial : bool, default False
        ``data`` is only a prefix: the size the header announces is taken as
        the chunk's size (reads past the real end are refused by the reader).

    Returns
    -------
    BlockTable
        With no blocks for a raw (memcpyed) or empty chunk.

    Raises
    ------
    FormatError
        If the header is invalid, a block start points into the header or
        table or past the chunk, two blocks start at the same offset, or a
        block's extent cannot hold its stream sizes.
    """
    if not partial:
        hdr = parse_blosc_header(data, where)
    else:
        hdr = parse_blosc_header(memoryview(data)[:BLOSC_HEADER_LENGTH], where, partial=True)
    if hdr.memcpyed or not hdr.nbytes:
        return BlockTable(hdr, (), (), where)
    nblocks = -(-hdr.nbytes // hdr.blocksize)
    first = BLOSC_HEADER_LENGTH + 4 * nblocks
    if len(data) < first:
        raise FormatError(f"{where}: truncated Blosc block table ({len(data)} of {first} bytes)")
    starts = struct.unpack_from(f"<{nblocks}i", data, BLOSC_HEADER_LENGTH)
    order = sorted(range(nblocks), key=starts.__getitem__)
    ends = [0] * nblocks
    for rank, block in enumerate(order):
        start = starts[block]
        end = starts[order[rank + 1]] if rank + 1 < nblocks else hdr.ctbytes
        if not first <= start < end <= hdr.ctbytes:
            raise FormatError(f"{where}: Blosc block {block} starts at byte {start}, outside "
                              f"{first}..{hdr.ctbytes} or where another block starts")
        ends[block] = end
    table = BlockTable(hdr, tuple(starts), tuple(ends), where)
    for block in range(nblocks):
        if ends[block] - starts[block] < 4 * table.nsplits(block):
            raise FormatError(f"{where}: Blosc block {block} has {ends[block] - starts[block]} "
                              f"bytes, too few for its {table.nsplits(block)} stream sizes")
    return table


def stream_sizes(table: BlockTable, block: int, read_many) -> list:
    """``[(start, size), ...]``: where the bytes of each stream of ``block``
    begin (after its size field) and their compressed size.

    The sizes are read in rounds: each round asks for the 4-byte size fields
    where they would be if every stream not yet known were stored raw, and
    keeps those that turn out right.  Streams that do not compress (the low
    bytes of floating-point numbers) usually are raw, so a block of 8
    streams takes 2 or 3 rounds instead of 8 reads one after another.

    Parameters
    ----------
    table : BlockTable
    block : int
    read_many : callable
        ``read_many([(start, stop), ...])`` returns the chunk's bytes of each
        range; only 4-byte size fields are asked for.

    Returns
    -------
    list of (int, int)
        Chunk offset of each stream's bytes, and their number.

    Raises
    ------
    FormatError
        If a stream size is not positive or runs past the block's extent.
    """
    pos, end = table.starts[block], table.ends[block]
    nsplits = table.nsplits(block)
    neblock = table.block_nbytes(block) // nsplits
    out = []
    while len(out) < nsplits:
        if pos + 4 > end:
            raise FormatError(f"{table.where}: Blosc block {block} ends inside the size of "
                              f"stream {len(out)}")
        guesses = [at for at in range(pos, end - 3, 4 + neblock)][:nsplits - len(out)]
        for at, field in zip(guesses, read_many([(at, at + 4) for at in guesses])):
            if at != pos:                 # a stream before it was not raw: guess again
                break
            size = _INT32.unpack(bytes(field))[0]
            pos += 4
            if size <= 0 or pos + size > end:
                raise FormatError(f"{table.where}: Blosc block {block}, stream {len(out)}: "
                                  f"size {size} does not fit in the block's {end - pos} "
                                  f"remaining bytes")
            out.append((pos, size))
            pos += size
            if len(out) == nsplits or pos + 4 > end:
                break
    return out
