"""The chunk engine of a carray of variable-length ``str`` or ``bytes`` items.

It plays the role :class:`~.engine.ChunkEngine` plays for fixed-size atoms:
``length // chunklen`` full chunks, each ``chunklen`` items encoded as one vlen
chunk (:mod:`bcolz_store.kinds.vlen.chunk`: items end to end, an IndexedData index
of their ends, a validity bitmap when some are missing, one zstd frame), and
the last ``length % chunklen`` items, the *leftover*, kept decoded in memory
until ``stage_leftover`` writes them as chunk file number ``nchunks``.

Reads decode whole chunks (there is nothing smaller to decode), through a
small least-recently-used cache of decoded chunks for partial reads; whole
chunks a read covers are decoded straight into its result, several at a time
on the pool of :mod:`bcolz_store.threads` (``set_nthreads``).  Every chunk is
checked against the metadata (its item count, kind and dictionary) before
it is decompressed.

``nbytes`` counts the payloads of the chunks once decompressed (items, index
and bitmap), ``cbytes`` the chunk files; the leftover counts as the chunk it
would be written as.
"""

from __future__ import annotations

import numpy as np

from ... import threads
from ...errors import CodecError, FormatError
from .chunk_header import parse_vlen_header
from ...chunks.engine_base import CHECK_BEFORE_ALLOCATING, EngineBase
from .chunk import decode_chunk, dictionary_id, encode_chunk
from .chunk_buffers import arrow_rows, arrow_stats, decode_buffers, encode_buffers
from .chunk_files import VlenDiskChunks, VlenMemoryChunks, check_chunk
from .chunk_items import nbytes_estimate
from .chunk_take import take_items

__all__ = ["VlenEngine"]

_MB = 1024 * 1024
_ITEM_SLOT_BYTES = 16           # what an item costs in a StringDType/object array
# A gather builds only the items it takes from a chunk when it takes at most
# one in this many of them (otherwise the whole chunk is decoded and cached).
_SPARSE_TAKE = 8
_FETCH_BATCH = 32               # chunk files fetched together from a remote store


