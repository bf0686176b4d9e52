"""Decoding only the Blosc blocks, and the streams in them, that a read needs.

A point read, a small slice or a gather of a few rows needs a few bytes of a
chunk of up to a few MiB.  python-blosc decodes only whole chunks, so this
module reads the chunk's block table (:mod:`bcolz_store.format.blosc1`) and
then, for each block the bytes fall in, only what they need: of a stream
stored raw, just the bytes wanted; of a compressed stream, the stream,
decoded with the codec's own package (``lz4.block`` for lz4 and lz4hc,
``zstandard``, ``zlib``) and kept in a small cache.  The byte shuffle is
undone with numpy for the wanted elements only.

Chunks this cannot decode exactly (blosclz and snappy, for which no package
is installed here; bitshuffle; a block whose size is not a whole number of
typesize-units) are left to whole-chunk decoding: :func:`decodable` says
which, and callers fall back silently.  Results are byte-identical to
python-blosc's (tests/chunks/test_blocks.py, on every fixture, codec,
filter, typesize and odd size).

Bytes come from a *source*: :class:`BytesSource` over a chunk in memory, or
any object with ``read(start, stop)`` returning exactly those chunk bytes
(the chunk engine reads byte ranges of chunk files, :mod:`.block_reads`).
"""

from __future__ import annotations

import threading
import zlib
from collections import OrderedDict

import numpy as np

from ..errors import CodecError, FormatError
from ..format.blosc1 import BlockTable, stream_sizes
from ..format.bloscpack import BLOSC_MAX_OVERHEAD

__all__ = ["BlockCache", "BytesSource", "ChunkBlocks", "decodable", "decoder_for", "shared_cache"]


def _lz4(data, size: int) -> bytes:
    import lz4.block
    return lz4.block.decompress(data, uncompressed_size=size)


def _zstd(data, size: int) -> bytes:
    import zstandard
    return zstandard.ZstdDecompressor().decompress(data, max_output_size=size)


def _zlib(data, size: int) -> bytes:
    inflate = zlib.decompressobj()
    out = inflate.decompress(data, size)
    if inflate.unconsumed_tail or not inflate.eof:
        raise zlib.error("stream holds more than its block, or is cut short")
    return out


def _available(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


_DECODERS = {"lz4": ("lz4.block", _lz4), "zstd": ("zstandard", _zstd), "zlib": ("zlib", _zlib)}
_FOUND: dict = {}


def decoder_for(codec: str):
    """The function ``decode(stream, nbytes) -> bytes`` for ``codec``, or None
    when no package to decode it is installed (blosclz, snappy)."""
    found = _FOUND.get(codec)
    if found is None:
        module, function = _DECODERS.get(codec, (None, None))
        found = _FOUND[codec] = (function if module and _available(module) else False)
    return found or None


def decodable(table: BlockTable) -> bool:
    """Whether :class:`ChunkBlocks` decodes this chunk exactly (else decode it whole)."""
    hdr = table.header
    if hdr.memcpyed or not hdr.nbytes:
        return True
    if table.filter == "bitshuffle" or decoder_for(table.codec) is None:
        return False
    if table.filter == "shuffle":
        last = table.block_nbytes(table.nblocks - 1)
        return hdr.blocksize % hdr.typesize == 0 and last % hdr.typesize == 0
    return True


class BytesSource:
    """The bytes of a whole chunk in memory, as a source."""

    __slots__ = ("data",)

    def __init__(self, data):
        self.data = memoryview(data).cast("B")

    def read(self, start: int, stop: int):
        return self.data[start:stop]

    def read_many(self, ranges) -> list:
        return [self.data[start:stop] for start, stop in ranges]


class BlockCache:
    """A least-recently-used cache of decoded streams, bounded in bytes, safe
    to use from several threads.

    Parameters
    ----------
    budget : int or callable
        Bytes kept at most (0: nothing is kept), or a function giving them
        (asked at each :meth:`put`: :func:`shared_cache` follows
        ``bcolz_store.defaults.block_cache_budget``).
    """

    def __init__(self, budget):
        self._budget = budget
        self.nbytes = 0
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    @property
    def budget(self) -> int:
        budget = self._budget
        return budget() if callable(budget) else budget

    def resize(self, budget) -> None:
        """Keep at most ``budget`` bytes (or a function's answer) from now on,
        evicting at once."""
        with self._lock:
            self._budget = budget
            self._evict()

    def _evict(self) -> None:
        budget = self.budget
        while self.nbytes > budget:
            _key, dropped = self._items.popitem(last=False)
            self.nbytes -= len(dropped)

    def get(self, key):
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key, value) -> None:
        size = len(value)
        if size > self.budget:
            self._evict()                  # the budget may have shrunk meanwhile
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.nbytes -= len(old)
            self._items[key] = value
            self.nbytes += size
            self._evict()

    def drop(self, match=None) -> None:
        """Forget every entry, or those whose key ``match(key)`` accepts."""
        with self._lock:
            if match is None:
                self._items.clear()
                self.nbytes = 0
                return
            for key in [k for k in self._items if match(k)]:
                self.nbytes -= len(self._items.pop(key))


