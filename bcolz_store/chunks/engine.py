"""The chunk engine of a carray of fixed-size atoms: its chunks, its leftover,
its cache, and the reads and writes that go through them.

A carray of ``length`` atoms holds ``length // chunklen`` full chunks, compressed
(in memory: :class:`~.chunk.MemoryChunks`; stored: :class:`~.chunk.DiskChunks`,
one file each), and the last ``length % chunklen`` atoms, the *leftover*,
uncompressed in a buffer of ``chunklen`` atoms.  ``flush`` writes the leftover
as the next chunk file (source: bcolz format v1.0, seeds/001; FORMAT-NOTES.md).

Reads decompress straight into their output when a whole chunk is wanted, and
through a small least-recently-used cache of decompressed chunks otherwise.
The chunks of one operation are decoded (and, when appending, encoded) on the
pool of :mod:`bcolz_store.threads`, a few chunks per task, each task into its
own slice of the output; results never depend on the number of threads.
Knowing nothing of files, keys or commits, the engine writes only through its
chunk sequence and asks its store's view (``store``) only to tell whether a
read is remote (then chunk files are fetched together) or failed.
"""

from __future__ import annotations

import numpy as np

from .. import threads
from ..errors import CodecError, FormatError
from ..format.bloscpack import chunk_file_nbytes
from ..limits import check_alloc
from .block_reads import BlockReads
from .chunk import DiskChunks, MemoryChunks, chunk, chunk_key
from .engine_base import CHECK_BEFORE_ALLOCATING, EngineBase

__all__ = ["CHECK_BEFORE_ALLOCATING", "ChunkEngine", "FETCH_BATCH_BYTES", "TASK_BYTES",
           "WRITE_TASK_BYTES"]

_MB = 1024 * 1024
# Compressed bytes of chunk files fetched together from a remote store.
FETCH_BATCH_BYTES = 64 * _MB
# Uncompressed bytes of chunks one task of the thread pool handles at least:
# small chunks are grouped, so that a task's work outweighs handing it over
# (each handover wakes the waiting thread, which needs the GIL).  Reads hold
# one chunk file per running task whatever the group; writes hold the
# compressed chunks of a window of tasks, so their groups are smaller.
TASK_BYTES = 4 * _MB
WRITE_TASK_BYTES = _MB
# A read of at most this share of a chunk that is not cached decodes only
# the Blosc blocks and streams it needs (bcolz's blosc_getitem did the same
# for the blocks); larger ones decode the chunk whole and keep it.
BLOCK_READ_SHARE = 0.25
# A gather decodes a chunk by blocks when it wants at most this many of its items.
BLOCK_GATHER_ITEMS = 8
# Chunks smaller than this are decoded whole (and cached) even for one item:
# decoding them costs less than finding their blocks.
BLOCK_READ_MIN_BYTES = 64 * 1024