class VlenEngine(EngineBase):
    """The chunks, leftover and cache of one vlen carray.

    Parameters
    ----------
    vlen : VlenMeta
        Kind, zstd level, nullable, dictionary (kinds/vlen/meta.py).
    chunklen : int
        Items per chunk.
    store : DatasetStore or None
        Where the chunk files are (None: chunks in memory).
    nchunks : int, default 0
        Full chunks already stored.
    nleft : int, default 0
        Items in the leftover (read from chunk file ``nchunks`` on first use).
    nbytes, cbytes : int, default 0
        What ``meta/sizes`` records for the stored chunks (the leftover's
        file included).
    cache_budget : int
        Bytes of decoded chunks kept for re-reads.
    """

    def __init__(self, vlen, chunklen: int, store=None, nchunks: int = 0, nleft: int = 0,
                 nbytes: int = 0, cbytes: int = 0, cache_budget: int = 8 * _MB):
        self.vlen = vlen
        self.atom = vlen.dtype
        self.chunklen = chunklen
        self.store = store
        self.chunks = VlenMemoryChunks() if store is None else VlenDiskChunks(store, nchunks)
        self.nleft = nleft
        self.dict_id = dictionary_id(vlen.dictionary) if vlen.dictionary is not None else 0
        # The leftover grows with its items (up to chunklen), never allocated
        # chunklen slots up front: a chunklen is input, an item count is data.
        self._leftover = None if nleft else self._empty(0)
        # Sizes of the full chunks: known at once unless a stored leftover is
        # still unread (then meta/sizes' totals include its file).
        self._stored = (max(int(nbytes), 0), max(int(cbytes), 0))
        self._full = list(self._stored) if not nleft else None
        self._left = None               # (rawbytes, encoded bytes) of the leftover as it is
        self._init_cache(cache_budget)

    def _empty(self, n: int) -> np.ndarray:
        out = np.empty(n, dtype=self.atom)
        if self.atom.kind == "O":
            out.fill(b"" if self.vlen.kind == "bytes" else "")
        return out

    # ------------------------------------------------------------ shape and sizes

    @property
    def chunksize(self) -> int:
        """Item slots of one full chunk, in bytes (16 per item)."""
        return self.chunklen * _ITEM_SLOT_BYTES

    @property
    def nbytes(self) -> int:
        """Bytes of the chunks' payloads, decompressed (the leftover as encoded)."""
        if self._full is None:
            return self._stored[0]
        return self._full[0] + self._leftover_encoded()[0]

    @property
    def cbytes(self) -> int:
        """Bytes of the chunk files (the leftover as it would be written)."""
        if self._full is None:
            return self._stored[1]
        return self._full[1] + len(self._leftover_encoded()[1])

    def _leftover_encoded(self):
        """``(rawbytes, bytes)`` of the leftover encoded as a chunk ((0, b'') when empty)."""
        if not self.nleft:
            return 0, b""
        if self._left is None:
            items = self.leftover[:self.nleft]      # (reading its file sets ``_left``)
        if self._left is None:
            data = self.encode(items)
            self._left = (parse_vlen_header(data).rawbytes, data)
        return self._left

    def _known_sizes(self) -> list:
        """The sizes of the full chunks, reading the leftover if that is needed."""
        if self._full is None:
            self.leftover  # noqa: B018 - reading the leftover file sets them
        return self._full

    # ------------------------------------------------------------ leftover

    @property
    def leftover(self) -> np.ndarray:
        """The leftover buffer: its ``nleft`` items first, room for at most
        ``chunklen`` (read from its file on first use).

        Raises
        ------
        ChunkNotFoundError, FormatError, CodecError
            When the leftover's chunk file cannot be read.
        """
        buffer = self._leftover
        if buffer is None:
            buffer = self._empty(self.nleft)
            nfull = len(self.chunks)

            def read():
                data = self.chunks.get(nfull)
                buffer[:self.nleft] = self._decode(nfull, data, self.nleft)
                return data
            self._pending_leftover = buffer
            data = self._read_leftover(read)
            raw = parse_vlen_header(data).rawbytes
            self._full = [max(self._stored[0] - raw, 0), max(self._stored[1] - len(data), 0)]
            self._left = (raw, data)
            self._leftover = buffer
        return buffer

    @leftover.setter
    def leftover(self, value: np.ndarray) -> None:
        self._leftover = value
        self._left = None

    def _read_grown_leftover(self):
        nfull = len(self.chunks)
        data = self.chunks.get(nfull)
        n = parse_vlen_header(data).nitems
        if not self.nleft <= n <= self.chunklen:
            raise FormatError(f"{self.chunks.path(nfull)}: holds {n} items, not the leftover "
                              f"of {self.nleft} items or more")
        self._pending_leftover[:self.nleft] = self._decode(nfull, data, n)[:self.nleft]
        return data

    def _leftover_room(self, n: int) -> np.ndarray:
        """The leftover buffer with room for ``n <= chunklen`` items, grown
        geometrically (its items kept)."""
        buffer = self.leftover
        if len(buffer) < n:
            grown = self._empty(min(self.chunklen, max(n, 2 * len(buffer), 64)))
            grown[:self.nleft] = buffer[:self.nleft]
            self._leftover = buffer = grown
        return buffer

    def copy_for_view(self) -> "VlenEngine":
        """An engine sharing these chunks, with its own leftover copy and cache."""
        out = super().copy_for_view()
        out._full = list(self._known_sizes())
        return out

    # ------------------------------------------------------------ encode / decode

    def encode(self, items) -> bytes:
        """``items`` encoded as one vlen chunk with this carray's level and dictionary.

        Raises
        ------
        ValueError
            When the items take more than a chunk's 2 GiB (use a smaller chunklen).
        """
        try:
            return encode_chunk(items, self.vlen.kind, self.vlen.level, self.vlen.dictionary)
        except ValueError as err:
            if "limit of one vlen chunk" in str(err):
                raise ValueError(f"{err}; this carray's chunklen ({self.chunklen}) is too "
                                 f"large for such items: copy it with a smaller chunklen") \
                    from None
            raise

    def encode_rows(self, offsets: np.ndarray, data: np.ndarray, validity) -> bytes:
        """Rows in Arrow's layout (``offsets``, ``n + 1`` of them into the
        ``uint8`` ``data``; ``validity`` a bool array or None) encoded as one
        vlen chunk: the bytes :meth:`encode` writes for the same items.

        Raises
        ------
        ValueError
            When the rows take more than a chunk's 2 GiB (use a smaller chunklen).
        """
        try:
            return encode_buffers(offsets, data, validity, self.vlen.kind, self.vlen.level,
                                  self.vlen.dictionary)
        except ValueError as err:
            if "limit of one vlen chunk" in str(err):
                raise ValueError(f"{err}; this carray's chunklen ({self.chunklen}) is too "
                                 f"large for such items: copy it with a smaller chunklen") \
                    from None
            raise

    def chunk_rows(self, nchunk: int):
        """Rows of chunk ``nchunk`` (a full chunk, or ``nchunks``: the
        leftover) as ``(ends, data, validity)`` (see
        :func:`~.vlen_buffers.decode_buffers`), checked as every chunk read.

        Raises
        ------
        ChunkNotFoundError, FormatError, CodecError, DatasetChangedError
            As the chunk reads.
        """
        nitems, where = self.chunklen, self.chunks.path(nchunk)
        if nchunk == len(self.chunks):
            data = None
            if self._leftover is None:          # not read yet: its file, as it is
                data = self.chunks.get(nchunk)
                if parse_vlen_header(data, where).nitems != self.nleft:
                    data = None                 # (grown since: read as the leftover)
            if data is None:
                return decode_buffers(self._leftover_encoded()[1], self.vlen.kind,
                                      "the leftover", self.vlen.dictionary)
            nitems = self.nleft
        else:
            data = self.chunks.get(nchunk)
        try:
            check_chunk(data, nitems, self.vlen.kind, self.dict_id, where,
                        self.vlen.nullable)
            return decode_buffers(data, self.vlen.kind, where, self.vlen.dictionary)
        except (FormatError, CodecError):
            if self.store is not None:
                self.store.check_reading(failed=True)   # a writer's commit, not damage?
            raise

    def append_encoded(self, chunks: list, entries: list, rest: np.ndarray, rest_chunk) -> None:
        """Append full chunks already encoded, then a new leftover: the
        leftover must be empty (fill it with :meth:`append` first).

        Parameters
        ----------
        chunks : list of bytes
            Chunks of ``chunklen`` items each (:meth:`encode_rows`).
        entries : list
            Their statistics (as ``ChunkStats.of`` gives them), used when
            the carray keeps statistics.
        rest : numpy.ndarray
            The items of the new leftover (fewer than ``chunklen``; of the atom).
        rest_chunk : bytes or None
            ``rest`` encoded as a chunk (None when ``rest`` is empty).

        Raises
        ------
        ValueError
            When the leftover is not empty.
        """
        if self.nleft:
            raise ValueError("append_encoded needs an empty leftover")
        if not chunks and not len(rest):
            return
        self._prepare_edit()
        for data, entry in zip(chunks, entries):
            self._add_sizes(data)
            nchunk = len(self.chunks)
            self.chunks.push(data)
            if self.stats is not None:
                self.stats.record(nchunk, entry, pushed=True)
        n = len(rest)
        if n:
            self._leftover_room(n)[:n] = rest
            self.nleft = n
        self._leftover_edited()
        if n and rest_chunk is not None:
            self._left = (parse_vlen_header(rest_chunk).rawbytes, rest_chunk)

    def _decode(self, nchunk: int, data, nitems: int, out=None) -> np.ndarray:
        """Decode chunk ``nchunk`` (its bytes ``data``), which must hold ``nitems``
        (into ``out`` when given)."""
        where = self.chunks.path(nchunk)
        try:
            check_chunk(data, nitems, self.vlen.kind, self.dict_id, where, self.vlen.nullable)
            return decode_chunk(data, self.vlen.kind, where, self.vlen.dictionary, out)
        except (FormatError, CodecError):
            if self.store is not None:
                self.store.check_reading(failed=True)   # a writer's commit, not damage?
            raise

    # ------------------------------------------------------------ reading

    def chunk_array(self, nchunk: int) -> np.ndarray:
        """Decoded items of chunk ``nchunk`` (full chunk or leftover); read-only."""
        if nchunk == len(self.chunks):
            return self.leftover[:self.nleft]
        found = self.cached(nchunk)
        if found is not None:
            return found
        data = self.chunks.get(nchunk)
        items = self._decode(nchunk, data, self.chunklen)
        raw = parse_vlen_header(data).rawbytes
        self._remember(nchunk, items, nbytes_estimate(len(items), raw))
        return items

    def _fetched(self, nchunks: list):
        """Yield ``(nchunk, bytes)`` of full chunks, fetched together from a
        remote store (a bounded number at a time), one by one otherwise."""
        if not self.remote or len(nchunks) < 2:
            for n in nchunks:
                yield n, self.chunks.get(n)
            return
        for batch, got in self._remote_batches(nchunks, skip_cached=False):
            for n in batch:
                yield n, got.pop(n)

    def _chunks_per_fetch(self) -> int:
        return _FETCH_BATCH

    def read_range(self, start: int, stop: int) -> np.ndarray:
        """Items ``start:stop`` (0 <= start <= stop <= length) as a new array.

        Raises
        ------
        ChunkNotFoundError, FormatError, CodecError, DatasetChangedError
            As the chunk reads.
        """
        n = stop - start
        cl = self.chunklen
        nfull = len(self.chunks)
        if n == 0:
            return self._empty(0)
        first, last = start // cl, (stop - 1) // cl
        if self.store is not None and n * _ITEM_SLOT_BYTES > CHECK_BEFORE_ALLOCATING:
            self.check_chunk_files(first, min(last + 1, nfull))
        whole = [c for c in range(first, min(last + 1, nfull))
                 if c * cl >= start and (c + 1) * cl <= stop and c not in self._cache]
        if len(whole) == 1 and n == cl:        # exactly one chunk: its items are the result
            return self._decode(whole[0], self.chunks.get(whole[0]), cl)
        out = np.empty(n, dtype=self.atom)
        self._decode_whole(whole, start, out)
        done = set(whole)
        for c in range(first, last + 1):
            if c in done:
                continue
            lo, hi = max(start, c * cl), min(stop, (c + 1) * cl)
            out[lo - start:hi - start] = self.chunk_array(c)[lo - c * cl:hi - c * cl]
        return out

    def _decode_whole(self, whole: list, start: int, out: np.ndarray) -> None:
        """Decode the full chunks ``whole`` straight into their slices of ``out``
        (which starts at item ``start``), on a few threads when there are
        several: zstd and most of numpy's work release the GIL."""
        cl = self.chunklen

        def decode(c, data=None):
            if data is None:
                data = self.chunks.get(c)
            self._decode(c, data, cl, out[c * cl - start:(c + 1) * cl - start])

        if len(whole) < 2 or threads.get_nthreads() < 2 or threads.in_worker():
            for c, data in self._fetched(whole):
                decode(c, data)
        elif self.remote:                      # fetched together, decoded in parallel
            for _batch, got in self._remote_batches(whole, skip_cached=False):
                for _ in threads.map_ordered(lambda item: decode(*item), list(got.items())):
                    pass
        else:                                  # each thread reads its own chunk files
            for _ in threads.map_ordered(decode, whole):
                pass

    def _check_header(self, nchunk: int) -> None:
        check_chunk(self.chunks.get(nchunk), self.chunklen, self.vlen.kind, self.dict_id,
                    self.chunks.path(nchunk), self.vlen.nullable)

    def chunk_arrays(self, nchunks: list):
        """Yield ``(nchunk, decoded items)`` for each of ``nchunks`` (the leftover
        included), fetching the chunk files of a remote store together."""
        nfull = len(self.chunks)
        fetch = [n for n in nchunks if n < nfull and n not in self._cache] if self.remote else []
        fetched = dict(self._fetched(fetch)) if len(fetch) > 1 else {}
        for n in nchunks:
            if n in fetched:
                yield n, self._decode(n, fetched.pop(n), self.chunklen)
            else:
                yield n, self.chunk_array(n)

    def gather(self, idx: np.ndarray) -> np.ndarray:
        """Items at positions ``idx`` (int64, in range; any order, repeats allowed)."""
        out = self._empty(idx.size)
        if idx.size == 0:
            return out.reshape(idx.shape)
        flat = idx.ravel()
        groups = self._by_chunk(flat)
        nfull = len(self.chunks)
        # a few items of a chunk not in the cache: only they are built
        sparse = [c for c, sel in groups.items() if c < nfull and c not in self._cache
                  and len(sel) * _SPARSE_TAKE <= self.chunklen]
        picks = [(c, groups.pop(c)) for c in sparse]
        take = lambda pick: self._take(pick[0], flat[pick[1]] - pick[0] * self.chunklen)  # noqa: E731
        # each chunk's decompression on the pool (zstd releases the GIL); a
        # remote store's chunks one by one (each a request of its own)
        taken = map(take, picks) if self.remote else threads.map_ordered(take, picks)
        for (_, sel), items in zip(picks, taken):
            out[sel] = items
        for c, data in self.chunk_arrays(list(groups)):
            sel = groups[c]
            out[sel] = data[flat[sel] - c * self.chunklen]
        return out.reshape(idx.shape)

    def _take(self, nchunk: int, rows: np.ndarray) -> np.ndarray:
        """Items ``rows`` of full chunk ``nchunk``, the others not built."""
        data = self.chunks.get(nchunk)
        where = self.chunks.path(nchunk)
        try:
            check_chunk(data, self.chunklen, self.vlen.kind, self.dict_id, where,
                        self.vlen.nullable)
            return take_items(data, self.vlen.kind, rows, where, self.vlen.dictionary)
        except (FormatError, CodecError):
            if self.store is not None:
                self.store.check_reading(failed=True)   # a writer's commit, not damage?
            raise

    # ------------------------------------------------------------ writing

    def _add_sizes(self, data: bytes, sign: int = 1) -> None:
        sizes = self._known_sizes()
        sizes[0] += sign * parse_vlen_header(data).rawbytes
        sizes[1] += sign * len(data)

    def push_chunk(self, items: np.ndarray) -> None:
        """Encode ``items`` (``chunklen`` of them) as the next full chunk."""
        data = self.encode(items)
        self._add_sizes(data)
        nchunk = len(self.chunks)
        self.chunks.push(data)
        if self.stats is not None:
            self.stats.record(nchunk, self.stats.of(items), pushed=True)

    def push_chunks(self, arr: np.ndarray, starts) -> None:
        """Encode ``arr[s:s + chunklen]`` for each of ``starts`` as the next full chunks
        (consecutive ones: through pyarrow's buffers where it is installed,
        several chunks at a time on the thread pool)."""
        starts, cl = list(starts), self.chunklen
        found = None
        if len(starts) > 1 and starts == list(range(starts[0], starts[-1] + 1, cl)):
            found = arrow_rows(arr[starts[0]:starts[-1] + cl], self.vlen.kind)
        if found is None:
            for s in starts:
                self.push_chunk(arr[s:s + cl])
            return
        whole, offsets, data, validity = found

        def encode(i):
            lo = i * cl
            chunk = self.encode_rows(offsets[lo:lo + cl + 1], data,
                                     None if validity is None else validity[lo:lo + cl])
            entry = arrow_stats(whole.slice(lo, cl)) if self.stats is not None else None
            return chunk, entry

        for chunk, entry in threads.map_ordered(encode, range(len(starts))):
            self._add_sizes(chunk)
            nchunk = len(self.chunks)
            self.chunks.push(chunk)
            if self.stats is not None:
                self.stats.record(nchunk, entry, pushed=True)

    def _prepare_edit(self) -> None:
        super()._prepare_edit()
        self._known_sizes()

    def _leftover_edited(self) -> None:
        self._left = None

    def replace_chunk(self, nchunk: int, items: np.ndarray) -> None:
        """Store new items for full chunk ``nchunk``."""
        old = self.chunks.get(nchunk)
        data = self.encode(items)
        self._add_sizes(old, -1)
        self._add_sizes(data)
        self.chunks.write(nchunk, data)
        if self.stats is not None:
            self.stats.record(nchunk, self.stats.of(items))
        self.drop_cache(nchunk)

    def _writable_chunk(self, nchunk: int) -> np.ndarray:
        return np.array(self.chunk_array(nchunk), dtype=self.atom, copy=True)

    def trim_to(self, newlen: int) -> None:
        """Keep the first ``newlen`` items (``newlen <= length``)."""
        if self.stats is not None:
            self.stats.edited = True
        nfull, nleft = divmod(newlen, self.chunklen)
        if newlen == 0:                 # nothing kept: no chunk needs reading
            while len(self.chunks):
                self.chunks.drop_last(read=False)   # sizes are reset below
            self._full = [0, 0]
            self._leftover = self._empty(0)
            self.nleft = 0
            self._left = None
            self.drop_cache()
            return
        self._known_sizes()
        if nfull == len(self.chunks):
            self.nleft = nleft
            self._left = None
            return
        carry = np.array(self.chunk_array(nfull)[:nleft], dtype=self.atom) if nleft else None
        while len(self.chunks) > nfull:
            self._add_sizes(self.chunks.drop_last(), -1)
        self.drop_cache()
        if nleft:
            self._leftover = carry
        self.nleft = nleft
        self._left = None

    def stage_leftover(self) -> None:
        """Stage the leftover as chunk file ``nchunks`` (or the removal of that
        file when there is no leftover); stored carrays only."""
        nfull = len(self.chunks)
        if self.nleft:
            self.chunks.write(nfull, self._leftover_encoded()[1])
        else:
            self.chunks.delete(nfull)
