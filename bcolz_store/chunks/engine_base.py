"""What the chunk engines of fixed-size atoms (:class:`~.engine.ChunkEngine`)
and of variable-length items (:class:`~.vlen_engine.VlenEngine`) share.

Both hold ``length // chunklen`` full chunks in ``chunks`` and the last
``length % chunklen`` items, the *leftover*, decoded in a buffer of
``chunklen`` (read from its chunk file on first use); both keep a small
least-recently-used cache of decoded chunks that several threads may use at
once.  This class gives them that cache, the leftover's bookkeeping on
appends, and the writes to positions and slices, which go chunk by chunk:
a chunk a write covers whole is replaced by the new items, any other is
decoded, changed and encoded again.

A subclass sets ``chunks``, ``chunklen``, ``store``, ``nleft``, ``_leftover``
and ``atom``, calls :meth:`_init_cache`, and provides ``leftover``,
``chunk_array``, ``push_chunk``, ``push_chunks``, ``replace_chunk`` and
:meth:`_writable_chunk`; :meth:`_prepare_edit` and :meth:`_leftover_edited`
let it keep derived state (the vlen engine's sizes) in step.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict

import numpy as np

from ..errors import BcolzStoreError, ChunkNotFoundError, DatasetChangedError

__all__ = ["CHECK_BEFORE_ALLOCATING", "EngineBase", "copy_chunks"]

# Reads that allocate more than this check first that their chunk files exist.
CHECK_BEFORE_ALLOCATING = 256 * 1024 * 1024


def copy_chunks(chunks):
    """A sequence of the same chunks that can grow, shrink and have chunks
    replaced without changing ``chunks`` (a list in memory; stored chunk
    files keep their count and last read chunk per copy)."""
    return type(chunks)(chunks) if isinstance(chunks, list) else copy.copy(chunks)


class EngineBase:
    """The cache, the leftover's bookkeeping and the positional writes of a
    chunk engine (see the module's description)."""

    stats = None    # a stored carray's ChunkStats (chunks/stats.py), when its kind has them

    # ------------------------------------------------------------ shape

    @property
    def nchunks(self) -> int:
        """Full (encoded) chunks."""
        return len(self.chunks)

    @property
    def length(self) -> int:
        """Items held."""
        return len(self.chunks) * self.chunklen + self.nleft

    @property
    def remote(self) -> bool:
        return self.store is not None and self.store.store.remote

    # ------------------------------------------------------------ reading

    def _by_chunk(self, flat: np.ndarray) -> dict:
        """``{nchunk: indices into flat}``: the positions ``flat`` (int64) grouped
        by the chunk that holds them, in chunk order (each group in the order
        of ``flat``)."""
        if not flat.size:
            return {}
        nchunk = flat // self.chunklen
        order = np.argsort(nchunk, kind="stable")
        sorted_chunks = nchunk[order]
        bounds = np.flatnonzero(np.diff(sorted_chunks)) + 1
        starts = np.concatenate(([0], bounds))
        stops = np.concatenate((bounds, [len(order)]))
        return {int(sorted_chunks[lo]): order[lo:hi] for lo, hi in zip(starts, stops)}

    def _remote_batches(self, nchunks: list, skip_cached: bool = True):
        """Yield ``(nchunks of a batch, {nchunk: chunk file bytes})``: the chunk
        files of a remote store fetched concurrently, :meth:`_chunks_per_fetch`
        of them at a time (the leftover is not fetched, nor, with
        ``skip_cached``, chunks in the cache)."""
        chunks = self.chunks
        nfull = len(chunks)
        per_batch = self._chunks_per_fetch()
        for first in range(0, len(nchunks), per_batch):
            batch = nchunks[first:first + per_batch]
            fetch = [n for n in batch if n < nfull and not (skip_cached and n in self._cache)]
            yield batch, (chunks.get_many(fetch) if fetch else {})

    def _chunks_per_fetch(self) -> int:
        """Chunk files a remote read fetches together (bounding what it holds)."""
        raise NotImplementedError

    def check_chunk_files(self, first: int, stop: int) -> None:
        """Before a large allocation: every chunk file ``first:stop`` exists, and
        the first and last hold what the metadata implies (:meth:`_check_header`).

        A hostile ``meta/sizes`` can claim 10**12 items with a few chunk
        files, or ``meta/storage`` a chunklen of 10**8 for files of a few
        bytes; this refuses them before memory for them is asked for.

        Raises
        ------
        ChunkNotFoundError
            Naming the first missing chunk file.
        FormatError
            Naming a chunk file whose header announces another size.
        """
        for nchunk in range(first, stop):
            if not self.chunks.exists(nchunk):
                raise ChunkNotFoundError(
                    f"{self.chunks.path(nchunk)}: chunk file missing; meta/sizes promises "
                    f"{self.length} items in {self.nchunks + (1 if self.nleft else 0)} "
                    f"chunk files")
        for nchunk in {first, stop - 1} if stop > first else ():
            self._check_header(nchunk)

    def _check_header(self, nchunk: int) -> None:
        """Check that full chunk file ``nchunk`` holds ``chunklen`` items (reading
        its header, not decompressing it)."""
        raise NotImplementedError

    # ------------------------------------------------------------ leftover

    def _read_leftover(self, read):
        """``read()`` (which reads the leftover's chunk file), a failure told as
        the ConcurrentWriteError it is when another writer's commit replaced
        that file (see :meth:`_conflict`)."""
        if getattr(self, "_eager", False):      # load_for_writing decides
            return read()
        try:
            return read()
        except BcolzStoreError as err:
            dataset = self.store
            if dataset is not None and dataset.is_reader:
                if dataset.appended_since_loaded():
                    # A writer appended since this reader loaded: the leftover's
                    # file holds more items now, the first ones those it had
                    # (asked again after reading: a commit may begin meanwhile).
                    try:
                        grown = self._read_grown_leftover()
                    except BcolzStoreError:
                        grown = err
                    if not isinstance(grown, BaseException) and \
                            dataset.appended_since_loaded():
                        return grown
                if dataset.changed_since_loaded():
                    raise DatasetChangedError(
                        f"{self.store.root}: a writer committed since this reader opened the "
                        f"dataset; call refresh() to read the new state") from err
                raise
            conflict = self._conflict()
            if conflict is None:
                raise
            raise conflict from err

    def _read_grown_leftover(self):
        """Fill the leftover from its file, which holds ``nleft`` items or
        more (appends since the state was loaded); a subclass knows how."""
        raise NotImplementedError

    def _conflict(self):
        """The ConcurrentWriteError for a writer whose lazily read leftover chunk
        another writer's commit replaced (reloading the committed state when no
        write is under way), or None when that is not what happened."""
        return self.store.writer_conflict() if self.store is not None else None

    def load_for_writing(self) -> None:
        """Read now what a writer reads lazily otherwise (the leftover), so
        that it comes from the committed state just loaded, not from a newer
        one another writer committed meanwhile.

        Raises
        ------
        BcolzStoreError
            What reading raised, when another writer committed meanwhile (the
            caller loads again).  A damaged leftover stays unread instead:
            reading it later raises, as for a reader.
        """
        if not self.nleft:
            return
        self._eager = True
        try:
            self.leftover
        except BcolzStoreError:
            if self.store is not None and self.store.changed_since_loaded():
                raise
            self._leftover = None
        finally:
            self._eager = False

    def point(self, nchunk: int, pos: int):
        """Item ``pos`` of chunk ``nchunk`` (a point read: the chunk is decoded
        and cached, as the reads around it will want it)."""
        return self.chunk_array(nchunk)[pos]

    def _leftover_room(self, n: int) -> np.ndarray:
        """The leftover buffer, holding at least ``n <= chunklen`` items (a
        fixed-size carray's always holds ``chunklen``)."""
        return self.leftover

    def copy_for_view(self):
        """An engine sharing these chunks, with its own leftover copy and cache,
        and a sequence of chunks of its own: a chunk one of them completes,
        replaces or trims is not the other's."""
        out = type(self).__new__(type(self))
        out.__dict__.update(self.__dict__)
        out.chunks = copy_chunks(self.chunks)
        out._leftover = self.leftover.copy()
        out._init_cache(self.cache_budget)
        return out

    # ------------------------------------------------------------ cache

    def _init_cache(self, budget: int) -> None:
        """An empty cache of at most ``budget`` bytes of decoded chunks."""
        self._cache = OrderedDict()          # nchunk -> (read-only array, bytes it counts)
        self._cache_nbytes = 0
        self._cache_lock = threading.Lock()  # several threads may read one carray
        self.cache_budget = budget

    @property
    def cache(self):
        """The cached decoded chunks, ``{nchunk: (read-only array, bytes it
        counts)}``, least recently used first (for inspection)."""
        return self._cache

    @property
    def cache_nbytes(self) -> int:
        """Bytes the cached chunks count against :attr:`cache_budget`."""
        return self._cache_nbytes

    def set_cache_budget(self, budget: int) -> None:
        """Keep at most ``budget`` bytes of decoded chunks (evicting at once)."""
        self.cache_budget = budget
        with self._cache_lock:
            self._evict()

    def _evict(self) -> None:
        while self._cache_nbytes > self.cache_budget and self._cache:
            _, (_, size) = self._cache.popitem(last=False)
            self._cache_nbytes -= size

    def drop_cache(self, nchunk=None) -> None:
        """Forget cached chunk ``nchunk`` (all of them when None)."""
        with self._cache_lock:
            if nchunk is None:
                self._cache.clear()
                self._cache_nbytes = 0
            elif nchunk in self._cache:
                self._cache_nbytes -= self._cache.pop(nchunk)[1]

    def free_cachemem(self) -> None:
        """Release cached decoded chunks."""
        self.drop_cache()
        self.chunks.free_cachemem()

    def cached(self, nchunk: int):
        """Decoded chunk ``nchunk`` from the cache, or None."""
        if nchunk not in self._cache:       # (a dict lookup is atomic: no lock for a miss)
            return None
        with self._cache_lock:
            found = self._cache.get(nchunk)
            if found is None:
                return None
            self._cache.move_to_end(nchunk)
            return found[0]

    def _remember(self, nchunk: int, data: np.ndarray, size: int) -> None:
        """Keep decoded chunk ``nchunk`` (made read-only), counted as ``size``
        bytes, unless it is larger than the whole budget."""
        data.flags.writeable = False
        if size > self.cache_budget:
            return
        with self._cache_lock:
            if nchunk not in self._cache:
                self._cache[nchunk] = (data, size)
                self._cache_nbytes += size
            self._evict()

    # ------------------------------------------------------------ writing

    def prepare(self, items):
        """``items`` as a write stores them, checked before anything changes
        (the categorical engine turns them into codes)."""
        return items

    def _prepare_edit(self) -> None:
        """Called before a write changes chunks or the leftover."""
        if self.stats is not None:
            self.stats.edited = True

    def _leftover_edited(self) -> None:
        """Called after a write changed the leftover in place."""

    def _leftover_assigned(self) -> None:
        """Items of the leftover were assigned (not appended) in place."""
        if self.stats is not None:
            self.stats.left_edited = True
        self._leftover_edited()

    def _writable_chunk(self, nchunk: int) -> np.ndarray:
        """A writable copy of the decoded full chunk ``nchunk``."""
        raise NotImplementedError

    def append(self, arr: np.ndarray) -> None:
        """Append items (already of the atom's dtype and shape): they fill the
        leftover, full chunks are encoded (``push_chunk``, ``push_chunks``),
        and the rest become the new leftover."""
        cl = self.chunklen
        n = len(arr)
        if n == 0:
            return
        self._prepare_edit()
        pos = 0
        if self.nleft:
            take = min(cl - self.nleft, n)
            leftover = self._leftover_room(self.nleft + take)
            leftover[self.nleft:self.nleft + take] = arr[:take]
            self.nleft += take
            pos = take
            if self.nleft == cl:
                self.push_chunk(leftover)
                self.nleft = 0
        nfull = (n - pos) // cl
        if nfull:
            self.push_chunks(arr, range(pos, pos + nfull * cl, cl))
            pos += nfull * cl
        rest = n - pos
        if rest:
            self._leftover_room(rest)[:rest] = arr[pos:]
            self.nleft = rest
        self._leftover_edited()

    def set_slice(self, start: int, stop: int, step: int, vals: np.ndarray) -> None:
        """Write ``vals`` at positions ``range(start, stop, step)`` (step > 0)."""
        cl = self.chunklen
        nfull = len(self.chunks)
        n = len(vals)
        self._prepare_edit()
        first = start // cl
        last = (start + (n - 1) * step) // cl
        done = 0
        for nchunk in range(first, last + 1):
            base = nchunk * cl
            lo = max(start, base)
            if (lo - start) % step:
                lo += step - (lo - start) % step
            hi = min(stop, base + cl)
            if lo >= hi:
                continue
            count = len(range(lo, hi, step))
            part = vals[done:done + count]
            done += count
            if nchunk == nfull:
                self.leftover[lo - base:hi - base:step] = part
                self._leftover_assigned()
                continue
            if step == 1 and lo == base and hi == base + cl:
                data = part
            else:
                data = self._writable_chunk(nchunk)
                data[lo - base:hi - base:step] = part
            self.replace_chunk(nchunk, data)

    def set_positions(self, idx: np.ndarray, vals: np.ndarray) -> None:
        """Write ``vals[i]`` at position ``idx[i]`` (int64, in range)."""
        cl = self.chunklen
        nfull = len(self.chunks)
        self._prepare_edit()
        for c, sel in self._by_chunk(idx).items():
            local = idx[sel] - c * cl
            if c == nfull:
                self.leftover[local] = vals[sel]
                self._leftover_assigned()
            else:
                data = self._writable_chunk(c)
                data[local] = vals[sel]
                self.replace_chunk(c, data)