class ChunkEngine(EngineBase):
    """The chunks, leftover and cache of one carray of fixed-size atoms.

    Parameters
    ----------
    atom : numpy.dtype
        dtype of one item, with its sub-array shape.
    cparams : cparams
    chunklen : int
        Atoms per chunk.
    store : DatasetStore or None
        Where the chunk files are (None: chunks in memory).
    nchunks : int, default 0
        Full chunks already stored.
    nleft : int, default 0
        Atoms in the leftover (read from chunk file ``nchunks`` on first use).
    cbytes : int, optional
        Compressed bytes, counting the leftover as a full uncompressed chunk
        (bcolz's convention); default that of an empty carray.
    cache_budget : int
        Bytes of decompressed chunks kept for re-reads.
    """

    def __init__(self, atom: np.dtype, cparams, chunklen: int, store=None, nchunks: int = 0,
                 nleft: int = 0, cbytes: int | None = None, cache_budget: int = 8 * _MB):
        self.atom = atom
        self.cparams = cparams
        self.chunklen = chunklen
        self.store = store
        self.chunks = MemoryChunks() if store is None else DiskChunks(
            store, atom, cparams, nchunks, chunk_nbytes=chunklen * atom.itemsize)
        self.nleft = nleft
        self.cbytes = self.chunksize if cbytes is None else cbytes
        self._leftover = None if nleft else np.zeros(chunklen, dtype=atom)
        self._init_cache(cache_budget)
        self.blocks = None if atom.hasobject else BlockReads(
            self.chunks, atom, self.chunksize, private=not cache_budget,
            remote=store is not None and store.store.remote)
        self._last_point = -1

    # ------------------------------------------------------------ shape

    @property
    def chunksize(self) -> int:
        """Bytes of one full chunk, uncompressed."""
        return self.chunklen * self.atom.itemsize

    @property
    def leftover(self) -> np.ndarray:
        """The leftover buffer, ``chunklen`` atoms (read from its chunk file on first use).

        Raises
        ------
        ChunkNotFoundError, FormatError, CodecError
            When the leftover's chunk file cannot be read.
        LimitError
            When ``chunklen`` atoms are more than this process can allocate.
        """
        buffer = self._leftover
        if buffer is None:
            check_alloc(self.chunklen * self.atom.itemsize,
                        f"the leftover buffer of {self.chunklen} items of {self.atom} (the chunklen "
                        f"meta/storage gives)")
            buffer = np.zeros(self.chunklen, dtype=self.atom)
            if self.nleft:
                self._pending_leftover = buffer
                self._read_leftover(
                    lambda: self.chunks.read_into(len(self.chunks), buffer[:self.nleft]))
            self._leftover = buffer
        return buffer

    def _read_grown_leftover(self):
        nchunk = len(self.chunks)
        data = self.chunks.read_file(nchunk, self.chunks.limit())
        full = np.empty(self.chunklen, dtype=self.atom)
        nbytes = chunk_file_nbytes(data, self.chunks.path(nchunk))
        n = nbytes // max(self.atom.itemsize, 1)
        if not self.nleft <= n <= self.chunklen or n * self.atom.itemsize != nbytes:
            raise FormatError(f"{self.chunks.path(nchunk)}: holds {nbytes} bytes, not the "
                              f"leftover of {self.nleft} items or more")
        self.chunks.decode_into(nchunk, data, full[:n])
        self._pending_leftover[:self.nleft] = full[:self.nleft]

    @leftover.setter
    def leftover(self, value: np.ndarray) -> None:
        self._leftover = value

    # ------------------------------------------------------------ reading

    def chunk_array(self, nchunk: int) -> np.ndarray:
        """Decompressed atoms of chunk ``nchunk`` (full chunk or leftover); read-only."""
        if nchunk == len(self.chunks):
            return self.leftover[:self.nleft]
        found = self.cached(nchunk)
        if found is not None:
            return found
        data = np.empty(self.chunklen, dtype=self.atom)
        self.chunks.read_into(nchunk, data)
        self._remember(nchunk, data, data.nbytes)
        return data

    def read_blocks(self, nchunk: int, lo: int, hi: int, out: np.ndarray | None = None):
        """Items ``lo:hi`` of full chunk ``nchunk`` decoded block by block, or
        None when the chunk is cached or must be decoded whole.

        Raises
        ------
        ChunkNotFoundError, FormatError, CodecError, DatasetChangedError
            As the chunk reads.
        """
        blocks = self.blocks
        if (blocks is None or nchunk >= len(self.chunks) or nchunk in self._cache
                or self.chunksize < BLOCK_READ_MIN_BYTES):
            return None
        try:
            got = blocks.read(nchunk, lo, hi, out)
        except (FormatError, CodecError) as err:
            blocks.check_failed(err)         # a writer's commit, not damage?
            raise
        if got is not None:
            self.chunks.check_reading()
        return got

    def point(self, nchunk: int, pos: int):
        """Item ``pos`` of chunk ``nchunk``: decoded from its Blosc block when
        the chunk is not cached, unless the last read of part of a chunk was
        in the same chunk (a loop over items: then the chunk is decoded whole
        and cached)."""
        if not self._again(nchunk):
            got = self.read_blocks(nchunk, pos, pos + 1)
            if got is not None:
                return got[0]
        return self.chunk_array(nchunk)[pos]

    def _again(self, nchunk: int) -> bool:
        """Whether the last read of part of a chunk was in chunk ``nchunk`` too
        (reads walking through a chunk then decode it whole, once)."""
        last, self._last_point = self._last_point, nchunk
        return last == nchunk

    def read_range(self, start: int, stop: int, out: np.ndarray | None = None) -> np.ndarray:
        """Atoms ``start:stop`` (0 <= start <= stop <= length) as a contiguous array.

        Raises
        ------
        ChunkNotFoundError, FormatError, CodecError, DatasetChangedError
            As the chunk reads.
        """
        n = stop - start
        cl = self.chunklen
        nfull = len(self.chunks)
        if out is None:
            if n * self.atom.itemsize > CHECK_BEFORE_ALLOCATING and self.store is not None:
                self.check_chunk_files(start // cl, min((stop - 1) // cl + 1, nfull))
            out = np.empty(n, dtype=self.atom)
        whole = []             # full chunks read straight into out: (nchunk, dest)
        pos = start
        while pos < stop:
            nchunk = pos // cl
            lo = pos - nchunk * cl
            hi = min(stop - nchunk * cl, cl)
            dest = out[pos - start: pos - start + hi - lo]
            if nchunk < nfull and lo == 0 and hi == cl and nchunk not in self._cache:
                whole.append((nchunk, dest))
            elif (hi - lo > cl * BLOCK_READ_SHARE or self._again(nchunk)
                  or self.read_blocks(nchunk, lo, hi, dest) is None):
                dest[...] = self.chunk_array(nchunk)[lo:hi]
            pos += hi - lo
        self.decode_into(whole)
        return out

    def drop_cache(self, nchunk=None) -> None:
        """Forget cached chunk ``nchunk`` (all of them when None), and what the
        block reads know of it."""
        super().drop_cache(nchunk)
        if self.blocks is not None:
            self.blocks.drop(nchunk)

    def set_cache_budget(self, budget: int) -> None:
        """Keep at most ``budget`` bytes of decoded chunks (0 also keeps no
        decoded Blosc streams of this carray)."""
        super().set_cache_budget(budget)
        if self.blocks is not None:
            self.blocks.use_shared_cache(bool(budget))

    def _groups(self, items: list) -> list:
        """``items`` (one per chunk) split into the lists one pool task handles:
        enough chunks for :data:`TASK_BYTES` of decoded data, but no more than
        leave every thread two tasks."""
        per = min(TASK_BYTES // max(self.chunksize, 1),
                  len(items) // (2 * threads.get_nthreads()))
        per = max(per, 1)
        if per == 1:
            return [[item] for item in items]
        return [items[i:i + per] for i in range(0, len(items), per)]

    def decode_into(self, tasks: list) -> None:
        """Decompress each full chunk ``nchunk`` of ``tasks`` into its ``dest``.

        The chunks are decoded on the thread pool, each straight into its
        ``dest``.  On a remote store the chunk files are first fetched
        concurrently, a bounded number at a time (:data:`FETCH_BATCH_BYTES`),
        so a full read makes few round trips; a read holds the output plus
        the chunk files being decoded (one batch, remotely).

        Raises
        ------
        ChunkNotFoundError, FormatError, CodecError, DatasetChangedError
            As the chunk reads, for the first chunk (in order) that fails.
        """
        chunks = self.chunks
        if len(tasks) < 2:
            for nchunk, dest in tasks:
                chunks.read_into(nchunk, dest)
            return
        if not self.remote:
            def read(group):
                for nchunk, dest in group:
                    chunks.read_into(nchunk, dest, check=False)
            for _ in threads.map_ordered(read, self._groups(tasks)):
                pass
            chunks.check_reading()
            return
        dests = dict(tasks)
        for batch, got in self._remote_batches([n for n, _dest in tasks], skip_cached=False):
            def decode(group, got=got):
                for nchunk in group:
                    chunks.decode_into(nchunk, got.pop(nchunk), dests[nchunk])
            for _ in threads.map_ordered(decode, self._groups(batch)):
                pass

    def _chunks_per_fetch(self) -> int:
        return max(FETCH_BATCH_BYTES // max(self.chunksize, 1), 2)

    def _check_header(self, nchunk: int) -> None:
        self.chunks.check_header(nchunk)   # the size the chunk file announces

    def gather(self, idx: np.ndarray) -> np.ndarray:
        """Atoms at positions ``idx`` (int64, in range; any order, repeats allowed)."""
        out = np.empty(idx.shape + self.atom.shape, dtype=self.atom.base)
        if idx.size == 0:
            return out
        flat = idx.ravel()
        flat_out = out.reshape((-1,) + self.atom.shape)
        groups = self._by_chunk(flat)

        def scatter(c, data):      # each chunk fills its own positions of out
            sel = groups[c]
            flat_out[sel] = data[flat[sel] - c * self.chunklen]
        if not self.remote:        # chunks wanted for a few items: by blocks
            for c in [c for c, sel in groups.items() if len(sel) <= BLOCK_GATHER_ITEMS]:
                sel = groups[c]
                pos = flat[sel] - c * self.chunklen
                got = [self.read_blocks(c, p, p + 1) for p in pos.tolist()]
                if all(one is not None for one in got):
                    flat_out[sel] = np.concatenate(got)
                    del groups[c]
        # Through the cache when the chunks fit in it (repeated small gathers
        # find them there); a gather over more chunks would only churn it.
        cache = len(groups) * self.chunksize <= self.cache_budget
        for _ in self.map_chunks(scatter, list(groups), cache=cache):
            pass
        return out

    def map_chunks(self, fn, nchunks: list, cache: bool = False):
        """Yield ``fn(nchunk, atoms)`` for each chunk number of ``nchunks``
        (the leftover's included), in that order, computed on the thread pool.

        ``atoms`` is the chunk's decompressed data, read-only and valid only
        during the call: chunks not in the cache are decoded into buffers that
        the tasks reuse, so at most a window of chunks is held at a time.
        With ``cache`` the chunks are read through the cache (and kept there,
        as single reads keep them).  On a remote store the chunk files are
        fetched concurrently, a batch at a time.

        Raises
        ------
        ChunkNotFoundError, FormatError, CodecError, DatasetChangedError
            As the chunk reads; or what ``fn`` raised.
        """
        chunks = self.chunks
        nfull = len(chunks)
        free = []                 # decode buffers no task is using

        def one(n, got):
            if n >= nfull:
                return fn(n, self.leftover[:self.nleft])
            found = self.cached(n)
            if found is not None:
                return fn(n, found)
            if got is None and cache:
                return fn(n, self.chunk_array(n))
            try:
                buffer = free.pop()
            except IndexError:
                buffer = np.empty(self.chunklen, dtype=self.atom)
            try:
                buffer.flags.writeable = True
                if got is None:
                    chunks.read_into(n, buffer, check=False)
                else:
                    chunks.decode_into(n, got.pop(n), buffer)
                buffer.flags.writeable = False
                return fn(n, buffer)
            finally:
                free.append(buffer)

        def run(group, got=None):
            return [one(n, got if got is not None and n in got else None) for n in group]

        if not self.remote or len(nchunks) < 2:
            for results in threads.map_ordered(run, self._groups(list(nchunks))):
                yield from results
            if nchunks:
                chunks.check_reading()
            return
        for batch, got in self._remote_batches(list(nchunks)):
            for results in threads.map_ordered(lambda group, got=got: run(group, got),
                                               self._groups(batch)):
                yield from results

    def reduce_chunks(self, fn):
        """Yield ``fn(atoms)`` for every chunk in order (the leftover last),
        computed on the thread pool (see :meth:`map_chunks`)."""
        nchunks = list(range(len(self.chunks) + (1 if self.nleft else 0)))
        return self.map_chunks(lambda _n, atoms: fn(atoms), nchunks)

    # ------------------------------------------------------------ writing

    def new_chunk(self, data) -> chunk:
        """A compressed chunk of ``data`` (in memory, all-zero chunks keep a constant)."""
        return chunk(data, self.atom, self.cparams, _memory=self.store is None)

    def _stats_of(self, data: np.ndarray):
        """The chunk statistics of ``data`` (None when the carray keeps none)."""
        return None if self.stats is None else self.stats.of(data)

    def _record(self, nchunk: int, entry, pushed: bool = False) -> None:
        if self.stats is not None:
            self.stats.record(nchunk, entry, pushed)

    def push_chunk(self, data: np.ndarray) -> None:
        """Compress ``data`` (``chunklen`` atoms) as the next full chunk."""
        new = self.new_chunk(data)
        nchunk = len(self.chunks)
        self.chunks.append(new)
        self._record(nchunk, self._stats_of(data), pushed=True)
        self.cbytes += new.cbytes

    def push_chunks(self, arr: np.ndarray, starts) -> None:
        """Compress ``arr[s:s + chunklen]`` for each of ``starts`` as the next
        full chunks, in order.

        The chunks are compressed on the thread pool (a window of them at a
        time, so memory stays bounded) and handed to the chunk sequence in
        order by the calling thread; the bytes are those of compressing them
        one after another.
        """
        cl = self.chunklen
        per = max(WRITE_TASK_BYTES // max(self.chunksize, 1), 1)
        indexed = list(enumerate(starts))
        groups = [indexed[i:i + per] for i in range(0, len(indexed), per)]
        # On the pool, the thread that compresses a chunk also writes its file
        # and takes its md5 while it is in the CPU's cache (its fsync waits on
        # an io thread); the calling thread stages the files in order.  With
        # one thread, background threads take the md5 and write beside it.
        ahead = self.store is not None and threads.get_nthreads() > 1 and len(groups) > 1
        first = len(self.chunks)

        def encode(group):
            made = [(i, self.new_chunk(arr[s:s + cl]), self._stats_of(arr[s:s + cl]))
                    for i, s in group]
            return [(new, self.chunks.write_ahead(first + i, new) if ahead else None, entry)
                    for i, new, entry in made]
        for made in threads.map_ordered(encode, groups):
            for new, written, entry in made:
                nchunk = len(self.chunks)
                if written is None:
                    self.chunks.append(new)
                else:
                    self.chunks.append_ahead(new, written)
                self._record(nchunk, entry, pushed=True)
                self.cbytes += new.cbytes

    def stage_chunk(self, nchunk: int, rows: np.ndarray) -> int:
        """Compress ``rows`` as full chunk file ``nchunk`` and stage it, to be
        counted by :meth:`adopt_chunks`; return its compressed bytes."""
        made = self.new_chunk(rows)
        self.chunks.write(nchunk, made)
        self._record(nchunk, self._stats_of(rows))
        return made.cbytes

    def adopt_chunks(self, nchunks: int, cbytes: int, stats=()) -> None:
        """Count ``nchunks`` full chunk files in all, of which those not
        written through this engine (staged by others: dask's workers) hold
        ``cbytes`` compressed Blosc bytes, and ``stats`` is ``(nchunk,
        statistics)`` of those whose statistics their writers computed (the
        others' are computed from their files at the next stage); stored
        carrays only."""
        self.chunks.nchunks = nchunks
        self.cbytes += cbytes
        for nchunk, entry in stats:
            self._record(nchunk, entry)
        self.drop_cache()

    def _writable_chunk(self, nchunk: int) -> np.ndarray:
        return self.chunk_array(nchunk).copy()

    def replace_chunk(self, nchunk: int, data: np.ndarray) -> None:
        """Store new contents for full chunk ``nchunk``."""
        old = self.chunks[nchunk]
        new = self.new_chunk(data)
        self.chunks[nchunk] = new
        self._record(nchunk, self._stats_of(data))
        self.cbytes += new.cbytes - old.cbytes
        self.drop_cache(nchunk)

    def trim_to(self, newlen: int) -> None:
        """Keep the first ``newlen`` atoms (``newlen <= length``).

        The leftover is settled before the chunk count or ``nleft`` changes:
        either read (the cut falls inside it, whose file is still the one the
        committed ``nleft`` describes) or replaced outright (the cut falls in
        a full chunk, or on a chunk boundary), so a leftover not yet read
        after a reopen is never read later with the wrong file or size.
        """
        if self.stats is not None:
            self.stats.edited = True
        nfull, nleft = divmod(newlen, self.chunklen)
        if nfull == len(self.chunks) and nleft:
            self.leftover  # noqa: B018 - read it while its file and nleft still agree
            self.nleft = nleft
            return
        carry = self.chunk_array(nfull)[:nleft].copy() if nleft else None
        while len(self.chunks) > nfull:
            popped = self.chunks.pop()
            self.cbytes -= popped.cbytes
        self.drop_cache()
        buffer = np.zeros(self.chunklen, dtype=self.atom)
        if nleft:
            buffer[:nleft] = carry
        self._leftover = buffer
        self.nleft = nleft

    def stage_leftover(self) -> None:
        """Stage the leftover as chunk file ``nchunks`` (or the removal of that
        file when there is no leftover); stored carrays only."""
        nfull = len(self.chunks)
        if self.nleft:
            self.chunks.write(nfull, chunk(self.leftover[:self.nleft], self.atom, self.cparams,
                                           _memory=False))
        else:
            self.store.delete(chunk_key(nfull))