_SHARED: list = []


def shared_cache() -> BlockCache:
    """The process's one cache of decoded streams, bounded by
    ``bcolz_store.defaults.block_cache_budget`` (64 MiB unless set)."""
    if not _SHARED:
        from ..defaults import defaults
        with _SHARED_LOCK:
            if not _SHARED:
                _SHARED.append(BlockCache(lambda: defaults.block_cache_budget))
    return _SHARED[0]


_SHARED_LOCK = threading.Lock()


class ChunkBlocks:
    """Block-level reads of one Blosc-1 chunk whose table is known.

    Parameters
    ----------
    table : BlockTable
        The chunk's checked table (:func:`bcolz_store.format.blosc1.block_table`).
    source : object
        ``source.read(start, stop)`` returns chunk bytes ``start:stop``
        (exactly that many, or raises); ``source.prefetch(ranges)``, when
        present, is told the block extents a read is about to use; a true
        ``source.remote`` has the streams stored raw read whole and kept in
        the cache like decoded ones (each read of the source costs a
        request), not just the bytes a read needs.
    cache : BlockCache
        Where decoded streams are kept.
    key : hashable
        This chunk's part of the cache keys (the engine uses the chunk number).

    Raises
    ------
    CodecError
        If ``table`` is not :func:`decodable`.
    """

    def __init__(self, table: BlockTable, source, cache: BlockCache, key=None):
        if not decodable(table):
            raise CodecError(f"{table.where}: {table.codec} with {table.filter} is not "
                             f"decoded block by block")
        self.table = table
        self.source = source
        self.cache = cache
        self.key = key
        self._streams: dict = {}
        self._shape: dict = {}

    def _read_many(self, ranges) -> list:
        read_many = getattr(self.source, "read_many", None)
        if read_many is not None:
            return read_many(ranges)
        return [self.source.read(start, stop) for start, stop in ranges]

    def _streams_of(self, block: int) -> list:
        found = self._streams.get(block)
        if found is None:
            found = self._streams[block] = stream_sizes(self.table, block, self._read_many)
        return found

    def _geometry(self, block: int) -> tuple:
        """``(block bytes, stream bytes, whole elements)`` of ``block``."""
        found = self._shape.get(block)
        if found is None:
            table = self.table
            nbytes = table.block_nbytes(block)
            found = self._shape[block] = (nbytes, nbytes // table.nsplits(block),
                                          nbytes // table.header.typesize)
        return found

    @staticmethod
    def _pieces(neblock: int, lo: int, hi: int) -> list:
        """``[(stream, lo, hi), ...]``: the stream bytes that make up bytes
        ``lo:hi`` of a block's filtered form (its streams joined)."""
        first = lo // neblock
        if (hi - 1) // neblock == first:
            return [(first, lo - first * neblock, hi - first * neblock)]
        return [(s, max(lo - s * neblock, 0), min(hi - s * neblock, neblock))
                for s in range(first, (hi - 1) // neblock + 1)]

    def _plan(self, start: int, stop: int) -> list:
        """``[(out offset, bytes, block, planes), ...]`` for the chunk's decoded
        bytes ``start:stop``: per block, the stream pieces of each byte plane
        (one plane when the chunk is not shuffled)."""
        table = self.table
        bsize = table.header.blocksize
        typesize = table.header.typesize
        shuffled = table.filter != "none"
        plan = []
        for block in range(start // bsize, (stop - 1) // bsize + 1):
            base = block * bsize
            nbytes, neblock, n = self._geometry(block)
            lo, hi = max(start - base, 0), min(stop - base, nbytes)
            if not shuffled:
                planes = [self._pieces(neblock, lo, hi)]
            elif neblock == n:              # split: plane k is stream k
                e_lo, e_hi = lo // typesize, hi // typesize
                planes = [[(k, e_lo, e_hi)] for k in range(typesize)]
            else:
                e_lo, e_hi = lo // typesize, hi // typesize
                planes = [self._pieces(neblock, k * n + e_lo, k * n + e_hi)
                          for k in range(typesize)]
            plan.append((base + lo - start, hi - lo, block, neblock, planes))
        return plan

    def _decode(self, block: int, stream: int, data, neblock: int) -> bytes:
        try:
            decoded = decoder_for(self.table.codec)(data, neblock)
        except Exception as err:  # each codec package raises its own error type
            raise CodecError(f"{self.table.where}: block {block}, stream {stream}: "
                             f"{self.table.codec} could not decode ({err})") from err
        if len(decoded) != neblock:
            raise CodecError(f"{self.table.where}: block {block}, stream {stream}: "
                             f"decoded {len(decoded)} bytes, expected {neblock}")
        self.cache.put((self.key, block, stream), decoded)
        return decoded

    def read_into(self, start: int, out: np.ndarray) -> None:
        """Fill ``out`` (uint8, C-contiguous) with the chunk's decoded bytes
        ``start:start + out.size``.

        For a shuffled chunk, ``start`` and ``out.size`` must be multiples of
        the typesize (whole items always are).  The bytes the read needs
        (raw stream bytes, compressed streams not in the cache) are asked of
        the source in one ``read_many`` call when it has one.

        Raises
        ------
        ValueError
            Bytes outside the chunk.
        FormatError
            A stream size that does not fit its block, or bytes the source
            cannot give (a truncated chunk).
        CodecError
            A stream its codec cannot decode, or that decodes to another size.
        """
        stop = start + out.size
        table = self.table
        hdr = table.header
        shuffled = table.filter != "none"
        if not 0 <= start <= stop <= hdr.nbytes:
            raise ValueError(f"bytes {start}:{stop} outside the chunk's {hdr.nbytes}")
        if start == stop:
            return
        source = self.source
        if hdr.memcpyed:
            out[:] = np.frombuffer(source.read(BLOSC_MAX_OVERHEAD + start,
                                               BLOSC_MAX_OVERHEAD + stop), np.uint8)
            return
        bsize = hdr.blocksize
        prefetch = getattr(source, "prefetch", None)
        if prefetch is not None:
            blocks = range(start // bsize, (stop - 1) // bsize + 1)
            prefetch([(table.starts[b], table.ends[b]) for b in blocks
                      if b not in self._streams])
        plan = self._plan(start, stop)
        # What to fetch: raw pieces (whole raw streams from a remote source),
        # and whole compressed streams not cached.
        keep_raw = getattr(source, "remote", False)
        wanted, got = [], {}
        for _off, _n, block, neblock, planes in plan:
            streams = self._streams_of(block)
            for pieces in planes:
                for stream, lo, hi in pieces:
                    pos, size = streams[stream]
                    if size == neblock and not keep_raw:
                        wanted.append((pos + lo, pos + hi))
                    else:
                        key = (self.key, block, stream)
                        if key not in got:
                            found = self.cache.get(key)
                            got[key] = found
                            if found is None:
                                wanted.append((pos, pos + size))
        read_many = getattr(source, "read_many", None)
        if read_many is not None:
            fetched = dict(zip(wanted, read_many(wanted)))
        else:
            fetched = {span: source.read(*span) for span in wanted}
        typesize = hdr.typesize
        for off, n, block, neblock, planes in plan:
            streams = self._streams_of(block)
            joined = []
            for pieces in planes:
                for stream, lo, hi in pieces:
                    pos, size = streams[stream]
                    if size == neblock and not keep_raw:
                        joined.append(fetched[(pos + lo, pos + hi)])
                        continue
                    key = (self.key, block, stream)
                    decoded = got[key]
                    if decoded is None and size == neblock:     # a raw stream, kept
                        decoded = got[key] = bytes(fetched[(pos, pos + size)])
                        self.cache.put(key, decoded)
                    elif decoded is None:
                        decoded = got[key] = self._decode(block, stream,
                                                          fetched[(pos, pos + size)], neblock)
                    joined.append(memoryview(decoded)[lo:hi])
            data = np.frombuffer(joined[0] if len(joined) == 1 else b"".join(joined), np.uint8)
            if shuffled:                   # planes of byte k of each element: transpose
                m = n // typesize
                out[off:off + n].reshape(m, typesize)[:] = data.reshape(typesize, m).T
            else:
                out[off:off + n] = data
