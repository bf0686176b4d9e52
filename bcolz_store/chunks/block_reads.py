"""Reads of a few items of a chunk: only the Blosc blocks and streams they need.

A carray's chunk engine asks :class:`BlockReads` for items ``lo:hi`` of a
full chunk; it answers with the items, or None when the chunk is better (or
only) decoded whole: a codec or filter :func:`~.blocks.decodable` refuses,
or a dataset that must read whole files (``verify=True`` checks each file's
md5; a file staged by an uncommitted write).

For a chunk file it reads the bloscpack and Blosc headers and the block
table once (one ranged read of the file's first bytes, kept for the next
reads of that chunk), then the byte ranges the items need.  On a remote
store a read fetches the whole extents of the blocks it touches in one
request (neighbouring blocks coalesced), so a point read costs at most two
requests (the table, the first time; the block) and one block's bytes, and
keeps every stream of the block in the cache (those stored raw too), so
that reading the block again costs nothing while it stays there; once
evicted, the streams it needs are fetched in one request again.  On a local
disk it reads just the raw stream bytes and the compressed streams it must
decode.  (A remote store whose reader checks contents reads ranges only on
condition that the file has its recorded md5, and answers None otherwise.)  Decoded streams are kept in a :class:`~.blocks.BlockCache`.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict

import numpy as np

from ..errors import BcolzStoreError, CodecError, FormatError
from ..format.blosc1 import block_table, block_table_prefix
from ..format.bloscpack import BLOSCPACK_HEADER_LENGTH, parse_bloscpack_header
from .blocks import BlockCache, BytesSource, ChunkBlocks, decodable, shared_cache
from .codec import typesize_for

__all__ = ["BlockReads", "TABLE_READ_BYTES"]

# Bytes read at the start of a chunk file to find its headers and block table
# (a table of up to 1,020 blocks; a longer one takes a second read).
TABLE_READ_BYTES = 4096
# Chunks whose tables are kept.
TABLES_KEPT = 4096


class _WholeFile(Exception):
    """The dataset reads this chunk file only whole (verify, staged files)."""


class _FileSource:
    """The Blosc chunk inside chunk file ``nchunk``, read by byte ranges."""

    __slots__ = ("chunks", "nchunk", "remote", "_held")

    def __init__(self, chunks, nchunk: int, remote: bool):
        self.chunks = chunks
        self.nchunk = nchunk
        self.remote = remote
        self._held = []            # (start, bytes) fetched ahead by prefetch

    def _check(self, data, start: int, stop: int):
        if data is None:
            raise _WholeFile()
        if len(data) != stop - start:
            raise FormatError(f"{self.chunks.path(self.nchunk)}: the file ends inside the "
                              f"Blosc chunk its header describes")
        return data

    def _held_bytes(self, start: int, stop: int):
        for first, data in self._held:
            if first <= start and stop <= first + len(data):
                return memoryview(data)[start - first:stop - first]
        return None

    def read(self, start: int, stop: int):
        found = self._held_bytes(start, stop)
        if found is not None:
            return found
        skip = BLOSCPACK_HEADER_LENGTH
        return self._check(self.chunks.read_file_range(self.nchunk, skip + start, skip + stop),
                           start, stop)

    def read_many(self, ranges) -> list:
        out = [self._held_bytes(start, stop) for start, stop in ranges]
        missing = [span for span, found in zip(ranges, out) if found is None]
        if missing and self.remote and len(missing) > 1:
            # One request for what lies between too: a chunk whose streams are
            # known already needs a few bytes of each raw stream, further
            # apart than a store coalesces, and a request costs more.
            self.prefetch([(min(start for start, _ in missing),
                            max(stop for _, stop in missing))])
            return [found if found is not None else self._held_bytes(*span)
                    for span, found in zip(ranges, out)]
        if missing:
            skip = BLOSCPACK_HEADER_LENGTH
            got = self.chunks.read_file_ranges(
                self.nchunk, [(skip + start, skip + stop) for start, stop in missing])
            if got is None:
                raise _WholeFile()
            got = iter(got)
            out = [found if found is not None else self._check(next(got), *span)
                   for span, found in zip(ranges, out)]
        return out

    def prefetch(self, extents) -> None:
        """On a remote store, fetch the block extents a read will use at once."""
        extents = [span for span in extents if self._held_bytes(*span) is None]
        if not self.remote or not extents:
            return
        skip = BLOSCPACK_HEADER_LENGTH
        got = self.chunks.read_file_ranges(
            self.nchunk, [(skip + start, skip + stop) for start, stop in extents])
        if got is None:
            raise _WholeFile()
        self._held = self._held + [(start, self._check(data, start, stop))
                                   for (start, stop), data in zip(extents, got)]

    def hold(self, data) -> None:
        """Keep the whole Blosc chunk, read already, for the read under way."""
        self._held = [(0, data)]

    def release(self) -> None:
        self._held = []


class BlockReads:
    """Block-level reads of the full chunks of one carray.

    Parameters
    ----------
    chunks : DiskChunks or MemoryChunks
        The carray's chunk sequence.
    atom : numpy.dtype
    chunk_nbytes : int
        Uncompressed bytes of a full chunk.
    remote : bool
        Chunk files are on a remote store.
    private : bool, default False
        Keep no decoded streams (else they go to the process's
        :func:`~.blocks.shared_cache`).
    """

    _tokens = itertools.count()

    def __init__(self, chunks, atom: np.dtype, chunk_nbytes: int, remote: bool,
                 private: bool = False):
        self.chunks = chunks
        self.atom = atom
        self.chunk_nbytes = chunk_nbytes
        self.remote = remote
        self.token = next(self._tokens)     # this carray's part of the shared cache's keys
        self.cache = BlockCache(0) if private else shared_cache()
        self._tables: OrderedDict = OrderedDict()   # nchunk -> ChunkBlocks, or False
        self._one_block = False     # the last table read (remote) had one block
        self._lock = threading.Lock()

    def use_shared_cache(self, shared: bool) -> None:
        """Keep decoded streams in the shared cache, or none at all."""
        self.drop()
        self.cache = shared_cache() if shared else BlockCache(0)

    def drop(self, nchunk=None) -> None:
        """Forget what is known of chunk ``nchunk`` (of every chunk when None)."""
        with self._lock:
            if nchunk is None:
                self._tables.clear()
            else:
                self._tables.pop(nchunk, None)
        token = self.token
        self.cache.drop((lambda key: isinstance(key[0], tuple) and key[0][0] == token)
                        if nchunk is None else
                        (lambda key: key[0] == (token, nchunk)))

    def _stored(self) -> bool:
        return hasattr(self.chunks, "read_file_range")

    def _open(self, nchunk: int):
        """The :class:`ChunkBlocks` of full chunk ``nchunk``, or False."""
        where = self.chunks.path(nchunk) if self._stored() else f"chunk {nchunk}"
        if self._stored():
            source = _FileSource(self.chunks, nchunk, self.remote)
            # On a remote store whose chunks are one block each (bcolz's float64
            # chunks with lz4), the whole file is what a first read needs: one
            # request instead of the table's and then the block's.
            whole = self.remote and self._one_block
            head = self.chunks.read_file_range(
                nchunk, 0, self.chunks.limit() if whole else
                BLOSCPACK_HEADER_LENGTH + TABLE_READ_BYTES)
            if head is None:
                raise _WholeFile()
            parse_bloscpack_header(head[:BLOSCPACK_HEADER_LENGTH], where)
            prefix = memoryview(head)[BLOSCPACK_HEADER_LENGTH:]
            need = block_table_prefix(prefix, where)
            if need > len(prefix):
                prefix = source.read(0, need)
            table = block_table(prefix, where, partial=True)
            if self.remote:
                self._one_block = table.nblocks == 1
                if whole:
                    source.hold(prefix)
        else:
            chunk_ = self.chunks[nchunk]
            if chunk_.isconstant:
                return False
            data = chunk_.getdata()
            source = BytesSource(data)
            table = block_table(data, where)
        if table.header.nbytes != self.chunk_nbytes:
            raise FormatError(f"{where}: Blosc header announces {table.header.nbytes} bytes, "
                              f"the carray's metadata implies {self.chunk_nbytes}")
        if not decodable(table) or table.header.typesize != typesize_for(self.atom):
            return False        # another writer's typesize: decoded whole, as Blosc does
        return ChunkBlocks(table, source, self.cache, key=(self.token, nchunk))

    def _blocks(self, nchunk: int):
        found = self._tables.get(nchunk)
        if found is None:
            found = self._open(nchunk)
            with self._lock:
                self._tables[nchunk] = found
                while len(self._tables) > TABLES_KEPT:
                    self._tables.popitem(last=False)
        return found

    def read(self, nchunk: int, lo: int, hi: int, out: np.ndarray | None = None):
        """Items ``lo:hi`` of full chunk ``nchunk``, or None (decode it whole).

        Parameters
        ----------
        nchunk : int
        lo, hi : int
            0 <= lo < hi <= chunklen.
        out : numpy.ndarray, optional
            C-contiguous, ``hi - lo`` items of the atom: filled and returned.

        Raises
        ------
        ChunkNotFoundError, FormatError, CodecError, DatasetChangedError
            As whole-chunk reads.
        """
        try:
            blocks = self._blocks(nchunk)
        except _WholeFile:
            return None
        if blocks is False:
            return None
        if out is None:
            out = np.empty(hi - lo, dtype=self.atom)
        itemsize = self.atom.itemsize
        flat = out.reshape(-1).view(np.uint8) if out.size else np.empty(0, np.uint8)
        try:
            blocks.read_into(lo * itemsize, flat)
        except _WholeFile:
            return None
        except ValueError as err:
            if isinstance(err, BcolzStoreError):        # FormatError, CodecError
                raise
            raise FormatError(f"{blocks.table.where}: items {lo}:{hi} of chunk {nchunk} cannot "
                              f"be decoded by blocks ({err})") from None
        finally:
            release = getattr(blocks.source, "release", None)
            if release is not None:
                release()
        return out

    def check_failed(self, err: BaseException) -> None:
        """Whether a failed read is damage (re-raised by the caller) or a writer's commit."""
        if isinstance(err, (FormatError, CodecError)) and self._stored():
            self.chunks.store.check_reading(failed=True)
